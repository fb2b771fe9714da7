/* SPDX-License-Identifier: BSD-3-Clause */
/* hot.h -- marking the code of the uncontended lock and release.
 *
 * A pair (acquire, reply, release, reply) runs about a hundred small
 * functions spread over thirty files. Left where they are, each shares
 * its cache lines with the cold code around it (error paths, other kinds,
 * topologies), and together with hiredis, libevent and malloc they
 * overflow the instruction cache: every pair fetched most of its code
 * again. HILOCK_HOT puts a function in the hot text section, which the
 * linker keeps in one piece, so the pair's code fits. Mark a function
 * only when a profile of a pair shows it there (see bench/README.md), and
 * most of it runs.
 *
 * HILOCK_COLD marks the other side: a function that hot code calls only on
 * a rare path (an error, a dropped connection). It goes out of the way,
 * and so do the branches of its callers that lead to it, which keeps the
 * hot functions' own code dense.
 *
 * HILOCK_OUTLINE keeps a path that is not rare, only not the common one,
 * out of a small hot function: inlined, its locals would make every call
 * save and restore registers, the common one too.
 *
 * HILOCK_INLINE is the opposite, for a short helper of a hot function
 * that a cold caller shares: left to itself the compiler may keep one
 * copy out of line, which costs the hot caller a call and cache lines
 * of its own. */
#ifndef HILOCK_HOT_H
#define HILOCK_HOT_H

#include <stddef.h>
#include <string.h>

#if defined(__GNUC__)
#define HILOCK_HOT __attribute__((hot))
#define HILOCK_COLD __attribute__((cold))
#define HILOCK_OUTLINE __attribute__((noinline))
#define HILOCK_INLINE inline __attribute__((always_inline))
#else
#define HILOCK_HOT
#define HILOCK_COLD
#define HILOCK_OUTLINE
#define HILOCK_INLINE inline
#endif

/* Zero the first n bytes of p, n a constant, in two halves: each half is
 * a few stores, where one memset of the whole takes a slower string
 * instruction (for the request and fan-out records a pair reuses). */
static inline void hot_zero(void *p, size_t n)
{
    memset(p, 0, n / 2);
    memset((char *)p + n / 2, 0, n - n / 2);
}

#endif
