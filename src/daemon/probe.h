/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One probe: an rstream client run or an mckey run, started every
 * interval_s on the daemon's loop through the public engine API, bounded
 * by timeout_s, its outcome folded into counters that /metrics renders.
 */
#ifndef EVR_PROBED_PROBE_H
#define EVR_PROBED_PROBE_H

#include <ev.h>
#include <stdint.h>

#include "evrdma/loop.h"
#include "evrdma/hostcheck.h"
#include "evrdma/stream.h"
#include "evrdma/mcast.h"
#include "pconf.h"
#include "runlog.h"

/* Why a run failed: a small fixed set, the "reason" label, as one list:
 * X(R_NAME, its label value, the probe types it can happen to (T_RS
 * rstream, T_MC mckey), the failure codes of an rstream run it comes from
 * (reason.h: positive errno or EVR_E_*; (0): set by the probe itself)).
 * Label values and their order are the exposition's: only ever added. */
#define T_RS (1u << PROBE_RSTREAM)
#define T_MC (1u << PROBE_MCKEY)
#define PROBE_REASONS(X) \
	X(REFUSED, "refused", T_RS, (ECONNREFUSED)) \
	/* timeout_s passed (or mckey's deadline) */ \
	X(TIMEOUT, "timeout", T_RS | T_MC, (0)) \
	X(STALL, "stall", T_RS, (EVR_E_STALL)) \
	X(EOF, "eof", T_RS, (EVR_E_EOF)) \
	X(RESET, "reset", T_RS, (ECONNRESET, EPIPE, ECONNABORTED)) \
	/* network/host unreachable, connect timed out */ \
	X(UNREACHABLE, "unreachable", T_RS, \
	  (ENETUNREACH, EHOSTUNREACH, ETIMEDOUT, EADDRNOTAVAIL)) \
	/* a name: no such name, or no answer in time */ \
	X(RESOLVE, "resolve", T_RS | T_MC, (EVR_E_RESOLVE)) \
	X(VERIFY, "verify", T_RS, (EVR_E_VERIFY)) \
	X(REJECTED, "rejected", T_RS, (EVR_E_REJECTED)) \
	/* no RDMA device (at all, or for the bind address) */ \
	X(NODEV, "nodev", T_RS | T_MC, (EVR_E_NODEV, ENODEV)) \
	/* mckey: a QP did not join */ \
	X(JOIN, "join", T_MC, (0)) \
	/* anything else (extra, proto, notsup, cancelled, ...) */ \
	X(ERROR, "error", T_RS | T_MC, (0)) \
	/* this host's RDMA device went away, or its port went down, \
	 * during the run: the host's RNIC, not the network */ \
	X(DEVGONE, "devgone", T_RS | T_MC, (EVR_E_DEVGONE)) \
	X(PORTDOWN, "portdown", T_RS | T_MC, (EVR_E_PORTDOWN))

enum probe_reason {
#define PROBE__R_ENUM(e, name, types, codes) R_##e,
	PROBE_REASONS(PROBE__R_ENUM)
#undef PROBE__R_ENUM
	R_MAX
};

extern const char *const probe_reason_names[R_MAX];
/* Whether a reason can happen to a probe of this type. */
int probe_reason_applies(enum probe_type t, enum probe_reason r);
/* The reason an rstream run failed with f. */
enum probe_reason probe_stream_reason(const struct evr_failure *f);

/* Latency histogram bounds, seconds (+Inf is implied); the label le="%g"
 * of each. */
#define PROBE_NBUCKETS 16
extern const double probe_bucket_le[PROBE_NBUCKETS];

/* n round trips in [lo_ns, hi_ns] into a histogram of PROBE_NBUCKETS + 1
 * (not cumulative), its sum (seconds) and count: a range counts in the
 * bucket of its midpoint (the engine's ranges are exact samples, or 0.4 %
 * wide past 10^6 samples a run). */
void probe_hist_add(uint64_t *hist, double *sum, uint64_t *count,
		    uint64_t lo_ns, uint64_t hi_ns, uint64_t n);

/* The round trip's parts (rstream --split: evr_result.split), coarser:
 * two histograms a probe (the network's part, the responder's hold) and
 * one for the agent (its own delay) cost 2 x 11 series a peer. */
#define SPLIT_NBUCKETS 8
extern const double split_bucket_le[SPLIT_NBUCKETS];

struct split_hist {
	uint64_t b[SPLIT_NBUCKETS + 1];    /* not cumulative; +Inf last */
	double sum;                        /* s */
	uint64_t count;
};

void split_hist_add(struct split_hist *h, uint64_t lo_ns, uint64_t hi_ns,
		    uint64_t n);
void split_hist_fold(struct split_hist *into, const struct split_hist *h);
/* This agent's own delay, over every rstream probe's iterations that had
 * one (TCP: the kernel's receipt of the echo to its read). */
const struct split_hist *probe_local_delay(void);

