/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma multicast engine: mckey's join / send / receive / leave lifecycle,
 * one state machine per QP, all of them side by side in one loop.  CM
 * events and completions arrive only through fds registered in the loop.
 */
#ifndef EVRDMA_MCAST_H
#define EVRDMA_MCAST_H

#include <stdint.h>

#include "evrdma/error.h"
#include "evrdma/loop.h"
#include "evrdma/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The multicast engine's transports (the word and the choice of one
 * enum per engine: evrdma/transport.h). */
enum evr_mc_transport {
	EVR_MC_RDMA = 0,     /* RDMA CM UD QPs (mckey) */
	EVR_MC_UDP,          /* kernel UDP/IP multicast sockets */
};

/* Zero-initialise, then set by name: every zero is a default. */
struct evr_mcast_opts {
	enum evr_mc_transport transport;
	const char *group;        /* -m: IPv4/IPv6 group or name */
	const char *unmapped;     /* -M: AF_IB MGID (RDMA only; needs -b) */
	const char *bind_addr;    /* -b */
	int sender;               /* -s */
	unsigned nqps;            /* -c; 0 means 1 */
	unsigned count;           /* -C messages per QP */
	unsigned size;            /* -S payload bytes */
	int port_space;           /* -p: RDMA_PS_UDP (0x111) or RDMA_PS_IPOIB */
	int sendonly;             /* -o: send-only full member */
	int no_loopback;          /* -l */
	unsigned resolve_ms;      /* address resolution timeout (2000) */
	unsigned join_ms;         /* limit on joining */
	unsigned settle_ms;       /* pause after joining (upstream: 3 s) */
	unsigned deadline_ms;     /* limit on the transfer phase */
	double rate;              /* sender: messages/s per QP; 0: no pacing */
	uint16_t udp_port;        /* UDP transport: the group's port */
	/* Receivers: what per-sender accounting may hold, whatever the
	 * senders' headers say.  0 means the default; values outside the
	 * limits are clamped, the window is rounded up to a multiple of 64. */
	unsigned window;          /* sequence numbers tracked per sender */
	unsigned max_senders;     /* senders tracked per QP */
};

#define EVR_MC_DEFAULT_SETTLE_MS 3000u
#define EVR_MC_DEFAULT_DEADLINE_MS 30000u
#define EVR_MC_DEFAULT_RESOLVE_MS 2000u
#define EVR_MC_DEFAULT_JOIN_MS 10000u
#define EVR_MC_DEFAULT_UDP_PORT 7174
#define EVR_MC_DEFAULT_WINDOW 4096u
#define EVR_MC_MIN_WINDOW 64u
#define EVR_MC_MAX_WINDOW 1048576u
#define EVR_MC_DEFAULT_MAX_SENDERS 256u
#define EVR_MC_MAX_MAX_SENDERS 4096u

/* The options as the engine runs them, in *out (out may be o): every
 * zero that stands for a default replaced by it (nqps, resolve_ms,
 * join_ms, deadline_ms, udp_port, window, max_senders), window and
 * max_senders clamped to their limits as the engine clamps them, and
 * count 0 when size is (no messages, as upstream).  settle_ms,
 * port_space and rate are taken as they are (0 is a value).  0, or the
 * -EINVAL of evr_mcast_new() for an unknown transport.  Idempotent.
 * Strings are not copied. */
int evr_mcast_opts_resolve(const struct evr_mcast_opts *o,
			   struct evr_mcast_opts *out);

enum evr_mc_phase {
	EVR_MC_PH_STARTING = 0,   /* "mckey: starting client|server" */
	EVR_MC_PH_JOINING,        /* "mckey: joining" */
	EVR_MC_PH_TRANSFER,       /* settle over: sending or receiving */
	EVR_MC_PH_TRANSFER_DONE,  /* every QP has sent or received all */
};

struct evr_mc_joined {
	unsigned qp;
	char dgid[64];
	unsigned mlid, sl;
	uint64_t join_ns;         /* join call to MULTICAST_JOIN */
};

/* A per-sender line of the receiver's report. */
struct evr_mc_sender_report {
	uint32_t sender;
	uint32_t count;           /* as announced in its first header */
	uint64_t unique, duplicates, reordered;
	/* sequence numbers up to the highest received that never came */
	uint64_t lost;
	/* announced ones above the highest received: not received before
	 * the receiver stopped (its -C, the deadline or a cancel) */
	uint64_t not_received;
	/* arrivals the window or more behind the highest (not tracked) */
	uint64_t out_of_window;
};

