/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport's insides, shared by its files (rdma.h is its face
 * to the engine), top to bottom:
 *   rdma_cm.c     setting a connection up, the RDMA CM channel, the
 *                 engine side (evr__rdma_xport_new());
 *   rdma_conn.c   a connection: what its completions say, control
 *                 messages, the data path, the close (close_step(),
 *                 rclose.c's machine), settings;
 *   rdma_dev.c    completions, devices, shared CQs, connection slots;
 *   rdma_upcall.c the deferred upcalls, a connection's sticky error;
 *   rdma_mem.c    rings, cells, sizes.
 * A file calls only the files below it; the two lower ones call back up
 * only through rdma_xport.up, which rdma_cm.c fills (scripts/layers.sh
 * checks that no two files call each other).
 *
 * The RDMA transport of the stream engine: upstream's rsocket stream
 * protocol (spec/rsocket-protocol.md; the rules live in rsproto.c) on RDMA
 * CM and verbs, driven by the loop.
 *
 * One RDMA CM event channel per engine and one completion channel per
 * device, non-blocking fds in the loop, whatever the number of
 * connections; nothing ever waits in rdma_get_cm_event or
 * ibv_get_cq_event.  The connections of a device share its CQs (struct
 * rcq: as many as the device's CQ size needs, each holding what its
 * connections' queues may complete at once).  Whoever polls a CQ (a
 * connection's send or receive, or the channel's watcher) hands each
 * completion to its connection (the slot in its wr_id) and the others'
 * owners are woken, so a connection has no fd of its own (evr_conn.fd is
 * -1): its owner sleeps until woken.  The transport processes by itself
 * what comes before an owner has the connection (a server's connection
 * between CONNECT_REQUEST and ESTABLISHED, when the peer's first messages
 * may already arrive) and after (a close in progress).
 *
 * The transport never calls the engine from inside send/recv/close or
 * from the middle of its CM event processing: upcalls (connected,
 * accepted, wake, drained) are queued and delivered from a zero timer, so
 * that a blocking receive may process CM events safely.
 *
 * Close (spec §5.5): post RS_CTRL_DISCONNECT unless the peer's came first,
 * then wait for the first of its completion, the peer's DISCONNECT, CM
 * DISCONNECTED or a timer; rdma_disconnect; wait (bounded) for CM
 * DISCONNECTED; destroy.  This happens after the session has let go: the
 * connection lingers here, and evr_stream_free tears down what is left.
 * The states and the decisions are rclose.c's; events here only record
 * facts (rconn.facts) and call evr__rdma_close_step(), the one close path.
 */
#ifndef EVR_SRC_RDMA_INT_H
#define EVR_SRC_RDMA_INT_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../../loop/device.h"
#include "../../loop/loop.h"
#include "rclose.h"
#include "rdma.h"
#include "rsproto.h"

#define RS_SQ_SIZE 384            /* upstream's default queue depths */
#define EVR_RDMA_DEFAULT_INLINE 64 /* -I's default, as rsockets' */
#define CQ_BATCH 16               /* completions polled, receives posted,
				   * a call */
#define RS_RQ_SIZE 384            /* = the credits we grant */
/* Receives beyond the credits: the peer's control messages (up to 4 in
 * flight, and more while our re-posting lags) then never meet an empty
 * receive queue, whose RNR NAK would cost 655 ms each. */
#define RQ_EXTRA (4 * EVR_RS_CTRL_SIZE)
/* Receives go back in batches of this many (one ibv_post_recv each, not
 * one a message: a call is some 170 instructions under Soft-RoCE).  What
 * waits for its batch comes out of RQ_EXTRA: the peer may have rq_size
 * messages and EVR_RS_CTRL_SIZE control messages in flight (credits go
 * back as messages consumed + rq_size), so the receives still posted,
 * rq_post less what waits, must cover both. */
#define REPOST_BATCH 8
_Static_assert(REPOST_BATCH - 1 + EVR_RS_CTRL_SIZE <= RQ_EXTRA,
	       "the receives held back fit in the spare ones");

/*
 * A connection's cell: the target SGL its peer writes (32 bytes) and the
 * control slots its SGE updates go out of when they cannot go inline (64
 * bytes), under one memory region that the peer may write (as upstream
 * registers its target SGL and iomap together).  A page of its own for
 * each was two pages per connection for 96 bytes; cells share pages (32
 * to a 4 KiB page), each connection registering only its own cell's
 * bytes, so a peer's writes stay within its own connection's cell.  The
 * pages go when the transport does.
 */
#define CELL_SGL (EVR_RS_SGL_SIZE * EVR_RS_SGE_LEN)
#define CELL_USED (CELL_SGL + EVR_RS_CTRL_SIZE * EVR_RS_SGE_LEN)
#define CELL_SIZE 128u
_Static_assert(CELL_USED <= CELL_SIZE, "a cell holds the SGL and the slots");


/* wr_id: whose and what.  Bit 63: a receive; 62..60: a send's kind;
 * 59..44: the connection's slot generation; 43..20: its slot; 19..0: a
 * DATA write's length (at most EVR_RS_MAX_TRANSFER), an SGL message's
 * control slots (0: one), a receive's message slot (iWARP).  A
 * completion whose generation is not its slot's belongs to a connection
 * gone since (the flushed work requests of a destroyed QP on a shared
 * CQ): dropped.  WK_PART: the unsignaled write ahead of an iWARP
 * message's send, which completes only when it fails. */
#define WR_RECV (1ull << 63)
enum { WK_DATA = 1, WK_SGL, WK_DISC, WK_KEEPALIVE, WK_PART };
#define WR_KIND(id) ((unsigned)((id) >> 60) & 7u)
#define WR_GEN(id) ((uint16_t)((id) >> 44))
#define WR_SLOT(id) ((uint32_t)((id) >> 20) & 0xffffffu)
#define WR_LEN(id) ((uint32_t)(id) & 0xfffffu)
#define SLOT_MAX 0xffffffu

/* deferred upcalls */
enum {
	PEND_CONNECTED = 1,
	PEND_ACCEPTED = 2,
	PEND_WAKE = 4,
	PEND_POLLED = 8,              /* not the owner's: process it here */
};

struct rdma_xport;
struct rdev;

/* A CQ shared by connections of one device: size entries, used of them
 * reserved by its connections' queues (a CQ must never overflow). */
struct rcq {
	struct rcq *next;
	struct rdev *dev;
	struct ibv_cq *cq;
	unsigned size, used, nconns;
	unsigned unacked;              /* events taken, not yet acked */
	int armed;                     /* a completion will raise an event */
	int evented;                   /* an event came: poll it, re-arm */
	unsigned waiters;              /* connections whose owner sleeps on
					* it, or that the transport holds */
};

/* One device's completion channel (an fd in the loop) and its CQs; the
 * transport's hold on the device in the loop's registry (user: told when
 * a port goes down or the device goes away). */
struct rdev {
	struct rdev *next;
	struct rdma_xport *x;
	struct ibv_context *verbs;
	struct evr__dev_user user;
	struct ibv_comp_channel *cch;
	ev_io w;
	struct rcq *cqs;
	unsigned ncqs;
	int max_cqe;
};

struct rslot {
	struct rconn *rc;              /* NULL: free */
	uint16_t gen;
	uint32_t next_free;
};

/*
 * One connection.  Its fields are grouped by the file that changes them
 * ("owner:" below); the others read them, and change them only through
 * the owner's functions (tests/e2e/owners.sh checks every assignment).
 * base is the session's interface (struct evr_conn), not in this rule.
 */
struct rconn {
	struct evr_conn base;
	/* owner: rdma_cm.c (setting up: the CM id, its route, the QP) */
	struct rdma_xport *x;
	struct rconn *prev, *next;     /* every connection of the engine */
	unsigned id_no;                /* for traces */
	struct rdma_cm_id *id;
	struct sockaddr_storage dst;
	uint8_t route[256];            /* -T r: a path from rdma_getaddrinfo */
	size_t route_len;
	unsigned retries;
	int inline_req;
	uint32_t max_inline;
	int msg_send;                  /* iWARP: rsockets' message dialect */
	ev_timer close_w;
	ev_timer ka_w;
	/* owner: rdma_conn.c (the data path and the close machine) */
	/* moved by set_state while setting up, then only by close_step */
	enum evr_rc_state state;
	enum evr_rc_disc disc;         /* our DISCONNECT */
	int conn_err;                  /* for PEND_CONNECTED */
	/* the completions seen by the last call that found nothing to do
	 * (r_ready) */
	uint32_t wc_seen;
	unsigned repost;               /* receives to post again */
	uint32_t recv_next;            /* iWARP: the next receive's message
					* slot in mbuf */
	struct evr_rs_conn_data peer;
	int swap_sge;
	struct evr_rs_tx tx;
	struct evr_rs_rx rx;
	/* the data path's own figures (traced at the end) */
	uint64_t n_writes, n_corked, b_corked, n_msgs;
	uint64_t n_send_polls;     /* sends that polled the CQ first */
	/* owner: rdma_dev.c (its share of a device's CQ and slots) */
	struct rcq *rcq;
	unsigned cq_need;              /* CQ entries its queues may fill */
	uint32_t slot;                 /* x->slots[slot].rc == this */
	uint16_t gen;
	struct rconn *touch_next;      /* completions came, in one poll */
	int touched;
	uint32_t n_wc;                 /* completions of its taken, by
					* whichever poll */
	int waiting;                   /* counted in rcq->waiters */
	/* owner: rdma_upcall.c (what the owner is told) */
	struct rconn *pend_next;       /* queued for an upcall */
	unsigned pend;
	unsigned facts;                /* EVR_RC_F_*: what happened */
	int err;                       /* sticky: the connection is broken */
	/* owner: rdma_mem.c (its memory and the sizes of its queues) */
	uint8_t *sbuf, *rbuf;          /* one allocation, rbuf after sbuf */
	uint8_t *mbuf;                 /* iWARP: after sbuf, under smr, the
					* receives' messages (rq_post of
					* EVR_RS_MSG_LEN bytes) */
	uint8_t *tsgl;                 /* a cell (cell_get()): the target SGL
					* the peer writes, then the control
					* slots */
	struct ibv_mr *smr, *tmr, *rmr;
	uint32_t sbuf_size, rbuf_size;
	uint32_t sq_size, rq_size, rq_post;
	uint32_t *rmsg;
};

/* The calls the lower files (rdma_dev.c, rdma_upcall.c, and rdma_conn.c
 * for -T b's wait) make upward, filled by rdma_cm.c. */
struct rdma_up {
	/* rdma_conn.c: a receive's completion (counted for reposting), a
	 * send's, the receives taken given back, a held connection's
	 * completions processed (may destroy it) */
	void (*recv_wc)(struct rconn *rc, const struct ibv_wc *wc);
	void (*send_wc)(struct rconn *rc, const struct ibv_wc *wc);
	void (*repost)(struct rconn *rc);
	void (*closing_polled)(struct rconn *rc);
	/* rdma_cm.c: the registry's word about a device, the CM channel
	 * drained */
	void (*dev_note)(struct evr__dev_user *u, enum evr__dev_note n,
			 unsigned port);
	void (*cm_drain)(struct rdma_xport *x);
};

struct rdma_xport {
	struct evr_xport base;
	struct rdma_up up;
	struct rdma_event_channel *ch;
	ev_io cm_w;
	struct rdma_cm_id *lid;        /* listener */
	int listen_afib;
	/* a listener bound to an address whose device went away: listening
	 * again once the device is back (relisten_w retries meanwhile) */
	struct sockaddr_storage listen_ss;
	int listen_dual;               /* [::] for IPv4's clients too */
	int listen_lost;
	struct evr__dev_watch relisten;
	ev_timer relisten_w;
	struct rconn *conns;
	struct rconn *pend_head, *pend_tail;
	unsigned nlinger;
	int drain_pend;
	unsigned next_no;
	unsigned nconns;               /* in conns */
	int starved;                   /* refusing since the last accept */
	ev_timer defer_w;
	struct rdev *devs;
	struct rslot *slots;
	uint32_t nslots, free_slot;    /* free_slot: a list through next_free,
					* SLOT_MAX when empty */
	/* the connections' cells (cell_get()), carved from whole pages */
	uint8_t **cell_pages;
	unsigned ncell_pages;
	uint8_t *cell_free;            /* a list through each free cell */
};

static inline uint64_t evr__rdma_wr_id(const struct rconn *rc, unsigned kind,
				       uint32_t len)
{
	return (uint64_t)kind << 60 | (uint64_t)rc->gen << 44 |
	       (uint64_t)rc->slot << 20 | len;
}

static inline int evr__rdma_has(const struct rconn *rc, unsigned facts)
{
	return !!(rc->facts & facts);
}

/* The owner shut it down: we send nothing more. */
static inline int evr__rdma_shut(const struct rconn *rc)
{
	return rc->disc != EVR_RC_DISC_NONE;
}

static inline int evr__rdma_io_mode(const struct rconn *rc)
{
	return rc->x->base.o->io;
}

/* Someone sleeps on the completion channel: arm the CQ before waiting
 * (the owner, unless it spins; the transport, for a connection it holds
 * itself). */
static inline int evr__rdma_waits_on_fd(const struct rconn *rc)
{
	return !evr__rdma_has(rc, EVR_RC_F_OWNED) ||
	       evr__rdma_io_mode(rc) != EVR_IO_NONBLOCK || rc->base.sleeping;
}

/* Connected, and neither side has ended it: errors count, credits flow. */
static inline int evr__rdma_live(const struct rconn *rc)
{
	return (rc->state == EVR_RC_OPEN || rc->state == EVR_RC_ACCEPTING) &&
	       !evr__rdma_has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC) &&
	       !rc->err;
}

