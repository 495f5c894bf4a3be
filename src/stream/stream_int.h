/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Inside the stream engines, on three floors: stream.c holds the public
 * API (and the rule that a cancel asked for from a callback runs from the
 * loop, off the caller's stack); client.c and server.c are the two
 * engines; lifecycle.c, below both, the lifecycle they call back into
 * (the state, the finish, done() from the loop, a test's row, the
 * settings report).  Each engine keeps its own state in its own struct around
 * struct evr_stream (evr__container_of, as the transports do around
 * struct evr_xport), so that neither can touch the other's by accident.
 */
#ifndef EVR_SRC_STREAM_INT_H
#define EVR_SRC_STREAM_INT_H

#include <ev.h>
#include <net/if.h>
#include <netinet/in.h>

#include "../loop/loop.h"
#include "../loop/resolve.h"
#include "evrdma/stream.h"
#include "plan.h"
#include "session/session.h"
#include "transport.h"

/*
 * The engine's lifecycle.  evr__stream_set_state() is the only writer of
 * evr_stream.state, and traces every transition ("client: RUNNING ->
 * FINISHING").
 *
 *   IDLE ---------> RUNNING ---------------------> FINISHING --> FINISHED
 *     |               |    \                         ^     ^
 *     |               |     '------> FAILING --------'     |
 *     |               v                 ^                  |
 *     '----------> CANCELLING ----------'------------------'
 *
 * and when the start has a name to look up:
 *
 *   IDLE --> RESOLVING --> RUNNING (as above)
 *                |   '---> FINISHING (the name does not resolve, or the
 *                |                    engine's own start fails then)
 *                '-------> CANCELLING
 *
 * A start that fails leaves the engine IDLE (no done() follows).  A host
 * or bind address that is a name is looked up first, on the loop
 * (RESOLVING, src/loop/resolve.c): the start returns 0 at once, and the
 * engine's own start runs with the numeric address when the answer
 * comes; a name that does not resolve, or a start that fails then, ends
 * the run through done() (FINISHING).  Only a
 * client fails as a whole (FAILING: its first failed connection ends the
 * run; a cancelled client gets there too, through the connection its
 * cancel failed first); a server drops failed connections and serves on.
 * Callbacks other than progress() reach the host only while RUNNING: "no
 * result, info or conn_failed after a cancel" (stream.h) is this rule.
 */
#define EVR_STREAM_STATES(X) \
	X(IDLE)        /* created; not started, or its start failed */ \
	X(RESOLVING)   /* started: looking its names up (no callbacks) */ \
	X(RUNNING)     /* connecting and testing / listening and serving */ \
	X(FAILING)     /* client: a connection failed; cancel the rest */ \
	X(CANCELLING)  /* evr_stream_cancel() was called */ \
	X(FINISHING)   /* outcome known; the transport still closes */ \
	X(FINISHED)    /* done() is due from the loop, or delivered */

enum evr_stream_state {
#define X(s) EVR_STREAM_##s,
	EVR_STREAM_STATES(X)
#undef X
	EVR_STREAM__COUNT
};

const char *evr__stream_state_name(enum evr_stream_state s);

struct evr_stream;

/* What stream.c asks of an engine (client.c, server.c). */
struct evr__stream_engine {
	const char *name;                 /* "client", "server": the trace's */
	const struct evr_xport_cbs *xcbs; /* its transport's upcalls */
	/* Start (the transport exists): 0, the engine RUNNING, or a
	 * negative code with f filled, the engine still IDLE. */
	int (*start)(struct evr_stream *st, struct evr_failure *f);
	/* Cancel every connection; the engine finishes once none is left.
	 * Called from the loop or from evr_stream_cancel(), never once the
	 * engine is FINISHING. */
	void (*cancel)(struct evr_stream *st);
	/* Free what the engine holds at once (sessions first: their closes
	 * may linger in the transport, which is freed after), but not the
	 * engine's struct itself. */
	void (*release)(struct evr_stream *st);
};

struct evr_stream {
	const struct evr__stream_engine *eng;
	enum evr_stream_state state;
	struct evr_loop *loop;
	struct evr_stream_opts o;
	char *host, *bind_addr, *port;
	struct evr_stream_cbs cbs;
	void *ud;
	struct evr_plan plan;
	unsigned next_id;         /* connection ids, from 1 */
	struct evr_xport *xp;     /* one row of stream.c's table */
	/* done()'s arguments, set when FINISHING */
	int fin_status;
	struct evr_failure fin_fail;
	const struct evr_failure *fin_f;  /* &fin_fail or NULL */
	int in_child;             /* server: a -T f child's copy (server.c) */
	/* Embedding rules (stream.h): done() comes from done_w, at the top
	 * of a loop callback, so the host may free the engine in it; a
	 * cancel asked for inside one of our callbacks (cb_depth > 0) runs
	 * from cancel_w once the engine is off the stack. */
	ev_timer done_w, cancel_w;
	unsigned cb_depth;
	/* RESOLVING: the lookups of o.host and o.bind_addr, and the
	 * numeric addresses that replace the names in o once found */
	struct evr_lookup *lk[2];
	char num[2][INET6_ADDRSTRLEN + IF_NAMESIZE + 1];
	/* every address each name has (n 0: not a name looked up); num[i]
	 * is the first's.  A client tries the host's in turn, each with
	 * the bind name's first address of its family (client.c). */
	struct evr__addrs found[2];
};

/* The engines' constructors: a zeroed engine of that kind with its own
 * options applied (evr_stream_new() does the rest), or NULL. */
struct evr_stream *evr__client_new(const struct evr_stream_opts *o);
struct evr_stream *evr__server_new(const struct evr_stream_opts *o);

/* lifecycle.c, below both engines: */
void evr__stream_set_state(struct evr_stream *st, enum evr_stream_state to);

/* Callbacks reach the host only while RUNNING (see above). */
static inline int evr__stream_reporting(const struct evr_stream *st)
{
	return st->state == EVR_STREAM_RUNNING;
}

/* FINISHING or FINISHED: the outcome is decided, nothing changes it. */
static inline int evr__stream_ending(const struct evr_stream *st)
{
	return st->state == EVR_STREAM_FINISHING ||
	       st->state == EVR_STREAM_FINISHED;
}

/*
 * Call the host's cbs.cb(ud, ...) if it set one and the engine is
 * RUNNING, counted in cb_depth: a cancel from inside the callback then
 * waits for the loop, since a session or the transport is below us on the
 * stack.
 */
#define EVR__STREAM_EMIT(st, cb, ...) \
	do { \
		if (evr__stream_reporting(st)) \
			EVR__UPCALL((st)->cb_depth, (st)->cbs.cb, (st)->ud, \
				    __VA_ARGS__); \
	} while (0)

/* The run's outcome: FINISHING, then FINISHED (done() from the loop) once
 * the transport has no close left.  Nothing once the engine is ending. */
void evr__stream_finish(struct evr_stream *st, int status,
			const struct evr_failure *f);
/* evr_xport_cbs.drained, for both engines. */
void evr__stream_drained(void *ud);
/* done_w's callback (evr_stream_new() arms it): done() from the loop. */
void evr__stream_done_cb(struct ev_loop *l, ev_timer *w, int revents);

/* The row of one finished test on session s. */
void evr__stream_result_init(struct evr_result *r, const struct evr_sess *s,
			     const struct evr_test *t, uint64_t elapsed_ns);
/* --settings: EVR_INFO_SETTINGS for a connection set up, if the transport
 * can tell. */
void evr__stream_settings(struct evr_stream *st, unsigned conn_id,
			  struct evr_conn *c);

#endif