struct evr_mc_qp_report {
	unsigned qp;
	int joined;
	int timed_out;            /* still transferring at the deadline */
	uint64_t sent, send_completed, received, expected;
	uint64_t join_ns;
	uint64_t foreign;         /* messages without an evrdma header */
	unsigned nsenders;        /* senders tracked (at most max_senders) */
	const struct evr_mc_sender_report *senders;
	uint64_t bad;             /* malformed or out-of-range headers */
	uint64_t untracked;       /* messages from senders beyond max_senders */
	unsigned window, max_senders;  /* the limits in effect */
};

struct evr_mc_failure {
	int err;                  /* negative errno or upstream's code */
	unsigned qp;
	const char *msg;          /* upstream's message text */
	int with_errno;           /* print ": strerror(errno)" after msg */
	int sys_errno;
	char detail[160];         /* preformatted extra text, or "": with
				   * with_errno what failed (an address) */
	int code;                 /* what went wrong, for programs: -errno
				   * or -EVR_E_* (evr_err_name()), e.g.
				   * -EVR_E_NODEV, -EVR_E_RESOLVE */
};

/* Any member may be NULL.  The struct is copied by evr_mcast_new().
 * phase, joined, failure and cm_event may come from inside
 * evr_mcast_start(); done() never does. */
struct evr_mcast_cbs {
	void (*phase)(void *ud, enum evr_mc_phase p);
	void (*joined)(void *ud, const struct evr_mc_joined *j);
	/* CM events worth printing (upstream prints these as they come). */
	void (*cm_event)(void *ud, unsigned qp, const char *event, int status,
			 int is_error);
	/* A failure: the text upstream prints for it.  More may follow. */
	void (*failure)(void *ud, const struct evr_mc_failure *f);
	/* Everything torn down: status is upstream's "return status" (0,
	 * a negative errno, -EINTR after evr_mcast_cancel()).  qps[0..nqps)
	 * is valid during the call.  Exactly once after evr_mcast_start(),
	 * always from the loop, as the engine's last act: the callback may
	 * evr_mcast_free() it. */
	void (*done)(void *ud, int status, unsigned nqps,
		     const struct evr_mc_qp_report *qps);
};

struct evr_mcast;

/* The name of a transport: "rdma", "udp" (mckey --json's "transport");
 * NULL for a value no transport has. */
const char *evr_mc_transport_name(enum evr_mc_transport t);
/* Whether this host can run a transport: 0, -EVR_E_NODEV when it needs
 * an RDMA device and there is none, -EINVAL for an unknown value. */
int evr_mc_transport_check(enum evr_mc_transport t);
/* The transport's own settings of these options, as the engine runs them
 * (after evr_mcast_opts_resolve()): RDMA's "port_space", UDP's
 * "udp_port" (mckey --json's options), in rows[0 ..), at most max.  The
 * number of rows, or -EINVAL for an unknown transport. */
int evr_mcast_settings(const struct evr_mcast_opts *o,
		       struct evr_setting *rows, unsigned max);

/* Create an engine in *out; o and cbs are copied (strings too).  Nothing
 * happens until evr_mcast_start().  Returns 0, -ENOMEM, or -EINVAL for
 * an unknown transport. */
int evr_mcast_new(struct evr_mcast **out, struct evr_loop *loop,
		  const struct evr_mcast_opts *o,
		  const struct evr_mcast_cbs *cbs, void *ud);
/* Resolve and start joining.  An early failure is reported through the
 * callbacks too (failure, then done), as the rest are.  A second call
 * does nothing. */
void evr_mcast_start(struct evr_mcast *m);
/* Leave and tear down every QP; done() follows from the loop with
 * -EINTR unless a failure came first.  failure/cm_event may still report
 * the teardown.  Does nothing once finished.  Allowed from any callback,
 * this engine's own included (then it takes effect from the loop just
 * after the callback returns). */
void evr_mcast_cancel(struct evr_mcast *m);
/* Free the engine and all it owns, at once, with no callback: from
 * outside callbacks, from its own done(), or from another engine's
 * callbacks; not from this engine's other callbacks.  NULL is allowed. */
void evr_mcast_free(struct evr_mcast *m);
/* One line of text for a failure, without a newline: msg, then with
 * with_errno " detail" (if any) and ": strerror(sys_errno)", else
 * ": detail" (if any).  Truncated to len; f NULL gives "no failure". */
void evr_mc_failure_str(const struct evr_mc_failure *f, char *buf,
			size_t len);

#ifdef __cplusplus
}
#endif
#endif
