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

/* Why a responder dropped a connection: the "reason" label. */
enum resp_reason {
	RR_CONNS = 0,   /* turned away: max_conns being served */
	RR_BUDGET,      /* its memory budget (max_memory) was taken */
	RR_FDS,         /* out of file descriptors at accept */
	RR_REJECTED,    /* a plan refused for another reason */
	RR_STALL,       /* no progress within the stall timeout */
	RR_EOF,         /* the peer closed in the middle of a test */
	RR_RESET,       /* connection reset */
	RR_VERIFY,      /* data verification (-T v) */
	RR_PROTO,       /* malformed negotiation, more data than planned */
	RR_ERROR,       /* anything else */
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
};

/* Seconds between attempts to listen when the port is taken. */
#define RESPONDER_RETRY_S 5.0

int responder_new(struct responder **out, struct evr_loop *loop,
		  const struct responder_cfg *cfg);
/* Listen now; on failure, log and try again every RESPONDER_RETRY_S. */
void responder_start(struct responder *r);
/* Stop listening, drop its connections, free. */
void responder_free(struct responder *r);

#endif
