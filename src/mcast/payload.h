/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey payloads.  Upstream sends uninitialised buffers and its receivers
 * never look at them, so evrdma's senders may carry a small header that
 * lets evrdma receivers count loss, duplicates and reordering per sender:
 *
 *   0  "EVMK"            magic
 *   4  u8 version (1), u8 flags, u16 reserved
 *   8  u32 sender id     random per process, plus the QP index
 *  12  u32 sequence      0 .. count-1
 *  16  u32 count         messages this sender sends
 *  20  u32 reserved
 *
 * Big-endian.  Messages shorter than the header carry none.
 */
#ifndef EVR_SRC_MC_PAYLOAD_H
#define EVR_SRC_MC_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#define EVR_MC_HDR_LEN 24
#define EVR_MC_MAX_SENDERS 256
/* The largest announced count a receiver keeps a duplicate bitmap for
 * (12.5 MB): mckey -C's limit.  A sender announcing more (the library
 * allows any count) is accounted without one, as one announcing none. */
#define EVR_MC_MAX_BITMAP_COUNT 100000000u

struct evr_mc_hdr {
	uint32_t sender;
	uint32_t seq;
	uint32_t count;
};

/* Write the header (if len allows) and a fill pattern; returns 1 if a
 * header was written. */
int evr__mc_payload_encode(uint8_t *buf, size_t len,
			   const struct evr_mc_hdr *h);
/* 1 and *h filled if buf carries a valid header, else 0. */
int evr__mc_payload_decode(const uint8_t *buf, size_t len,
			   struct evr_mc_hdr *h);

struct evr_mc_sender_stats {
	uint32_t sender;
	uint32_t count;           /* as announced by the sender */
	uint64_t received;        /* every arrival, duplicates included */
	uint64_t unique;
	uint64_t duplicates;
	uint64_t reordered;       /* arrived after a higher sequence */
	uint32_t highest;
	int any;
	uint8_t *seen;            /* bitmap of count bits, or NULL */
};

struct evr_mc_acct {
	struct evr_mc_sender_stats senders[EVR_MC_MAX_SENDERS];
	unsigned nsenders;
	uint64_t foreign;         /* messages without our header */
	uint64_t overflow;        /* from senders beyond the table */
	uint64_t bad;             /* headers with seq >= count */
};

void evr__mc_acct_init(struct evr_mc_acct *a);
void evr__mc_acct_fini(struct evr_mc_acct *a);
/* Account one received message. */
void evr__mc_acct_add(struct evr_mc_acct *a, const uint8_t *buf, size_t len);
/* Messages a sender announced but that never arrived. */
uint64_t evr__mc_sender_lost(const struct evr_mc_sender_stats *s);

#endif
