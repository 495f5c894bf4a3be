/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-connection ping-pong state machine.  One function takes an event
 * and moves the machine on; the I/O mode only decides how the driver waits
 * between two calls (idle retry, fd readiness, or a blocking call).
 */
#ifndef EVR_SRC_SESSION_H
#define EVR_SRC_SESSION_H

#include <ev.h>
#include <stdint.h>

#include "../../loop/loop.h"
#include "evrdma/stream.h"
#include "../latstats.h"
#include "../latsplit.h"
#include "../plan.h"
#include "poll.h"
#include "sched.h"
#include "../transport.h"
#include "../wire.h"

#define EVR_SESS_STATES(X) \
	X(CONNECTING)    /* waiting for the transport to connect */ \
	X(HELLO_SEND)    /* client: HELLO in place of the first sync */ \
	X(HELLO_RECV)    /* client: ACK, or an upstream server's sync */ \
	X(PLAN_SEND)     /* client: the plan of this connection */ \
	X(REPLY_RECV)    /* client: accepted or rejected */ \
	X(FIRST_RECV)    /* server: HELLO, or an upstream client's sync */ \
	X(ACK_SEND)      /* server */ \
	X(PLAN_HDR_RECV) /* server */ \
	X(PLAN_RECV)     /* server: the plan's entries */ \
	X(REPLY_SEND)    /* server */ \
	X(GATED)         /* client (EVR_SF_GATE): ready for its first \
			  * test, held until its owner opens the gate */ \
	X(SYNC_SEND)     /* the 16-byte sync before each test */ \
	X(SYNC_RECV) \
	X(DATA_SEND)     /* one transfer of the test's size */ \
	X(DATA_RECV) \
	X(PACE)          /* client, --mps: the next iteration waits for \
			  * its time */ \
	X(DRAIN)         /* server: tests done, wait for the client's close */ \
	X(DONE) \
	X(FAILED)

enum evr_sess_state {
#define X(s) EVR_SS_##s,
	EVR_SESS_STATES(X)
#undef X
	EVR_SS__COUNT
};

enum evr_sess_event {
	EVR_SE_CONNECTED,   /* the transport connected (arg: 0) */
	EVR_SE_CONN_ERROR,  /* connect failed (arg: -errno) */
	EVR_SE_READY,       /* the fd may be ready, or a retry is due */
	EVR_SE_STALL,       /* the watchdog saw no progress */
	EVR_SE_CANCEL,
	EVR_SE_FAIL,        /* the driver cannot go on (arg: -errno) */
	EVR_SE_OPEN,        /* GATED: the owner opens the gate */
};

/* What the machine waits for after an event. */
enum evr_sess_want {
	EVR_WANT_NONE = 0,  /* finished: DONE or FAILED */
	EVR_WANT_READ,
	EVR_WANT_WRITE,
	EVR_WANT_YIELD,     /* runnable, but let other watchers go first */
	EVR_WANT_CONNECT,   /* waiting for CONNECTED / CONN_ERROR */
	EVR_WANT_DETACH,    /* the owner took the connection elsewhere */
	EVR_WANT_GATE,      /* GATED: nothing moves until EVR_SE_OPEN */
	EVR_WANT_PACE,      /* PACE: nothing moves until its time
			     * (evr__sess_pace_at()) */
};

struct evr_sess;

/* What a server's connections may hold in data buffers together (its
 * --max-memory): each machine charges its own buffer here before it
 * grows it, and gives it back when it lets it go. */
struct evr_membudget {
	size_t used, max;
};

