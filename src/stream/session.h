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

#include "../loop/loop.h"
#include "evrdma/stream.h"
#include "latstats.h"
#include "plan.h"
#include "transport.h"
#include "wire.h"

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
	X(SYNC_SEND)     /* the 16-byte sync before each test */ \
	X(SYNC_RECV) \
	X(DATA_SEND)     /* one transfer of the test's size */ \
	X(DATA_RECV) \
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
};

/* What the machine waits for after an event. */
enum evr_sess_want {
	EVR_WANT_NONE = 0,  /* finished: DONE or FAILED */
	EVR_WANT_READ,
	EVR_WANT_WRITE,
	EVR_WANT_YIELD,     /* runnable, but let other watchers go first */
	EVR_WANT_CONNECT,   /* waiting for CONNECTED / CONN_ERROR */
	EVR_WANT_DETACH,    /* the owner took the connection elsewhere */
};

struct evr_sess;

/* -T a polls before it sleeps while the session is in an active exchange
 * (session.c explains why): ewma_ns, an average of how long its waits for
 * the peer took, sleep and wake-up included; t0 and bytes, when the wait
 * in hand began and how many bytes had moved then. */
struct evr_pollest {
	uint64_t base_ns;           /* the poll set (opts.poll_us); 0: never */
	uint64_t budget_ns;         /* the poll now: base_ns, grown to cover
				     * replies that came later than it
				     * lasted (up to EVR_POLL_MAX_NS) until
				     * the session turns cold */
	int missed;                 /* the wait in hand's poll ran out */
	uint64_t ewma_ns, t0, bytes;
	unsigned misses;            /* polls in a row that found nothing, or
				     * lost the CPU */
	unsigned skip;              /* waits to sleep through before the next
				     * poll: 1, 2, 4 ... 64 after 2, 3, 4 ...
				     * misses (a peer slower than the poll),
				     * or after 1, 2, 3 ... polls that lost
				     * the CPU (a host too loaded for it) */
	uint64_t offer_ns;          /* a wait that goes on offers the CPU to
				     * other tasks this often, and the poll
				     * ends if one took it:
				     * EVR_POLL_OFFER_NS; 0: never */
	long taken;                 /* the thread's CPU taken (ru_nivcsw) at
				     * the wait's first offer, -1 before it;
				     * kept while the poll gives the loop its
				     * turn */
	uint64_t cont_t0;           /* a poll that gave the loop its turn
				     * while it waited: when it began (it
				     * goes on from there), else 0 */
	/* what the polls did (traced at the session's end) */
	uint64_t n_found;           /* data came while polling */
	uint64_t n_ran_out;         /* polled the budget, then slept */
	uint64_t n_preempted;       /* lost the CPU mid-poll, then slept */
	uint64_t n_unpolled;        /* slept at once (cold, backing off) */
	uint64_t n_yields;          /* gave the loop its turn mid-poll */
};

#define EVR_POLL_NS (EVR_DEFAULT_POLL_US * 1000u) /* the default budget */
#define EVR_POLL_COLD_NS 1000000u   /* waits longer than this on average
				     * (or 5 x budget_ns, if more): the
				     * session sleeps at once */
#define EVR_POLL_MAX_NS 5000000u    /* how long a learnt poll may grow */
#define EVR_POLL_SLICE_NS 2000000u  /* a poll gives the loop its turn at
				     * least this often */
#define EVR_POLL_OFFER_NS 100000u   /* a poll still waiting offers its CPU
				     * to other tasks (sched_yield) this
				     * often */

/* How a poll ended. */
enum evr_poll_end {
	EVR_POLL_RAN_OUT,   /* its budget ran out, nothing came */
	EVR_POLL_FOUND,     /* data came while it polled */
	EVR_POLL_PREEMPTED, /* another task had its CPU meanwhile */
};

void evr__poll_init(struct evr_pollest *p, uint64_t base_ns);
/* bytes is the session's count so far: when it moved since the wait in
 * hand began, that wait ended now and a new one begins. */
void evr__poll_mark(struct evr_pollest *p, uint64_t bytes, uint64_t now);
/* budget_ns while the waits average at most the cold mark and no
 * back-off is due, else 0 (sleep at once). */
uint64_t evr__poll_budget(const struct evr_pollest *p);
/* A poll ended: found (the poll keeps its length), ran out (the wait's
 * end then sizes a longer poll, or, at its cap, the session backs off),
 * or preempted (back to the base length, and it backs off at once). */
void evr__poll_result(struct evr_pollest *p, enum evr_poll_end how);

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
	/* Optional: a test in progress, every interval_ms. */
	void (*progress)(struct evr_sess *s, const struct evr_progress *p);
};

struct evr_sess {
	enum evr_sess_state state;
	int client;
	unsigned id;
	struct evr_loop *loop;
	struct evr_conn *conn;
	enum evr_io_mode io;
	unsigned stall_ms;
	int allow_negotiate;        /* client: send HELLO first */
	int verify;
	int negotiated;
	unsigned conn_index, conn_total;
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
	int reply_status;
	/* the current I/O operation */
	uint8_t *op_buf;
	size_t op_len, op_off;
	int op_send;
	/* a receive whose bytes nobody reads (a client's echo without -v):
	 * consumed, not copied, where the transport can (evr_conn.can_skip) */
	int op_skip;
	struct evr_pattern spat, rpat;
	uint64_t t0;
	uint64_t bytes;
	struct evr_failure fail;
	const struct evr_sess_owner *owner;
	void *owner_ud;
	/* driver */
	ev_io io_w;
	ev_idle idle_w;
	ev_timer wd_w;
	uint64_t wd_bytes;
	ev_tstamp wd_last;
	unsigned wd_idle;       /* watchdog ticks in a row with no byte */
	int held;               /* its owner holds it back (connected,
				 * waiting for others): no stall */
	int wd_state;
	/* -T a's adaptive polling (session.c, poll_async()) */
	struct evr_pollest pe;
	int hot;                    /* counted on the loop as polling */
	/* duration mode (-D): the client marks each iteration's first
	 * transfer MORE or LAST; the server reads the mark (see wire.h) */
	int dur_mode;
	uint64_t dur_ns;            /* client: the target per test */
	int it_last;                /* the current iteration is the last */
	uint64_t it_t0;             /* client: this iteration's start */
	/* --percentiles (client) */
	int lat_on, lat_valid;
	struct evr_latstats lat;
	struct evr_lat_stats lat_res; /* of the test just finished */
	/* progress reports */
	unsigned interval_ms;
	int in_data;                /* between a test's sync and its end */
	uint64_t test_bytes0, prog_bytes, prog_ns;
	ev_timer prog_w;
};

const char *evr__sess_state_name(enum evr_sess_state s);

/* Set up a machine in CONNECTING.  plan is copied.  The conn may be given
 * later (evr__sess_attach).  Returns 0 or -ENOMEM. */
int evr__sess_init(struct evr_sess *s, struct evr_loop *loop, int client,
		   const struct evr_conn_plan *plan, unsigned conn_index,
		   unsigned conn_total, const struct evr_stream_opts *o);
void evr__sess_attach(struct evr_sess *s, struct evr_conn *c);
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
/* The buffer a transfer of size bytes needs on this machine. */
size_t evr__sess_xfer_buf(const struct evr_sess *s, size_t size);
/* Release the buffer and the connection. */
void evr__sess_fini(struct evr_sess *s);

/* The driver: watchers on the loop that feed the machine. */
void evr__sess_drive(struct evr_sess *s, enum evr_sess_event ev, int arg);
void evr__sess_stop_watchers(struct evr_sess *s);

#endif
