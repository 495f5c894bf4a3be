/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Inside the multicast engine: the per-QP state machine and the transport
 * interface (RDMA CM UD QPs, or kernel UDP sockets).
 */
#ifndef EVR_SRC_MC_H
#define EVR_SRC_MC_H

#include <ev.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../loop/loop.h"
#include "../loop/resolve.h"
#include "evrdma/mcast.h"
#include "payload.h"

#define EVR_MC_STATES(X) \
	X(IDLE)       /* created */ \
	X(RESOLVING)  /* bind, then resolve the group's address */ \
	X(JOINING)    /* resources set up, receives posted, join sent */ \
	X(JOINED)     /* address handle made; waiting for the others */ \
	X(RUNNING)    /* settled: sending or receiving */ \
	X(REJOINING)  /* the group lost after the join (MULTICAST_ERROR): \
		       * left, joining again, once */ \
	X(DONE)       /* left the group (if joined) */ \
	X(FAILED)

enum evr_mc_state {
#define X(s) EVR_MC_##s,
	EVR_MC_STATES(X)
#undef X
	EVR_MC__COUNT
};

enum evr_mc_ev {
	EVR_MCE_START,
	EVR_MCE_RESOLVED,
	EVR_MCE_RESOLVE_ERR,  /* arg: status */
	EVR_MCE_JOINED,
	EVR_MCE_JOIN_ERR,     /* arg: status */
	EVR_MCE_GO,           /* settled: start the transfer phase */
	EVR_MCE_SEND_SLOT,    /* a send may be posted (pacing tick) */
	EVR_MCE_SEND_COMP,    /* arg: 0 or -EIO for a failed completion */
	EVR_MCE_RECV_COMP,    /* arg: 0 or -EIO */
	EVR_MCE_DEADLINE,
	EVR_MCE_CANCEL,
	EVR_MCE_STEP_TIMEOUT, /* resolving or joining took too long */
	EVR_MCE_LOST,         /* the QP's device went away or its port went
			       * down (arg: the status); the transport has
			       * recorded the failure and let go of the
			       * group */
	EVR_MCE_GROUP_LOST,   /* the membership lost after the join
			       * (RDMA_CM_EVENT_MULTICAST_ERROR; arg: its
			       * status): rejoin once, fail the second time */
};

struct evr_mcast;
struct evr_mc_node;

/* A transport's operations; its name and what it needs of the host are
 * its row in mcast.c's table. */
struct evr_mc_xport {
	/* Engine-wide resources (the CM event channel).  0 or a failure
	 * already recorded with EVR__MC_FAIL(). */
	int (*engine_init)(struct evr_mcast *m);
	void (*engine_fini)(struct evr_mcast *m);
	int (*node_init)(struct evr_mc_node *n);
	/* Resolve the addresses (-b, -m/-M).  0 or < 0 (recorded). */
	int (*prepare)(struct evr_mcast *m);
	/* 0: started, an event follows; 1: done now; < 0: failed (recorded) */
	int (*resolve)(struct evr_mc_node *n);
	/* MTU check, PD/CQ/QP/buffers, receives posted.  0 or < 0. */
	int (*setup)(struct evr_mc_node *n);
	/* 0: started; 1: joined now; < 0: failed */
	int (*join)(struct evr_mc_node *n);
	/* Post message seq: 0, -EAGAIN (no free slot), or < 0 failed */
	int (*send)(struct evr_mc_node *n, uint32_t seq);
	int (*leave)(struct evr_mc_node *n);
	void (*node_fini)(struct evr_mc_node *n);
};

extern const struct evr_mc_xport evr__mc_rdma_xport;
extern const struct evr_mc_xport evr__mc_udp_xport;
/* What a run over RDMA locks: its slots and queues (evr_mcast_memlock(),
 * by the row of mcast.c's table) */
uint64_t evr__mc_rdma_memlock(const struct evr_mcast_opts *o);
/* A transport's own settings of (resolved) options, in rows[0 .. max):
 * how many (evr_mcast_settings(), by the row of mcast.c's table). */
typedef unsigned evr__mc_settings_fn(const struct evr_mcast_opts *o,
				     struct evr_setting *rows, unsigned max);
evr__mc_settings_fn evr__mc_rdma_settings;
evr__mc_settings_fn evr__mc_udp_settings;

struct evr_mc_node {
	enum evr_mc_state state;
	unsigned index;
	struct evr_mcast *mc;
	void *xp;                 /* the transport's per-QP state */
	uint64_t sent, send_done, recvd;
	uint64_t join_t0, join_ns;
	int joined, go, timed_out;
	unsigned rejoins;         /* MULTICAST_ERRORs survived: 0 or 1 */
	char dgid[64];
	unsigned mlid, sl;
	struct evr_mc_acct acct;
	ev_timer pace_w;
	ev_timer step_w;          /* bounds RESOLVING, JOINING, REJOINING */
	int failed;
};