/* Bytes may still go to the peer: ours to send, its ring to take. */
static inline int evr__rdma_may_write(const struct rconn *rc)
{
	return (rc->state == EVR_RC_OPEN || rc->state == EVR_RC_CLOSING) &&
	       !rc->err &&
	       !evr__rdma_has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC) &&
	       rc->disc != EVR_RC_DISC_POSTED && rc->disc != EVR_RC_DISC_DONE;
}

/* rdma_mem.c: rings, cells, sizes */
void *evr__rdma_page_alloc(size_t size);
uint8_t *evr__rdma_cell_get(struct rdma_xport *x);
void evr__rdma_cell_put(struct rdma_xport *x, uint8_t *c);
void evr__rdma_mem_sizes(struct rconn *rc, unsigned nconns, uint32_t maxwr);
int evr__rdma_mem_setup(struct rconn *rc, struct ibv_pd *pd,
			const char **what);
void evr__rdma_mem_free(struct rconn *rc);
void evr__rdma_conn_sizes(const struct evr_stream_opts *o, unsigned n,
			  uint32_t *ring, uint32_t *sq, uint32_t *rq);

/* rdma_upcall.c: the deferred upcalls, a connection's sticky error */
void evr__rdma_upcall_init(struct rdma_xport *x);
void evr__rdma_defer_kick(struct rdma_xport *x);
void evr__rdma_pend_add(struct rconn *rc, unsigned what);
void evr__rdma_pend_remove(struct rconn *rc);
void evr__rdma_wake(struct rconn *rc);
void evr__rdma_run_pend(struct rdma_xport *x);
void evr__rdma_trace_err(struct rconn *rc, const char *what, int err);
void evr__rdma_set_err(struct rconn *rc, int err, const char *what);
void evr__rdma_err_reason(struct rconn *rc, int err);
void evr__rdma_facts(struct rconn *rc, unsigned set, unsigned clear);

