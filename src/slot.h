/* SPDX-License-Identifier: BSD-3-Clause */
/* slot.h -- Redis Cluster hash slots: CRC16 of the key, or of the text
 * between the first '{' and the first '}' after it when that text is not
 * empty (the hash tag), modulo 16384. */
#ifndef HILOCK_SLOT_H
#define HILOCK_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SLOT_COUNT 16384

/* CRC16-CCITT (XMODEM), the checksum Redis Cluster uses. */
uint16_t slot_crc16(const char *s, size_t len);
/* The slot of the key a followed by b (either may be empty). */
unsigned slot_of2(const char *a, size_t alen, const char *b, size_t blen);
/* Whether s has a hash tag: a '{' with a '}' after it and something in
 * between. In a key a + b, a tag inside a wins over anything in b. */
int slot_has_tag(const char *s, size_t len);

#endif
