#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kinds_apart.py -- each handle type takes only its own calls: a lock's
renew, queries or on_lost on a semaphore or a permit, a lock's acquire on a
MultiLock, or a callback of another shape, must not compile (as strict C11
with -Werror). The same calls on the right types must compile, so that a
refusal is the type's doing, not a typo's.

Usage: kinds_apart.py CC INCLUDE_DIR
"""
import os
import subprocess
import sys
import tempfile

# A callback of each handle type, named after it, that does nothing.
CALLBACKS = "".join(
    "static void %s_cb(struct hilock_%s *h, int s,\n"
    "                  const struct hilock_result *r, void *a)\n"
    "{ (void)h, (void)s, (void)r, (void)a; }\n" % (name, kind)
    for name, kind in (("lock", "lock"), ("sem", "semaphore"),
                       ("permit", "permit"), ("multi", "multi")))

HEAD = """#include <stddef.h>
#include <hilock/hilock.h>
""" + CALLBACKS + """int f(struct hilock_lock *lock, struct hilock_semaphore *sem,
      struct hilock_permit *permit, struct hilock_multi *multi);
int f(struct hilock_lock *lock, struct hilock_semaphore *sem,
      struct hilock_permit *permit, struct hilock_multi *multi)
{
    (void)lock, (void)sem, (void)permit, (void)multi;
    (void)lock_cb, (void)sem_cb, (void)permit_cb, (void)multi_cb;
    return %s;
}
int main(void) { return 0; }
"""

# (what, a call that must not compile, the right call that must)
CASES = [
    ("a lock's renew on a semaphore",
     "hilock_lock_renew(sem, 0, lock_cb, NULL)",
     "hilock_lock_renew(lock, 0, lock_cb, NULL)"),
    ("a lock's query on a semaphore",
     "hilock_lock_query_held(sem, lock_cb, NULL)",
     "hilock_lock_query_held(lock, lock_cb, NULL)"),
    ("a lock's on_lost on a semaphore",
     "hilock_lock_on_lost(sem, lock_cb, NULL)",
     "hilock_lock_on_lost(lock, lock_cb, NULL)"),
    ("a lock's query on a permit",
     "hilock_lock_query_ttl(permit, lock_cb, NULL)",
     "hilock_permit_available(permit, permit_cb, NULL)"),
    ("a lock's token of a permit",
     "(int)hilock_lock_token(permit)",
     "hilock_permit_held(permit)"),
    ("a lock's guarded call on a semaphore",
     "hilock_lock_guarded(sem, NULL, 0, 0, NULL, NULL)",
     "hilock_lock_guarded(lock, NULL, 0, 0, NULL, NULL)"),
    ("a lock's acquire on a MultiLock",
     "hilock_lock_acquire(multi, 0, 0, lock_cb, NULL)",
     "hilock_multi_acquire(multi, 0, 0, multi_cb, NULL)"),
    ("a lock's callback for a semaphore",
     "hilock_semaphore_acquire(sem, 1, 0, lock_cb, NULL)",
     "hilock_semaphore_acquire(sem, 1, 0, sem_cb, NULL)"),
    ("a semaphore's callback for a permit",
     "hilock_permit_release(permit, sem_cb, NULL)",
     "hilock_permit_release(permit, permit_cb, NULL)"),
]


def compiles(cc, inc, expr, tmp):
    src = os.path.join(tmp, "k.c")
    with open(src, "w") as f:
        f.write(HEAD % expr)
    r = subprocess.run([cc, "-std=c11", "-pedantic-errors", "-Wall",
                        "-Wextra", "-Werror", "-fsyntax-only", "-I", inc,
                        src], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def main():
    cc, inc = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, wrong, right in CASES:
            ok, err = compiles(cc, inc, right, tmp)
            if not ok:
                print(f"FAIL {what}: the right call does not compile: {right}"
                      f"\n{err}")
                failed += 1
            ok, _ = compiles(cc, inc, wrong, tmp)
            if ok:
                print(f"FAIL {what}: compiles: {wrong}")
                failed += 1
            else:
                print(f"ok   {what}: refused at compile time")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