struct evr_sess_owner {
	void (*result)(struct evr_sess *s, const struct evr_test *t,
		       uint64_t elapsed_ns);
	/* Server: the client is known (negotiated, or upstream's first sync
	 * arrived).  Returning non-zero detaches the machine: it stops and
	 * detached() is called (-T f: the child runs it from here). */
	int (*decided)(struct evr_sess *s);
	void (*detached)(struct evr_sess *s);
	/* The last test of the plan has finished (before the close). */
	void (*plan_done)(struct evr_sess *s);
	/* The machine reached DONE or FAILED and has stopped its watchers;
	 * the owner may free it from here. */
	void (*finished)(struct evr_sess *s);
	/* Client, EVR_SF_GATE: the session waits at its gate, the point
	 * before its first test (GATED, until EVR_SE_OPEN): after the
	 * server accepted it and its plan, or, not negotiating, once
	 * connected.  Called once, last in the driver's turn: the owner
	 * may open every gate from here, this one's too. */
	void (*at_gate)(struct evr_sess *s);
	/* Optional: a test in progress, every interval_ms. */
	void (*progress)(struct evr_sess *s, const struct evr_progress *p);
};

/* What a session does beyond upstream's ping-pong, a bit each
 * (evr_sess.feat): asked for by the options (evr__sess_init()) or learnt
 * in the negotiation (negotiate.c). */
enum evr_sess_feat {
	EVR_SF_NEGOTIATE   = 1u << 0, /* client: it sends HELLO first */
	EVR_SF_NEGOTIATED  = 1u << 1, /* the plan went by the negotiation */
	EVR_SF_VERIFY      = 1u << 2, /* -v: patterns sent and checked */
	EVR_SF_DURATION    = 1u << 3, /* -D: each iteration is marked
				       * MORE, LAST or END (wire.h) */
	EVR_SF_END         = 1u << 4, /* client: the server takes END */
	EVR_SF_PERCENTILES = 1u << 5, /* client: --percentiles */
	EVR_SF_SPLIT       = 1u << 6, /* client: --split asked for */
	EVR_SF_HOLD        = 1u << 7, /* client: the server stamps its
				       * holds (wire.h, "hold stamps") */
	EVR_SF_GATE        = 1u << 8, /* client: its first test waits at
				       * the gate (--all-at-once: the owner
				       * opens it once all are there) */
};

/* The current operation (evr_sess.op_kind). */
enum evr_op_kind {
	EVR_OP_RECV,
	EVR_OP_SEND,
	EVR_OP_SKIP,        /* a receive whose bytes nobody reads (a
			     * client's echo without -v): consumed, not
			     * copied, where the transport can
			     * (evr_conn.can_skip) */
};

/* -D: the mark of the iteration in hand: the client's, as it sends it;
 * the server's, as it read it (wire.h). */
enum evr_it_mark {
	EVR_IT_MORE,
	EVR_IT_LAST,        /* the last: the test ends with its echo */
	EVR_IT_END,         /* the END mark's transfer: no echo, the test
			     * ends (it runs no iteration) */
};

/* --split's stamp in the test in hand (evr_sess.hold; wire.h, "hold
 * stamps"). */
enum evr_hold {
	EVR_HOLD_OFF,       /* this test's echoes carry no stamp */
	EVR_HOLD_ON,        /* they do */
	EVR_HOLD_CAPTURE,   /* client: this receive's first bytes are the
			     * stamp: copied into hold_b */
	EVR_HOLD_STAMP,     /* server: stamp before the next send */
};

/* Where the test in hand is, for the reports (evr_sess.tphase). */
enum evr_test_phase {
	EVR_TP_NONE,        /* between tests, negotiating, closing */
	EVR_TP_DATA,        /* between its sync and its end: progress */
	EVR_TP_RESULT,      /* over, its result being reported: its
			     * latency and split are valid */
};

/*
 * A session.  Its fields are grouped by the file that changes them
 * ("owner:" below); the others read them, and change them only through
 * the owner's functions (tests/e2e/owners.sh checks every assignment
 * through s).  The first ones are its owner's (client.c, server.c), which
 * names it.
 */
