/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A responder: an rstream server engine on the daemon's loop, so that the
 * host answers its peers' probes (a mesh agent both probes and answers).
 * Its limits are the engine's server limits; its connections are counted
 * for /metrics: served, active, dropped by reason.
 */
#ifndef EVR_PROBED_RESPONDER_H
#define EVR_PROBED_RESPONDER_H

#include <ev.h>
#include <stdint.h>

#include "evrdma/loop.h"
#include "evrdma/stream.h"
#include "pconf.h"

/* Why a responder dropped a connection: the "reason" label, as one list:
 * X(RR_NAME, its label value, the failure codes of a dropped connection
 * it comes from (reason.h: positive errno or EVR_E_*; (0): decided by
 * the facts of the failure, resp_reason_of())).  Label values and their
 * order are the exposition's: only ever added. */
#define RESP_REASONS(X) \
	/* turned away: max_conns being served */ \
	X(CONNS, "conns", (0)) \
	/* its memory budget (max_memory) was taken */ \
	X(BUDGET, "budget", (0)) \
	/* out of file descriptors at accept */ \
	X(FDS, "fds", (EMFILE, ENFILE)) \
	/* a plan refused for another reason */ \
	X(REJECTED, "rejected", (EVR_E_REJECTED)) \
	X(STALL, "stall", (EVR_E_STALL)) \
	/* the peer closed in the middle of a test */ \
	X(EOF, "eof", (EVR_E_EOF)) \
	X(RESET, "reset", (ECONNRESET, EPIPE, ECONNABORTED)) \
	X(VERIFY, "verify", (EVR_E_VERIFY)) \
	/* malformed negotiation, more data than planned */ \
	X(PROTO, "protocol", (EVR_E_PROTO, EVR_E_EXTRA)) \
	X(ERROR, "error", (0)) \
	/* this host's RDMA device went away, or its port went down */ \
	X(DEVGONE, "devgone", (EVR_E_DEVGONE)) \
	X(PORTDOWN, "portdown", (EVR_E_PORTDOWN))

enum resp_reason {
#define RESP__R_ENUM(e, name, codes) RR_##e,
	RESP_REASONS(RESP__R_ENUM)
#undef RESP__R_ENUM
	RR_MAX
};

extern const char *const resp_reason_names[RR_MAX];

/* The reason a server dropped a connection with f, or -1 for a report
 * that is not a drop of its own (the once-per-episode report of turned
 * away connections, counted one by one from EVR_INFO_TURNED_AWAY). */
int resp_reason_of(const struct evr_failure *f);

struct responder_stats {
	uint64_t served;            /* connections accepted and served */
	uint64_t done;              /* of which finished well */
	uint64_t active;            /* being served now */
	uint64_t dropped[RR_MAX];
	int listening;              /* 1 while the engine listens */
};

struct responder {
	const struct responder_cfg *cfg; /* the daemon's current pconf */
	struct evr_loop *loop;
	struct ev_loop *evl;
	struct evr_stream *srv;
	struct responder_stats st;
	int failing;                /* its last start failed (logged once) */
	ev_timer retry_w;           /* a failed start is tried again */
	ev_timer reap_w;            /* frees an engine that ended itself */
	uint64_t peak_active;       /* most at once since the last trim */
	ev_timer trim_w;            /* idle again after a burst: trim */
};

/* Seconds between attempts to listen when the port is taken. */
#define RESPONDER_RETRY_S 5.0

/* A responder's limits unless its configuration sets them (max_memory,
 * max_conns): an agent's, where a server's are rstream's (1 GiB, 16384).
 * A connection's own state, beyond its buffer, is about 5 KiB. */
#define RESPONDER_MAX_MEMORY (32ull << 20)
#define RESPONDER_MAX_CONNS 1024u
/* Blocks of this size and more (connection buffers) are mapped apart
 * and unmapped when freed. */
#define RESPONDER_MMAP_MIN (128 * 1024)
/* After serving this many connections at once, down to a quarter of
 * them: the heap is trimmed (malloc_trim) RESPONDER_TRIM_S later. */
#define RESPONDER_TRIM_CONNS 16u
#define RESPONDER_TRIM_S 0.5

int responder_new(struct responder **out, struct evr_loop *loop,
		  const struct responder_cfg *cfg);
/* Listen now; on failure, log and try again every RESPONDER_RETRY_S. */
void responder_start(struct responder *r);
/* Stop listening, drop its connections, free. */
void responder_free(struct responder *r);

#endif
