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
 *
 * Everything in a header comes off the network, so nothing in it sizes
 * memory: the receiver tracks at most max_senders senders, each with a
 * window of sequence numbers of its own choosing (both from its own
 * configuration, see evr_mcast_opts), and counts what it could not track.
 */
#ifndef EVR_SRC_MC_PAYLOAD_H
#define EVR_SRC_MC_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "evrdma/mcast.h"

#define EVR_MC_HDR_LEN 24
#define EVR_MC_HDR_VERSION 1

struct evr_mc_hdr {
	uint32_t sender;
	uint32_t seq;
	uint32_t count;
};

enum {
	EVR_MC_DEC_NONE = 0,   /* no evrdma header: a foreign message */
	EVR_MC_DEC_OK = 1,
	EVR_MC_DEC_BAD = -1,   /* evrdma's magic, but malformed or out of range */
};

/* Write the header (if len allows) and a fill pattern; returns 1 if a
 * header was written. */
int evr__mc_payload_encode(uint8_t *buf, size_t len,
			   const struct evr_mc_hdr *h);
/* EVR_MC_DEC_OK and *h filled for a well-formed header (version 1,
 * count >= 1, seq < count); EVR_MC_DEC_BAD for a message that starts
 * with the magic but is shorter than the header, has another version,
 * a count of 0 or a sequence number not below its count;
 * EVR_MC_DEC_NONE for anything else. */
int evr__mc_payload_decode(const uint8_t *buf, size_t len,
			   struct evr_mc_hdr *h);

struct evr_mc_sender_stats {
	uint32_t sender;
	uint32_t count;           /* as announced in its first header */
	uint32_t highest;         /* highest sequence number received */
	uint64_t received;        /* = unique + duplicates + out_of_window */
	uint64_t unique;
	uint64_t duplicates;
	uint64_t reordered;       /* arrived after a higher sequence */
	uint64_t out_of_window;   /* window or more behind the highest */
	uint64_t *win;            /* ring: sequence s at bit s % window */
};

struct evr_mc_acct {
	struct evr_mc_sender_stats *senders;
	unsigned nsenders;
	unsigned alloc;           /* entries allocated in senders */
	unsigned max_senders;     /* tracked at most (the receiver's limit) */
	unsigned window;          /* sequence numbers per sender, 64 | window */
	unsigned last;            /* the last sender found: checked first */
	size_t bytes;             /* heap held now (table and windows) */
	uint64_t foreign;         /* messages without our header */
	uint64_t untracked;       /* from senders beyond max_senders */
	uint64_t bad;             /* malformed headers, or a count that
				   * differs from the sender's first */
};

/* window and max_senders as in evr_mcast_opts: 0 means the default,
 * values outside the limits are clamped, the window rounded up to a
 * multiple of 64 (evr__mc_window(), evr__mc_max_senders(): the values in
 * effect).  Allocates nothing. */
unsigned evr__mc_window(unsigned window);
/* A random sender id base for payload headers; the low 12 bits are left
 * for the QP index. */
uint32_t evr__mc_sender_base(void);
unsigned evr__mc_max_senders(unsigned max_senders);
void evr__mc_acct_init(struct evr_mc_acct *a, unsigned window,
		       unsigned max_senders);
void evr__mc_acct_fini(struct evr_mc_acct *a);
/* Account one received message. */
void evr__mc_acct_add(struct evr_mc_acct *a, const uint8_t *buf, size_t len);
/* Sequence numbers up to the highest received that never arrived (a
 * message later than the window is among them). */
uint64_t evr__mc_sender_lost(const struct evr_mc_sender_stats *s);
/* Announced sequence numbers above the highest received: not received
 * before the receiver stopped (sent later, never sent, or lost: a
 * receiver cannot tell which). */
uint64_t evr__mc_sender_not_received(const struct evr_mc_sender_stats *s);
/* The most heap an accounting with these limits can hold. */
size_t evr__mc_acct_max_bytes(unsigned window, unsigned max_senders);

#endif