struct evr_mcast {
	struct evr_loop *loop;
	struct evr_mcast_opts o;
	char *group, *unmapped, *bind_addr;
	const struct evr_mc_xport *x;
	const struct evr_mc_up *up; /* the engine's, for the transport */
	void *xp;                 /* the transport's engine state */
	struct evr_mcast_cbs cbs;
	void *ud;
	struct evr_mc_node *nodes;
	unsigned nnodes;
	int status;               /* upstream's "return status" */
	int have_status;
	int phase_go;             /* settle over */
	int finished;
	int started;
	ev_timer settle_w, deadline_w;
	ev_timer finish_w;
	/* evr_mcast_cancel() from inside one of our callbacks (cb_depth > 0)
	 * runs from cancel_w, once the engine is off the stack. */
	ev_timer cancel_w;
	unsigned cb_depth;
	struct evr_mc_qp_report *reports;
	struct evr_mc_sender_report *sreports;
	/* Names looked up on the loop before the transport's prepare
	 * (evr_mcast_start(); the nodes wait IDLE): [0] the group, [1] the
	 * bind address; evr__mc_get_addr() answers with what they found. */
	struct evr_lookup *lk[2];
	struct sockaddr_storage found[2];
	socklen_t found_len[2];
	/* every address of the bind name: found[1] becomes its first of
	 * the group's family (pick_bind(), mcast.c) */
	struct evr__addrs bind_all;
};

const char *evr__mc_state_name(enum evr_mc_state s);

/* A failure, by name: EVR__MC_FAIL(m, .qp = n->index, .status = -1,
 * .msg = "mckey: rdma_create_id", .sys_errno = errno).  status is
 * upstream's return status; code what went wrong (-errno or -EVR_E_*;
 * 0: -sys_errno, else status when it is a negative errno, else -EIO);
 * sys_errno, when set, is printed after msg as upstream's perror(). */
struct evr__mc_fail_args {
	unsigned qp;
	int status, code, sys_errno;
	const char *msg, *detail;
};

/* The engine's services to its transports: the only way a transport
 * calls up into mcast.c, so that the engine calls the transports (its
 * table's rows) and not the other way round (scripts/layers.sh). */
struct evr_mc_up {
	/* an event for a QP's machine */
	void (*node_event)(struct evr_mc_node *n, enum evr_mc_ev ev, int arg);
	/* Record a failure: its text goes out through the failure
	 * callback, and the first one becomes the return status (later
	 * ones never mask it). */
	void (*failed)(struct evr_mcast *m, const struct evr__mc_fail_args *a);
	/* Resolve -b or -m as upstream does (its first address); a failure
	 * is recorded with upstream's text.  0 or -1. */
	int (*get_addr)(struct evr_mcast *m, const char *host,
			struct sockaddr_storage *out, socklen_t *len);
	/* the owner's callbacks: a CM event, a QP joined */
	void (*cm_event)(struct evr_mcast *m, unsigned qp, const char *event,
			 int status, int is_error);
	void (*joined)(struct evr_mcast *m, const struct evr_mc_joined *j);
};

/* The transports' (and the engine's own) calls through the table. */
static inline void evr__mc_node_event(struct evr_mc_node *n,
				      enum evr_mc_ev ev, int arg)
{
	n->mc->up->node_event(n, ev, arg);
}

static inline void evr__mc_fail(struct evr_mcast *m,
				const struct evr__mc_fail_args *a)
{
	m->up->failed(m, a);
}
#define EVR__MC_FAIL(m, ...) \
	evr__mc_fail((m), &(const struct evr__mc_fail_args){ __VA_ARGS__ })

static inline int evr__mc_get_addr(struct evr_mcast *m, const char *host,
				   struct sockaddr_storage *out,
				   socklen_t *len)
{
	return m->up->get_addr(m, host, out, len);
}

static inline void evr__mc_cm_event(struct evr_mcast *m, unsigned qp,
				    const char *event, int status,
				    int is_error)
{
	m->up->cm_event(m, qp, event, status, is_error);
}

static inline void evr__mc_joined(struct evr_mcast *m,
				  const struct evr_mc_joined *j)
{
	m->up->joined(m, j);
}

/* Every zero of o that stands for a default, that default; window and
 * max_senders clamped (evr_mcast_opts_resolve()). */
void evr__mcast_opts_fill(struct evr_mcast_opts *o);

/* For tests: an engine on a given transport. */
int evr__mcast_new_xport(struct evr_mcast **out, struct evr_loop *loop,
			 const struct evr_mcast_opts *o,
			 const struct evr_mcast_cbs *cbs, void *ud,
			 const struct evr_mc_xport *x);

#endif
