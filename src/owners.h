/* owners.h -- the handles that hold a lock, by name and owner.
 *
 * Handles with the same name and owner tag on one client are one owner in
 * Redis: they share one hash field, one count and one lease. This table
 * finds a handle's holding twins, so that what one of them learns about the
 * shared hold (a new lease, its end) reaches all of them at once. Only
 * handles that hold are in it; a handle's link lives in the handle. */
#ifndef HILOCK_OWNERS_H
#define HILOCK_OWNERS_H

#include <stddef.h>
#include <stdint.h>

struct hilock_lock;

struct owner_table {
    struct hilock_lock **buckets;
    size_t nbuckets; /* power of two, or 0 before the first insert */
    size_t count;
};

void owners_init(struct owner_table *t);
void owners_free(struct owner_table *t);
/* Enter a handle that now holds (no-op when it is in already). */
void owners_add(struct owner_table *t, struct hilock_lock *lock);
/* Take a handle out (no-op when it is not in). */
void owners_remove(struct owner_table *t, struct hilock_lock *lock);
/* The first holding handle with lock's name and owner, lock itself
 * included, or NULL; owners_next() gives the one after h. */
struct hilock_lock *owners_first(const struct owner_table *t,
                                 const struct hilock_lock *lock);
struct hilock_lock *owners_next(const struct hilock_lock *h);

#endif