struct probe_stats {
	uint64_t runs, successes;
	uint64_t failures[R_MAX];
	double last_success_ts;     /* wall clock, s; 0 = never */
	double last_duration_s;     /* the last finished run */
	int up;                     /* the last run succeeded */
	/* rstream */
	/* every iteration's round trip of every successful run */
	uint64_t hist[PROBE_NBUCKETS + 1]; /* not cumulative; +Inf last */
	double hist_sum;                   /* s */
	uint64_t hist_count;
	int have_lat;               /* last_lat is set */
	struct evr_lat_stats last_lat;
	double rtt_sum;             /* all iterations of all runs, s */
	uint64_t rtt_count;
	double throughput_Bps;      /* bytes/s, last successful run */
	/* the parts of those round trips, where the responder stamps its
	 * echoes (an evrdma responder): have_split once one run had them */
	int have_split;
	struct split_hist net, hold;
	uint64_t split_rejected;
	/* mckey */
	uint64_t mc_sent, mc_received, mc_lost, mc_shortfall;
	uint64_t mc_bad;            /* malformed or out-of-range headers */
	uint64_t mc_untracked;      /* untracked senders, outside the window */
	double mc_join_s;           /* last run, slowest QP; -1 = none */
	/* the status page's: the last PROBE_RECENT runs' outcomes, a bit a
	 * run (1 failed, the newest lowest), recent_n of them; the last
	 * failure's reason, -1 before one */
	uint32_t recent_fail;
	unsigned recent_n;
	int last_reason;
};

/* runs a probe's loss on the status page is counted over */
#define PROBE_RECENT 16

/* Where a probe's run is, one state at a time (traced in the debug log):
 *   IDLE       no run: the next tick starts one
 *   WAITING    queued for its path (another of the agent's runs on it)
 *   RUNNING    started (names, host checks, the engine), done() not yet
 *   TIMED_OUT  running, and cancelled at timeout_s: its done() is a
 *              timeout whatever it says */
#define PROBE_RUN_STATES(X) X(IDLE) X(WAITING) X(RUNNING) X(TIMED_OUT)
enum probe_run_state {
#define X(s) PR_##s,
	PROBE_RUN_STATES(X)
#undef X
};
const char *probe_run_state_name(enum probe_run_state s);

/* What the run in flight has reported so far: cleared when a run starts,
 * folded into the probe's counters when it is over. */
struct probe_run {
	uint64_t t0_ns;
	enum probe_reason reason;   /* of a failure */
	char why[256];              /* its failure text */
	int have, have_lat;         /* rstream: a result came, with latency */
	uint64_t elapsed_ns, bytes;
	uint32_t iters;
	struct evr_lat_stats lat;
	/* the run's samples (evr_result_lat_walk), folded into st.hist if
	 * the run succeeds */
	uint64_t hist[PROBE_NBUCKETS + 1];
	double hist_sum;
	uint64_t hist_count;
	int have_split;
	struct split_hist net, hold, self;
	uint64_t rejected;
	/* mckey */
	int nodev;          /* no device serves the address */
	int dev;            /* -EVR_E_DEVGONE or -EVR_E_PORTDOWN */
	int local;          /* a bind to an address this host lacks */
	double join_s;      /* the slowest join, -1 before one */
	/* its log for the status page (runlog.h), handed to the agent's
	 * ring (probe_set_runs()) when the run is over; NULL: none kept */
	struct runlog *log;
};

struct probe {
	const struct probe_cfg *cfg;  /* owned by the daemon's current pconf */
	struct evr_loop *loop;
	struct ev_loop *evl;
	struct probe_stats st;
	enum probe_run_state state;
	int failing;                /* logged as failing (log on change) */
	/* a run */
	struct evr_stream *rs;
	struct evr_mcast *mc;
	struct probe_run run;
	/* the host checks for the probe's run (evrdma/hostcheck.h), made
	 * before each run: whether this host can do what the probe asks,
	 * apart from the network */
	struct evr_hc_report hc;
	int hc_valid;
	/* the run's names (0: host or group, 1: bind), looked up on the
	 * loop's shared table before the engine starts, and their numeric
	 * addresses, which the engine is given ("" for a number) */
	struct evr_lookup *lk[2];
	char num[2][128];
	ev_timer tick_w, timeout_w, reap_w;
	/* the path its runs take (an rstream probe's target), shared with
	 * the agent's other probes of it: one run on a path at a time */
	struct probe_path *path;
	struct probe *wait_next;    /* in the path's queue (WAITING) */
	/* its runs in the agent's ring: the last one's id and the last
	 * failed one's (0: none yet), for the status page's links */
	uint64_t last_run_id, last_fail_id;
};

/* A run started and its done() not called yet (RUNNING or TIMED_OUT). */
static inline int probe_running(const struct probe *p)
{
	return p->state == PR_RUNNING || p->state == PR_TIMED_OUT;
}

/* The agent's own runs: how often a run waited for another of its runs
 * on the same path, and how often a tick found the probe's last run (or
 * its wait) not over and was skipped: both delay what the agent sees. */
struct probe_agent_stats {
	uint64_t deferred, skipped;
};
const struct probe_agent_stats *probe_agent_stats(void);

/* The ring every probe's finished runs go to, with their logs (NULL,
 * the default: no logs are written).  The agent's, as the paths. */
void probe_set_runs(struct runring *r);

int probe_new(struct probe **out, struct evr_loop *loop,
	      const struct probe_cfg *cfg);
/* First run now, then every interval_s. */
void probe_start(struct probe *p);
/* First run in delay seconds, then every interval_s. */
void probe_start_in(struct probe *p, double delay);
/* One run now, and no more (a sampling mesh decides each run), unless one
 * is in flight: 0, or -EBUSY. */
int probe_run_once(struct probe *p);
/* Run the host checks for the probe's run into p->hc (before each run). */
void probe_hostcheck(struct probe *p);
/* Cancel a run in flight, stop every watcher, free. */
void probe_free(struct probe *p);

#endif
