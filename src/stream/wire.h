/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What travels on a stream connection besides the test data: upstream's
 * 16-byte sync message and verification pattern, and evrdma's plan
 * negotiation, which rides on the first sync message (see rstream.1,
 * "Plan negotiation"):
 *
 *   client -> server  HELLO (16 bytes, in place of the first sync)
 *   server -> client  ACK   (16 bytes) -- an upstream server sends its own
 *                     16 bytes instead, and the exchange counts as the sync
 *   client -> server  PLAN header (16) + one 16-byte entry per test
 *                     header: "EVPL", u16 version, u16 flags, u16 ntests,
 *                     u16 conn_index, u16 conn_total, u8 pattern send
 *                     counter, u8 pattern receive counter
 *                     entry: u32 size, u32 count, u32 iters, u8 kind,
 *                     u8 flags (EVR_TEST_F_*; 0 before them), 0 0
 *   server -> client  PLAN reply (16): accepted, or why not
 *
 * All integers are big-endian.
 *
 * Duration mode (rstream -D): the header says version 2 and carries
 * EVR_PLAN_F_DURATION; each entry's iters is then only an upper bound.
 * The client's first transfer of every iteration starts with a mark byte,
 * EVR_ITER_MORE or EVR_ITER_LAST, written over the first data byte (data
 * is otherwise unchecked without -T v, and -D excludes -T v).  The server
 * reads it on the first transfer of each iteration; after echoing an
 * iteration marked LAST, both sides end the test as if its count were
 * reached, and the next test begins with the usual sync.  A server that
 * sets EVR_REPLY_F_END in its reply's features (bytes 12-15, zero from
 * servers before it, and ignored by clients before it) also takes
 * EVR_ITER_END in place of an iteration's mark: that transfer is no
 * iteration, the server reads it, does not echo it, and ends the test
 * there; such a client ends a test at the first iteration boundary past
 * the duration and marks LAST only the plan's cap.  Nothing else
 * changes, and without -D the wire is version 1, byte for byte as before.
 *
 * Hold stamps (rstream --split, the daemon's latency probes): a client
 * that wants a round trip told in its parts sets EVR_TEST_F_HOLD in an
 * entry's byte 13 (zero before, and ignored by servers before it).  A
 * server that sets EVR_REPLY_F_HOLD in its reply's features then writes,
 * over the first EVR_HOLD_LEN bytes of the last echo transfer of every
 * iteration of that test, how long it held the request: from the arrival
 * of the request's last bytes (the kernel's receive timestamp where the
 * transport has one) to that transfer's send, in nanoseconds, u64.  Only
 * for tests of at least EVR_HOLD_LEN bytes and without verification (a
 * verifying client checks every byte); a client of a server without the
 * feature, or an old client, reads the echo as before.
 * A version-1 server rejects the plan (unsupported version); an upstream
 * server never sees it (the client gives up at its reply to HELLO).
 */
#ifndef EVR_SRC_WIRE_H
#define EVR_SRC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define EVR_SYNC_LEN 16
#define EVR_PLAN_HDR_LEN 16
#define EVR_PLAN_ENTRY_LEN 16
#define EVR_PLAN_REPLY_LEN 16
#define EVR_WIRE_VERSION 1
#define EVR_WIRE_VERSION_DURATION 2

#define EVR_PLAN_F_VERIFY 0x0001
#define EVR_PLAN_F_DURATION 0x0002  /* version 2 only */
#define EVR_PLAN_F_KNOWN (EVR_PLAN_F_VERIFY | EVR_PLAN_F_DURATION)

#define EVR_ITER_MORE 0x4d          /* 'M': another iteration follows */
#define EVR_ITER_LAST 0x4c          /* 'L': the test's last iteration */
#define EVR_ITER_END 0x45           /* 'E': no iteration; the test ends
				     * (EVR_REPLY_F_END servers only) */

/* The plan reply's features (bytes 12-15): what the server takes. */
#define EVR_REPLY_F_END 0x00000001u /* EVR_ITER_END in duration mode */
#define EVR_REPLY_F_HOLD 0x00000002u /* hold stamps (EVR_TEST_F_HOLD) */
#define EVR_HOLD_LEN 8

/* The plan reply's status: 0, or why the server refused (the public
 * EVR_REJECTS list, with the wire's values).  BUDGET: the server's
 * memory budget is taken (its --max-memory), limit: bytes left.  CONNS:
 * the server is at its connection limit (its --max-conns), sent as the
 * 16-byte BUSY message in place of the ACK. */
enum evr_plan_status {
	EVR_PLAN_OK = 0,
#define EVR__PLAN_ENUM(code, value, text) EVR_PLAN_E_##code = value,
	EVR_REJECTS(EVR__PLAN_ENUM)
#undef EVR__PLAN_ENUM
	EVR_PLAN_E_MAX
};

struct evr_plan_hdr {
	uint16_t version;
	uint16_t flags;
	uint16_t ntests;
	uint16_t conn_index;      /* this connection's place in the run */
	uint16_t conn_total;
	/* With EVR_PLAN_F_VERIFY: where the client's pattern counters stand
	 * (they run on across its connections). */
	uint8_t pat_send, pat_recv;
};

extern const uint8_t evr__hello_msg[EVR_SYNC_LEN];
extern const uint8_t evr__ack_msg[EVR_SYNC_LEN];
/* A server at its connection limit sends this at once and closes. */
extern const uint8_t evr__busy_msg[EVR_SYNC_LEN];

int evr__is_hello(const uint8_t *b);
int evr__is_ack(const uint8_t *b);
int evr__is_busy(const uint8_t *b);

void evr__plan_hdr_encode(uint8_t *out, const struct evr_plan_hdr *h);
/* Returns 0, or an enum evr_plan_status (or -1 when the magic is wrong). */
int evr__plan_hdr_decode(const uint8_t *in, struct evr_plan_hdr *h);
void evr__plan_entry_encode(uint8_t *out, const struct evr_test *t);
/* Decodes and checks one entry; fills t with its name.  Returns
 * EVR_PLAN_OK or the reason it is unacceptable. */
int evr__plan_entry_decode(const uint8_t *in, struct evr_test *t,
			   uint32_t max_size);
void evr__plan_reply_encode(uint8_t *out, int status, uint32_t limit);
/* ... and the features this end takes (EVR_REPLY_F_*); 0 from a server
 * before them. */
void evr__plan_reply_set_features(uint8_t *out, uint32_t features);
uint32_t evr__plan_reply_features(const uint8_t *in);
/* Returns the status (>= 0), or -1 when this is not a plan reply. */
int evr__plan_reply_decode(const uint8_t *in, uint32_t *limit);
const char *evr__plan_status_str(int status);

/*
 * Upstream's verification pattern: every byte sent is the next value of a
 * uint8_t counter that runs on across messages, tests and connections.
 */
struct evr_pattern {
	uint8_t next;
	uint64_t total;            /* bytes checked so far, for the report */
};

void evr__pattern_fill(struct evr_pattern *p, uint8_t *buf, size_t len);
/* 0 if buf carries the pattern; else -1 and *bad = stream offset. */
int evr__pattern_check(struct evr_pattern *p, const uint8_t *buf, size_t len,
		       uint64_t *bad);
/* Does a 16-byte sync carry the pattern (consecutive bytes)?  If so,
 * *first is its first byte: where the sender's counter stood. */
int evr__pattern_detect(const uint8_t *b, size_t len, uint8_t *first);

#endif
