/* SPDX-License-Identifier: BSD-3-Clause */
/* multi.h -- MultiLock: several names of one owner, held all or none (the
 * hilock_multi_* calls of the public header live in multi.c). */
#ifndef HILOCK_MULTI_H
#define HILOCK_MULTI_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Set up after lock_engine_init (it wraps the engine's hooks). Returns 0
 * or HILOCK_ENOMEM. */
int multi_init(struct engine *eng);
/* hilock_multi_new on eng. Returns 0, HILOCK_EINVAL or HILOCK_ENOMEM. */
int multi_new(struct engine *eng, const char *const *names,
              const size_t *lens, size_t k, uint64_t owner_tag,
              struct hilock_multi **out);
/* Teardown: before the nodes close, end every pending call that has no
 * operation in flight; after, free every MultiLock. */
void multi_cancel_all(struct engine *eng);
void multi_free_all(struct engine *eng);

#endif
