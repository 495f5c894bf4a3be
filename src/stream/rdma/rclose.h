/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * How an RDMA connection (an rsocket, rdma_*.c) ends, as a pure state
 * machine: evr__rc_close_next() takes the connection's state, the state
 * of our DISCONNECT message, an event and the facts recorded so far, and
 * says what comes next and what to do.  It touches nothing, so it is
 * tested without verbs (tests/check_rclose.c); rdma_conn.c's close_step() is
 * its only caller and the only place that carries the actions out, as
 * every libuv close goes through uv_close -> uv__finish_close.
 *
 * The close (spec §5.5): post RS_CTRL_DISCONNECT unless the peer's came
 * first, then wait for the first of its completion, the peer's
 * DISCONNECT, CM DISCONNECTED or a timer; rdma_disconnect; wait (bounded)
 * for CM DISCONNECTED; destroy.
 */
#ifndef EVR_SRC_RCLOSE_H
#define EVR_SRC_RCLOSE_H

/* The connection.  Setup moves it up to OPEN (or FAILED); from there on
 * only evr__rc_close_next does. */
#define EVR_RC_STATES(X) \
	X(NEW)           /* created: no CM step yet */ \
	X(RESOLVE_ADDR)  /* client: rdma_resolve_addr */ \
	X(RESOLVE_ROUTE) \
	X(CONNECTING)    /* client: rdma_connect sent */ \
	X(ACCEPTING)     /* server: rdma_accept sent, before ESTABLISHED */ \
	X(OPEN)          /* established: data flows */ \
	X(FAILED)        /* client: connecting failed, the owner is told */ \
	X(CLOSING)       /* closed by the owner: waiting for the first of \
			  * our DISCONNECT's completion, the peer's, CM \
			  * DISCONNECTED, an error or the timer */ \
	X(PEER_CLOSING)  /* closed by the owner after the peer's \
			  * DISCONNECT: the QP stays up, acknowledging, \
			  * until the peer's DREQ or a grace timer */ \
	X(DISCONNECTING) /* rdma_disconnect done: waiting for the CM */ \
	X(CLOSED)        /* torn down: the last state a trace shows */

enum evr_rc_state {
#define X(s) EVR_RC_##s,
	EVR_RC_STATES(X)
#undef X
	EVR_RC__COUNT
};

/* Our half of the close: the RS_CTRL_DISCONNECT we owe after the owner's
 * shutdown (upstream's rshutdown(SHUT_RDWR)). */
#define EVR_RC_DISCS(X) \
	X(NONE)      /* not shut down: we may send */ \
	X(WANTED)    /* shut down: our DISCONNECT is due, waiting for a \
		      * control slot */ \
	X(POSTED)    /* in flight */ \
	X(DONE)      /* completed (whatever its status), or could not be \
		      * posted: nothing more will complete */ \
	X(NOT_OWED)  /* shut down when not open, or after the peer's \
		      * DISCONNECT, CM DISCONNECTED or an error: we post \
		      * none */

enum evr_rc_disc {
#define X(s) EVR_RC_DISC_##s,
	EVR_RC_DISCS(X)
#undef X
	EVR_RC_DISC__COUNT
};

enum evr_rc_event {
	EVR_RC_E_SHUT,        /* the owner shuts the connection down */
	EVR_RC_E_CLOSE,       /* the owner lets go of it (after E_SHUT) */
	EVR_RC_E_POLLED,      /* closing: the CQ was just processed */
	EVR_RC_E_DISC_POSTED, /* our DISCONNECT went out */
	EVR_RC_E_DISC_DONE,   /* ... completed, or could not be posted */
	EVR_RC_E_CM_DISC,     /* RDMA_CM_EVENT_DISCONNECTED */
	EVR_RC_E_TIMER,       /* the close timer fired */
	EVR_RC_E_CONN_FAIL,   /* a connect (or accept) attempt failed */
	EVR_RC_E_ABORT,       /* destroy now: a setup undone, or the engine
			       * is being freed */
	EVR_RC_E_PORT_DOWN,   /* its device's port went down */
	EVR_RC_E_DEV_GONE,    /* its device is going away (removal, fatal) */
	EVR_RC_E__COUNT
};

