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

/* Zero the first n bytes of p, n a constant, with 16-byte stores (for
 * the request and fan-out records a pair reuses). A plain memset of a
 * few hundred bytes, or a loop of stores of a zero the compiler can see,
 * becomes a string instruction (`rep stos`), which costs about four
 * times as much at these sizes; the zero is hidden from the compiler so
 * that the stores stay stores. */
static inline void hot_zero(void *p, size_t n)
{
#if defined(__GNUC__) && defined(__SSE2__)
    typedef unsigned char hot_v16
        __attribute__((vector_size(16), aligned(1), may_alias));
    if (n >= 16) {
        hot_v16 zero = {0};
        unsigned char *c = p;
        size_t i;
        __asm__("" : "+x"(zero));
        for (i = 0; i + 16 <= n; i += 16)
            *(hot_v16 *)(c + i) = zero;
        if (i < n) /* the last 16 bytes, overlapping */
            *(hot_v16 *)(c + n - 16) = zero;
        return;
    }
#endif
    memset(p, 0, n);
}

#endif
