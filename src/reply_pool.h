/* SPDX-License-Identifier: BSD-3-Clause */
/* reply_pool.h -- the replies a command connection sees most, built without
 * allocating. */
#ifndef HILOCK_REPLY_POOL_H
#define HILOCK_REPLY_POOL_H

#include <stddef.h>

struct redisReadTask;

/* Each returns a reply of the pool, or NULL when the pool has none for it
 * (the caller then has hiredis build one). Only whole replies that a
 * callback waits for come from the pool, and the integer, nil and status
 * elements of the pool's arrays: hiredis frees any other element with
 * freeReplyObject, and takes pub/sub replies apart. A reply of the pool is
 * never written, and is released by reply_pool_free. */
void *reply_pool_status(const char *s, size_t len);
void *reply_pool_integer(long long v);
void *reply_pool_nil(void);
/* A whole array of n elements, all NULL until the reader links them. */
void *reply_pool_array(size_t n);
/* Element t (an integer v, a nil, or a status s/len) of a pool array,
 * linked into it; NULL when t's array is not the pool's. */
void *reply_pool_element(const struct redisReadTask *t, int type,
                         long long v, const char *s, size_t len);

/* hiredis's freeObject for a reader that builds through the pool: a reply
 * of the pool goes back to it (the elements hiredis built for one of its
 * arrays to freeReplyObject), any other reply to freeReplyObject. */
void reply_pool_free(void *reply);

#endif