struct evr_sess {
	unsigned id;
	const struct evr_sess_owner *owner;
	void *owner_ud;
	/* owner: session.c (the machine) */
	enum evr_sess_state state;
	int client;
	unsigned feat;              /* enum evr_sess_feat */
	struct evr_loop *loop;
	enum evr_io_mode io;
	unsigned stall_ms;
	unsigned conn_index, conn_total; /* of the plan's series */
	unsigned side_by_side;      /* client: its -c, connections at once */
	struct evr_conn_plan plan;
	unsigned ti;                /* current test */
	uint32_t iter, xfer;
	uint8_t *buf;
	size_t bufsize;
	int buf_ext;                /* buf is the owner's (evr__sess_use_buf) */
	/* Server: a transfer moves through buf in pieces of at most chunk
	 * bytes, so a peer's plan never sizes the buffer (0: whole
	 * transfers, as the client does: its sizes are its own). */
	size_t chunk;
	uint32_t xoff;              /* bytes of the transfer before this op */
	struct evr_membudget *budget; /* NULL: unbounded */
	size_t charged;             /* what buf holds of the budget */
	uint8_t ctl[EVR_PLAN_HDR_LEN + EVR_PLAN_MAX_TESTS * EVR_PLAN_ENTRY_LEN];
	/* the current I/O operation */
	uint8_t *op_buf;
	size_t op_len, op_off;
	enum evr_op_kind op_kind;
	struct evr_pattern spat, rpat;
	uint64_t t0;
	uint64_t bytes;
	struct evr_failure fail;
	/* duration mode (-D): the client marks each iteration's first
	 * transfer MORE or LAST; the server reads the mark (see wire.h) */
	uint64_t dur_ns;            /* client: the target per test */
	enum evr_it_mark mark;
	uint64_t it_t0;             /* client: this iteration's start (with
				     * --mps, its time on the schedule) */
	/* --mps (client): the iterations' schedule, t0 + i / mps; late:
	 * those whose time came while the one before was still out, and
	 * the furthest behind one went */
	uint32_t mps;               /* 0: not paced */
	uint64_t late, late_max_ns;
	/* the driver's spin_sleeps when this test started: the test's are
	 * those since */
	uint64_t spin_sleeps0;
	/* --percentiles (client) */
	struct evr_latstats lat;
	struct evr_lat_stats lat_res; /* of the test just finished */
	/* --split: each round trip in its parts (latsplit.h), from the
	 * hold the server stamps in its echoes (wire.h, "hold stamps") */
	enum evr_hold hold;
	uint8_t hold_b[EVR_HOLD_LEN];
	uint64_t it_rt0;            /* client: the iteration's start, wall
				     * clock (ns) */
	uint64_t rx_rt;             /* server: the request's arrival */
	uint64_t rx_floor_rt;       /* server: no request came before */
	struct evr_latsplit *split; /* client: from the first stamped test */
	/* progress reports */
	unsigned interval_ms;
	enum evr_test_phase tphase;
	uint64_t test_bytes0, prog_bytes, prog_ns;
	ev_timer prog_w;
	/* owner: negotiate.c (the negotiation, a sub-machine) */
	int reply_status;           /* server: the plan's answer */
	/* owner: sessdrive.c (the driver: the connection, the watchers, the
	 * scheduler's seat, -T a's poll) */
	struct evr_conn *conn;
	ev_io io_w;
	ev_idle idle_w;
	ev_timer wd_w;
	ev_timer pace_w;        /* --mps: wakes a long wait for its time */
	uint64_t wd_bytes;
	ev_tstamp wd_last;
	unsigned wd_idle;       /* watchdog ticks in a row with no byte */
	int held;               /* GATED: its owner holds it back (it
				 * waits for others): no stall */
	int wd_state;           /* its watchers are set up (apply()) */
	/* -T n: how often its waits went to sleep because the CPU watch
	 * found the CPU wanted (sched.h); the connection's whole life */
	uint64_t spin_sleeps;
	struct evr_sched_seat seat; /* in play on its loop's scheduler
				     * (sched.h), from its driver's first
				     * step to its end */
	/* -T a's adaptive polling (the estimator's state, poll.c's
	 * functions on it) */
	struct evr_pollest pe;
};

const char *evr__sess_state_name(enum evr_sess_state s);

static inline int evr__sess_has(const struct evr_sess *s, unsigned f)
{
	return (s->feat & f) != 0;
}

static inline void evr__sess_set(struct evr_sess *s, unsigned f, int on)
{
	if (on)
		s->feat |= f;
	else
		s->feat &= ~f;
}