/* rdma_dev.c: completions, devices, shared CQs, slots */
void evr__rdma_set_waiting(struct rconn *rc, int on);
int evr__rdma_arm(struct rconn *rc);
int evr__rdma_poll_rcq(struct rcq *q, struct rconn *self);
int evr__rdma_poll_cq(struct rconn *rc);
int evr__rdma_dev_events(struct rdev *d, struct rconn *self);
void evr__rdma_dev_free(struct rdev *d);
void evr__rdma_cq_free(struct rcq *q);
int evr__rdma_cq_reserve(struct rconn *rc, unsigned need, const char **what);
void evr__rdma_cq_release(struct rconn *rc);
int evr__rdma_slot_get(struct rconn *rc);
void evr__rdma_slot_put(struct rconn *rc);

/* rdma_conn.c: a connection's completions, state, control messages, the
 * data path, closing */
int evr__rdma_post_recvs(struct rconn *rc, unsigned n);
void evr__rdma_recv_wc(struct rconn *rc, const struct ibv_wc *wc);
void evr__rdma_send_wc(struct rconn *rc, const struct ibv_wc *wc);
void evr__rdma_repost(struct rconn *rc);
void evr__rdma_take_peer(struct rconn *rc, const struct evr_rs_conn_data *cd);
void evr__rdma_set_state(struct rconn *rc, enum evr_rc_state st);
void evr__rdma_ka_cb(struct ev_loop *l, ev_timer *w, int revents);
void evr__rdma_process(struct rconn *rc);
void evr__rdma_closing_polled(struct rconn *rc);
void evr__rdma_own_watch(struct rconn *rc);
void evr__rdma_close_cb(struct ev_loop *l, ev_timer *w, int revents);
void evr__rdma_close_step(struct rconn *rc, enum evr_rc_event ev, int err);
extern const struct evr_conn_ops evr__rdma_conn_ops;

/* rdma_cm.c: setting a connection up, the CM channel, the engine side */
void evr__rdma_cm_drain(struct rdma_xport *x);
void evr__rdma_dev_note(struct evr__dev_user *u, enum evr__dev_note n,
			unsigned port);

#endif
