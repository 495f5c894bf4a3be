/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Big-endian field access for every wire format (rsocket private data,
 * the negotiation messages, mckey's payload header). */
#ifndef EVR_SRC_BYTES_H
#define EVR_SRC_BYTES_H

#include <stdint.h>

static inline void evr__put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void evr__put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void evr__put64(uint8_t *p, uint64_t v)
{
	evr__put32(p, (uint32_t)(v >> 32));
	evr__put32(p + 4, (uint32_t)v);
}

static inline uint16_t evr__get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t evr__get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t evr__get64(const uint8_t *p)
{
	return (uint64_t)evr__get32(p) << 32 | evr__get32(p + 4);
}

#endif