/* In the owner's result(): the test's latency (--percentiles: lat_res,
 * lat) and its split (--split: split->res) are there. */
static inline int evr__sess_lat_valid(const struct evr_sess *s)
{
	return s->tphase == EVR_TP_RESULT &&
	       evr__sess_has(s, EVR_SF_PERCENTILES);
}

static inline int evr__sess_split_valid(const struct evr_sess *s)
{
	return s->tphase == EVR_TP_RESULT && s->client &&
	       s->hold != EVR_HOLD_OFF;
}

/* Set up a machine in CONNECTING.  plan is copied.  The conn may be given
 * later (evr__sess_attach).  Returns 0 or -ENOMEM. */
int evr__sess_init(struct evr_sess *s, struct evr_loop *loop, int client,
		   const struct evr_conn_plan *plan, unsigned conn_index,
		   unsigned conn_total, const struct evr_stream_opts *o);
/* Feed one event; returns what the machine waits for next.  Pure state
 * machine: it touches no watcher, so tests can drive it directly. */
enum evr_sess_want evr__sess_event(struct evr_sess *s,
				   enum evr_sess_event ev, int arg);
/* Send from and receive into the owner's buf of size bytes, which
 * outlives the machine, instead of a buffer of its own: machines that do
 * not verify never look at their bytes, so one buffer serves them all.
 * A test larger than size still gets a buffer of its own. */
void evr__sess_use_buf(struct evr_sess *s, uint8_t *buf, size_t size);
/* Charge this machine's buffers to b from now on (a server's budget). */
void evr__sess_set_budget(struct evr_sess *s, struct evr_membudget *b);
/* The buffer a transfer of size bytes needs on this machine (inline:
 * every piece of every transfer asks). */
static inline size_t evr__sess_xfer_buf(const struct evr_sess *s,
					size_t size)
{
	return s->chunk && size > s->chunk ? s->chunk : size;
}
/* Release the buffer and the connection (evr__sess_fini()'s second
 * half, once the driver has stopped its watchers). */
void evr__sess_release(struct evr_sess *s);

/* Done or failed: nothing more to drive. */
static inline int evr__sess_terminal(const struct evr_sess *s)
{
	return s->state == EVR_SS_DONE || s->state == EVR_SS_FAILED;
}

/* A progress report to the owner, if a test is in its data phase (the
 * driver's interval_ms timer). */
void evr__sess_progress(struct evr_sess *s);

/* The driver (sessdrive.c): watchers on the loop that feed the machine;
 * the engines call these, and the machine calls none of them. */
void evr__sess_drive(struct evr_sess *s, enum evr_sess_event ev, int arg);
void evr__sess_stop_watchers(struct evr_sess *s);
/* Give the machine its connection, whose wake-ups (news the fd may not
 * show: an RDMA CM event) drive it as a ready fd would. */
void evr__sess_attach(struct evr_sess *s, struct evr_conn *c);
/* Stop the watchers, release the buffer and the connection. */
void evr__sess_fini(struct evr_sess *s);

/* Whether the machine waits for its connection (the last call would
 * block). */
static inline int evr__sess_waiting(enum evr_sess_want w)
{
	return w == EVR_WANT_READ || w == EVR_WANT_WRITE;
}

/* Waiting for the next iteration's time (--mps): no stall. */
static inline int evr__sess_pacing(const struct evr_sess *s)
{
	return s->state == EVR_SS_PACE;
}

/* PACE: when the next iteration is due (evr_now_ns()'s clock). */
static inline uint64_t evr__sess_pace_at(const struct evr_sess *s)
{
	return s->it_t0;
}

/* One try of an owner that polls (w: what the last call, which returned
 * -EAGAIN, waits for): the call again, unless the transport tells at
 * less cost that it would find nothing (evr_conn_ops.ready). */
static inline enum evr_sess_want evr__sess_try_again(struct evr_sess *s,
						     enum evr_sess_want w)
{
	struct evr_conn *c = s->conn;

	if (c && c->ops->ready && !c->ops->ready(c))
		return w;
	return evr__sess_event(s, EVR_SE_READY, 0);
}

#endif