/* Facts: what happened, recorded by the events as they come.  The machine
 * reads them and never sets one. */
enum {
	EVR_RC_F_OWNED = 1 << 0,     /* the owner (the engine) holds it */
	EVR_RC_F_LINGER = 1 << 1,    /* the owner let go: closing here */
	EVR_RC_F_PEER_DISC = 1 << 2, /* the peer's DISCONNECT (or its
				      * SHUTDOWN after ours) */
	EVR_RC_F_PEER_SHUT = 1 << 3, /* the peer's SHUTDOWN */
	EVR_RC_F_CM_DISC = 1 << 4,   /* RDMA_CM_EVENT_DISCONNECTED */
	EVR_RC_F_ERR = 1 << 5,       /* broken: the error is sticky */
	EVR_RC_F_UNSENT = 1 << 6,    /* bytes gathered for the peer (the
				      * cork) wait for credits: our
				      * DISCONNECT goes after them */
	EVR_RC_F_DEV_GONE = 1 << 7,  /* its device is going away: the kernel
				      * has destroyed its CM id, nothing
				      * more can be said to the peer, and
				      * the device waits for us to let go */
};

/* Actions, carried out by the caller in this order. */
enum {
	EVR_RC_A_TIMEOUT = 1 << 0,     /* trace: the close timed out */
	EVR_RC_A_CONN_FAILED = 1 << 1, /* trace: the connect failed */
	EVR_RC_A_PROCESS = 1 << 2,     /* process the CQ, which posts our
					* DISCONNECT if a slot is free */
	EVR_RC_A_DISCONNECT = 1 << 3,  /* stop watching, rdma_disconnect,
					* take the flushed completions */
	EVR_RC_A_TIMER_CLOSE = 1 << 4, /* for our DISCONNECT to complete */
	EVR_RC_A_TIMER_GRACE = 1 << 5, /* for the peer's DREQ */
	EVR_RC_A_TIMER_DISC = 1 << 6,  /* for CM DISCONNECTED */
	EVR_RC_A_WATCH = 1 << 7,       /* watch the completion channel */
	EVR_RC_A_WAKE = 1 << 8,        /* tell the owner */
	EVR_RC_A_NOTIFY = 1 << 9,      /* tell the owner its connect failed */
	EVR_RC_A_DREQ = 1 << 10,       /* rdma_disconnect before destroying:
					* established, never disconnected */
	EVR_RC_A_TEARDOWN = 1 << 11,   /* destroy: the last action */
	EVR_RC_A_FLUSH = 1 << 12,      /* QP to error, and take the work
					* requests it flushes (a port went
					* down: never reset in place, which
					* would lose them uncompleted) */
};

struct evr_rc_next {
	enum evr_rc_state state;
	enum evr_rc_disc disc;
	unsigned acts;
};

struct evr_rc_next evr__rc_close_next(enum evr_rc_state st,
				      enum evr_rc_disc disc,
				      enum evr_rc_event ev, unsigned facts);

const char *evr__rc_state_name(enum evr_rc_state st);
const char *evr__rc_disc_name(enum evr_rc_disc d);

/* Before ESTABLISHED: what a failure to connect (or accept) ends. */
int evr__rc_setting_up(enum evr_rc_state st);
/* Reached OPEN once (a peer knows of it). */
int evr__rc_established(enum evr_rc_state st);
/* Closed by the owner, waiting for the close's first step to finish. */
int evr__rc_closing(enum evr_rc_state st);
/* rdma_disconnect has been called: the QP is in error. */
int evr__rc_disconnected(enum evr_rc_state st);

#endif
