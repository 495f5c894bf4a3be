/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A probe's life: a repeating tick starts a run (an rstream client engine
 * or an mckey engine on the daemon's loop), a timeout cancels a run that
 * takes too long, and the engine's done() callback folds the outcome into
 * the counters.  An engine is never freed from inside its own callback:
 * done() arms a zero-delay reap timer that frees it from the loop.
 */
#include "config.h"

#include <arpa/inet.h>

#include <errno.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "probe.h"
#include "reason.h"

const char *const probe_reason_names[R_MAX] = {
#define NAME(e, name, types, codes) name,
	PROBE_REASONS(NAME)
#undef NAME
};

static const unsigned reason_types[R_MAX] = {
#define TYPES(e, name, types, codes) types,
	PROBE_REASONS(TYPES)
#undef TYPES
};

static const int reason_codes[R_MAX][REASON_MAXCODES] = {
#define CODES(e, name, types, codes) REASON_CODES(codes),
	PROBE_REASONS(CODES)
#undef CODES
};

int probe_reason_applies(enum probe_type t, enum probe_reason r)
{
	return !!(reason_types[r] & (1u << t));
}

/* 25 us to 1 s: loopback TCP round trips to slow WAN paths. */
const double probe_bucket_le[PROBE_NBUCKETS] = {
	0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

enum probe_reason probe_stream_reason(const struct evr_failure *f)
{
	/* A failure before any packet left (socket, bind to an address the
	 * host lacks) is this host's, not the network's: rstream's exit 5. */
	if (f->phase == EVR_PH_SETUP && f->err != -EVR_E_RESOLVE &&
	    f->err != -EVR_E_NODEV && f->err != -ENODEV)
		return R_ERROR;
	/* a completion that blamed the peer or its path (RDMA: our
	 * requests went unacknowledged) is the network's, as a connect
	 * that timed out, not this host's "error" */
	if (f->err == -EIO && f->detail == EVR_EIO_PEER)
		return R_UNREACHABLE;
	return reason_by_code(reason_codes, R_MAX, f->err, R_ERROR);
}

/* n samples in [lo_ns, hi_ns] into the bucket of their midpoint among
 * nb bounds le (hist has nb + 1: +Inf last). */
static void hist_add(const double *le, int nb, uint64_t *hist, double *sum,
		     uint64_t *count, uint64_t lo_ns, uint64_t hi_ns,
		     uint64_t n)
{
	double secs = (lo_ns + (hi_ns - lo_ns) / 2) / 1e9;
	int i;

	for (i = 0; i < nb; i++)
		if (secs <= le[i])
			break;
	hist[i] += n;
	*sum += secs * n;
	*count += n;
}

void probe_hist_add(uint64_t *hist, double *sum, uint64_t *count,
		    uint64_t lo_ns, uint64_t hi_ns, uint64_t n)
{
	hist_add(probe_bucket_le, PROBE_NBUCKETS, hist, sum, count, lo_ns,
		 hi_ns, n);
}

const double split_bucket_le[SPLIT_NBUCKETS] = {
	0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.01, 0.1, 1,
};

void split_hist_add(struct split_hist *h, uint64_t lo_ns, uint64_t hi_ns,
		    uint64_t n)
{
	hist_add(split_bucket_le, SPLIT_NBUCKETS, h->b, &h->sum, &h->count,
		 lo_ns, hi_ns, n);
}

void split_hist_fold(struct split_hist *into, const struct split_hist *h)
{
	int i;

	for (i = 0; i <= SPLIT_NBUCKETS; i++)
		into->b[i] += h->b[i];
	into->sum += h->sum;
	into->count += h->count;
}

const char *probe_run_state_name(enum probe_run_state s)
{
#define X(n) #n,
	static const char *const names[] = { PROBE_RUN_STATES(X) };
#undef X

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* The agent's own delay: one host, one histogram for all its probes. */
static struct split_hist local_delay;

const struct split_hist *probe_local_delay(void)
{
	return &local_delay;
}

static void path_release(struct probe *p);

/* ------------------------------------------------------ the run's log */

/* The agent's ring of finished runs (runlog.h), or NULL: no logs. */
static struct runring *ring;

void probe_set_runs(struct runring *r)
{
	ring = r;
}

/* A line of the run's log, if it keeps one. */
#define RLOG(p, ...) runlog_add((p)->run.log, evr_now_ns(), __VA_ARGS__)

static void copy_name(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* The run just over, its log with it, into the ring: its id. */
static uint64_t run_record(struct probe *p, int ok)
{
	struct runrec rec;

	memset(&rec, 0, sizeof(rec));
	copy_name(rec.probe, sizeof(rec.probe), p->cfg->name);
	copy_name(rec.peer, sizeof(rec.peer), p->cfg->peer);
	rec.duration_s = p->st.last_duration_s;
	rec.start_ts = wall_now() - rec.duration_s;
	rec.ok = ok;
	rec.reason = ok ? NULL : probe_reason_names[p->run.reason];
	if (ok && p->run.have_lat) {
		rec.p50_ns = p->run.lat.p50_ns;
		rec.p99_ns = p->run.lat.p99_ns;
	}
	if (ok)
		RLOG(p, "ok in %.6f s", rec.duration_s);
	else
		RLOG(p, "FAILED (%s) after %.6f s: %s", rec.reason,
		     rec.duration_s, p->run.why);
	rec.log = p->run.log;
	p->run.log = NULL;
	return runring_add(ring, &rec);
}

/* The outcome in the status page's figures: the recent runs' loss, the
 * last failure's reason, the ids its links name. */
static void run_note(struct probe *p, int ok)
{
	struct probe_stats *s = &p->st;

	s->recent_fail = (s->recent_fail << 1) | !ok;
	if (s->recent_n < PROBE_RECENT)
		s->recent_n++;
	if (!ok)
		s->last_reason = (int)p->run.reason;
	if (!ring)
		return;
	p->last_run_id = run_record(p, ok);
	if (!ok)
		p->last_fail_id = p->last_run_id;
}

/* A run is over, well (ok) or not: count it, log a change of state. */
static void run_over(struct probe *p, int ok)
{
	struct probe_stats *s = &p->st;
	const char *name = p->cfg->name;

	p->state = PR_IDLE;
	path_release(p);
	ev_timer_stop(p->evl, &p->timeout_w);
	s->runs++;
	s->last_duration_s = (evr_now_ns() - p->run.t0_ns) / 1e9;
	s->up = ok;
	run_note(p, ok);
	if (ok) {
		s->successes++;
		s->last_success_ts = wall_now();
		if (p->failing)
			plog(PLOG_INFO, "probe \"%s\": recovered", name);
		else
			plog(PLOG_DEBUG, "probe \"%s\": ok in %.3f s", name,
			     s->last_duration_s);
		p->failing = 0;
		return;
	}
	s->failures[p->run.reason]++;
	if (!p->failing)
		plog(PLOG_WARN, "probe \"%s\": failing (%s): %s", name,
		     probe_reason_names[p->run.reason], p->run.why);
	else
		plog(PLOG_DEBUG, "probe \"%s\": failed (%s): %s", name,
		     probe_reason_names[p->run.reason], p->run.why);
	p->failing = 1;
}

static void reap_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct probe *p = w->data;

	if (p->rs)
		evr_stream_free(p->rs);
	if (p->mc)
		evr_mcast_free(p->mc);
	p->rs = NULL;
	p->mc = NULL;
}

static void reap_later(struct probe *p)
{
	ev_timer_stop(p->evl, &p->reap_w);
	ev_timer_set(&p->reap_w, 0., 0.);
	ev_timer_start(p->evl, &p->reap_w);
}

/* ------------------------------------------------------------ rstream */

static void rs_sample(void *ud, uint64_t lo_ns, uint64_t hi_ns, uint64_t n)
{
	struct probe *p = ud;

	probe_hist_add(p->run.hist, &p->run.hist_sum, &p->run.hist_count,
		       lo_ns, hi_ns, n);
}

static void rs_net(void *ud, uint64_t lo_ns, uint64_t hi_ns, uint64_t n)
{
	split_hist_add(&((struct probe *)ud)->run.net, lo_ns, hi_ns, n);
}

static void rs_hold(void *ud, uint64_t lo_ns, uint64_t hi_ns, uint64_t n)
{
	split_hist_add(&((struct probe *)ud)->run.hold, lo_ns, hi_ns, n);
}

static void rs_local(void *ud, uint64_t lo_ns, uint64_t hi_ns, uint64_t n)
{
	split_hist_add(&((struct probe *)ud)->run.self, lo_ns, hi_ns, n);
}

/* What the run measured, in its log. */
static void rs_log_result(struct probe *p, const struct evr_result *r)
{
	RLOG(p, "measured: test %s, %u iterations of %u x %u bytes, %llu "
	     "bytes in %.6f s%s", r->name ? r->name : "?", r->iters,
	     r->count, r->size, (unsigned long long)r->bytes,
	     r->elapsed_ns / 1e9, r->split ? "; the responder stamped its "
	     "echoes (negotiated, split round trips)" : "");
	if (r->lat && r->lat->samples)
		RLOG(p, "round trips: min %.1f us, p50 %.1f us, p90 %.1f us, "
		     "p99 %.1f us, max %.1f us (%llu samples)",
		     r->lat->min_ns / 1e3, r->lat->p50_ns / 1e3,
		     r->lat->p90_ns / 1e3, r->lat->p99_ns / 1e3,
		     r->lat->max_ns / 1e3,
		     (unsigned long long)r->lat->samples);
}

/* A connection set up: where to, what it got. */
static void rs_info(void *ud, const struct evr_info *i)
{
	struct probe *p = ud;
	const struct evr_conn_settings *cs = i->settings;
	char rows[256];
	size_t n = 0;
	unsigned k;

	if (i->kind != EVR_INFO_SETTINGS || !cs)
		return;
	rows[0] = '\0';
	for (k = 0; k < cs->nrows && n < sizeof(rows); k++)
		n += snprintf(rows + n, sizeof(rows) - n, " %s=%lld",
			      cs->rows[k].key, (long long)cs->rows[k].value);
	RLOG(p, "connected: %s local %s to peer %s; settings:%s",
	     evr_stream_transport_name(cs->transport), cs->local, cs->peer,
	     rows[0] ? rows : " none");
}

/* The one test's row: held until done() says the run as a whole went
 * well (a close that fails after the row is still a failed run).  Its
 * samples are only valid now: walked into the run's own histogram. */
static void rs_result(void *ud, const struct evr_result *r)
{
	struct probe *p = ud;

	memset(p->run.hist, 0, sizeof(p->run.hist));
	p->run.hist_sum = 0;
	p->run.hist_count = 0;
	evr_result_lat_walk(r, rs_sample, p);
	memset(&p->run.net, 0, sizeof(p->run.net));
	memset(&p->run.hold, 0, sizeof(p->run.hold));
	memset(&p->run.self, 0, sizeof(p->run.self));
	p->run.have_split = r->split != NULL;
	p->run.rejected = r->split ? r->split->rejected : 0;
	evr_result_split_walk(r, EVR_SPLIT_NET, rs_net, p);
	evr_result_split_walk(r, EVR_SPLIT_PEER, rs_hold, p);
	evr_result_split_walk(r, EVR_SPLIT_LOCAL, rs_local, p);

	p->run.have = 1;
	p->run.elapsed_ns = r->elapsed_ns;
	p->run.iters = r->iters;
	p->run.bytes = r->bytes;
	p->run.have_lat = r->lat != NULL;
	if (r->lat)
		p->run.lat = *r->lat;
	rs_log_result(p, r);
}

/* An rstream run with a result: its round trips, throughput, split and
 * latency into the probe's totals. */
static void rs_fold(struct probe *p)
{
	struct probe_stats *s = &p->st;
	double secs = p->run.elapsed_ns / 1e9;
	int i;

	/* every iteration's round trip of this run */
	for (i = 0; i <= PROBE_NBUCKETS; i++)
		s->hist[i] += p->run.hist[i];
	s->hist_sum += p->run.hist_sum;
	s->hist_count += p->run.hist_count;
	s->throughput_Bps = p->run.bytes / secs;
	if (p->run.have_split) {
		s->have_split = 1;
		split_hist_fold(&s->net, &p->run.net);
		split_hist_fold(&s->hold, &p->run.hold);
		split_hist_fold(&local_delay, &p->run.self);
		s->split_rejected += p->run.rejected;
	}
	if (p->run.have_lat && p->run.lat.samples) {
		s->have_lat = 1;
		s->last_lat = p->run.lat;
		s->rtt_sum += p->run.lat.mean_ns / 1e9 * p->run.lat.samples;
		s->rtt_count += p->run.lat.samples;
	}
}

/* Where a failed run was: its phase and call, how far it came. */
static void rs_log_failure(struct probe *p, const struct evr_failure *f)
{
	RLOG(p, "failed in phase %s%s%s, peer %s, plan %snegotiated, "
	     "%llu of %llu iterations, %llu bytes", evr_phase_name(f->phase),
	     f->where ? " at " : "", f->where ? f->where : "",
	     f->peer[0] ? f->peer : "-",
	     f->negotiated ? "" : "not ", (unsigned long long)f->iters_done,
	     (unsigned long long)f->iters_total,
	     (unsigned long long)f->bytes_done);
}

/* An rstream run without a result: why, from the timeout, the failure f
 * or the status. */
static void rs_failed(struct probe *p, int status, const struct evr_failure *f)
{
	if (p->state == PR_TIMED_OUT) {
		p->run.reason = R_TIMEOUT;
		snprintf(p->run.why, sizeof(p->run.why),
			 "no result within %.1f s", p->cfg->timeout_s);
	} else if (f) {
		p->run.reason = probe_stream_reason(f);
		evr_failure_str(f, p->run.why, sizeof(p->run.why));
		rs_log_failure(p, f);
	} else {
		p->run.reason = R_ERROR;
		snprintf(p->run.why, sizeof(p->run.why),
			 "the run ended without a result (status %d)",
			 status);
	}
}

static void rs_done(void *ud, int status, const struct evr_failure *f,
		    int in_child)
{
	struct probe *p = ud;

	if (!probe_running(p))
		return;
	if (!status && p->run.have && p->run.iters && p->run.elapsed_ns) {
		rs_fold(p);
		run_over(p, 1);
	} else {
		rs_failed(p, status, f);
		run_over(p, 0);
	}
	reap_later(p);
}

static void rs_opts(const struct probe_cfg *c, struct evr_stream_opts *o)
{
	/* the configuration's: what every probe runs, its kind's test,
	 * its keys (pconf.c); "negotiate": true sends the plan even when
	 * verifying, which the CLI does not by default, as upstream's -T v
	 * server checks the first sync's pattern: without the plan a plain
	 * server runs its own 64-byte series, and a verifying probe stalls
	 * or ends a test the server had not */
	*o = c->o;
	o->host = c->host;
	o->bind_addr = c->bind;
	o->port = c->port;
	o->transport = c->transport;
	/* The watchdog checks every stall_ms / 4 and starts counting at
	 * its first check: at half of timeout_s, a silent peer is reported
	 * as a stall at about 5/8 of it, well before the hard timeout. */
	o->stall_ms = (unsigned)(c->timeout_s * 500);
	if (o->stall_ms < 10)
		o->stall_ms = 10;
	/* an evrdma responder stamps its echoes with its hold: the round
	 * trip in parts (host or network); others run as without */
	o->lat_split = o->force_negotiate && !o->verify;
	/* what a connection got, for the run's log (once per run) */
	o->report_settings = 1;
}

static void start_rstream(struct probe *p)
{
	static const struct evr_stream_cbs cbs = {
		.result = rs_result,
		.info = rs_info,
		.done = rs_done,
	};
	struct evr_stream_opts o;
	struct evr_failure f;
	int ret;

	rs_opts(p->cfg, &o);
	if (p->num[0][0])
		o.host = p->num[0];
	if (p->num[1][0])
		o.bind_addr = p->num[1];
	RLOG(p, "connecting: %s to %s port %s%s%s, %s%s",
	     evr_stream_transport_name(o.transport), o.host, o.port,
	     o.bind_addr ? " from " : "", o.bind_addr ? o.bind_addr : "",
	     o.no_negotiate ? "no plan sent" : o.force_negotiate ?
	     "the plan sent (negotiated)" : "the plan sent if the server "
	     "knows it", o.verify ? ", verifying" : "");
	ret = evr_stream_new(&p->rs, p->loop, &o, &cbs, p);
	if (ret) {
		p->rs = NULL;
		p->run.reason = R_ERROR;
		snprintf(p->run.why, sizeof(p->run.why), "cannot create the engine: %s",
			 strerror(-ret));
		run_over(p, 0);
		return;
	}
	ret = evr_stream_start(p->rs, &f);
	if (ret && probe_running(p)) {
		p->run.reason = probe_stream_reason(&f);
		evr_failure_str(&f, p->run.why, sizeof(p->run.why));
		rs_log_failure(p, &f);
		run_over(p, 0);
		reap_later(p);
	}
}

/* ------------------------------------------------------------- mckey */

static void mc_joined(void *ud, const struct evr_mc_joined *j)
{
	struct probe *p = ud;
	double s = j->join_ns / 1e9;

	if (s > p->run.join_s)
		p->run.join_s = s;
	RLOG(p, "joined the group in %.6f s", s);
}

static void mc_failure(void *ud, const struct evr_mc_failure *f)
{
	struct probe *p = ud;

	if (p->run.why[0])
		return; /* the first says why */
	evr_mc_failure_str(f, p->run.why, sizeof(p->run.why));
	if (f->code == -EVR_E_NODEV)
		p->run.nodev = 1;
	if (f->code == -EVR_E_DEVGONE || f->code == -EVR_E_PORTDOWN)
		p->run.dev = f->code;
	/* the bind address is not this host's (a bind: EADDRNOTAVAIL; a
	 * join on the interface of that address: ENODEV): its own
	 * configuration, not the group's or the fabric's (it never joins,
	 * and was counted as "join") */
	if (f->code == -EADDRNOTAVAIL || f->code == -ENODEV)
		p->run.local = 1;
}

/* One QP's report q into the probe's totals. */
static void mc_fold(struct probe *p, const struct evr_mc_qp_report *q)
{
	struct probe_stats *s = &p->st;
	unsigned j;

	s->mc_sent += q->sent;
	s->mc_received += q->received;
	s->mc_bad += q->bad;
	s->mc_untracked += q->untracked;
	for (j = 0; j < q->nsenders; j++)
		s->mc_untracked += q->senders[j].out_of_window;
	/* A QP that never joined was never in a position to
	 * receive: its shortfall is the failure's, not loss.  Lost
	 * is what the senders' headers show never came (gaps below
	 * the highest received); the shortfall against the probe's
	 * count also holds what was never sent or came too late. */
	if (!p->cfg->sender && q->joined) {
		for (j = 0; j < q->nsenders; j++)
			s->mc_lost += q->senders[j].lost;
		if (q->expected > q->received)
			s->mc_shortfall += q->expected - q->received;
	}
}

/* Why an mckey run failed: its device's state first, then a deadline
 * missed, no device, its own configuration, a QP that never joined. */
static enum probe_reason mc_reason(const struct probe *p, int status,
				   int timed_out, int late, int all_joined)
{
	if (p->run.dev)
		return p->run.dev == -EVR_E_DEVGONE ? R_DEVGONE : R_PORTDOWN;
	if (timed_out || late || status == -ETIMEDOUT)
		return R_TIMEOUT;
	if (p->run.nodev)
		return R_NODEV;
	if (p->run.local)
		return R_ERROR;
	if (!all_joined)
		return R_JOIN;
	return R_ERROR;
}

/* An mckey run that failed: its reason, and its words unless the engine
 * said why first (a timeout's own words win). */
static void mc_failed(struct probe *p, int status, int timed_out, int late,
		      int all_joined)
{
	p->run.reason = mc_reason(p, status, timed_out, late, all_joined);
	if (timed_out || !p->run.why[0])
		snprintf(p->run.why, sizeof(p->run.why), "%s (status %d)",
			 timed_out ? "no result within timeout_s" :
			 late ? "not complete by the deadline" :
			 "the run failed", status);
}

static void mc_done(void *ud, int status, unsigned n,
		    const struct evr_mc_qp_report *q)
{
	struct probe *p = ud;
	int all_joined = n > 0, late = 0;
	int timed_out = p->state == PR_TIMED_OUT;
	unsigned i;

	if (!probe_running(p))
		return;
	for (i = 0; i < n; i++) {
		mc_fold(p, &q[i]);
		if (!q[i].joined)
			all_joined = 0;
		if (q[i].timed_out)
			late = 1;
	}
	p->st.mc_join_s = p->run.join_s;
	for (i = 0; i < n; i++)
		RLOG(p, "QP %u: %sjoined, sent %llu, received %llu of %llu",
		     i, q[i].joined ? "" : "not ",
		     (unsigned long long)q[i].sent,
		     (unsigned long long)q[i].received,
		     (unsigned long long)q[i].expected);
	if (!status && !timed_out) {
		run_over(p, 1);
	} else {
		mc_failed(p, status, timed_out, late, all_joined);
		run_over(p, 0);
	}
	reap_later(p);
}

static void mc_opts(const struct probe_cfg *c, struct evr_mcast_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->transport = c->mc_transport;
	o->group = c->group;
	o->bind_addr = c->bind;
	o->sender = c->sender;
	o->nqps = 1;
	o->count = c->mc_count;
	o->size = c->mc_size;
	o->port_space = RDMA_PS_UDP;
	o->settle_ms = (unsigned)(c->settle_s * 1000);
	o->deadline_ms = (unsigned)(c->timeout_s * 1000);
	o->udp_port = (uint16_t)c->udp_port;
}

static void start_mckey(struct probe *p)
{
	static const struct evr_mcast_cbs cbs = {
		.joined = mc_joined,
		.failure = mc_failure,
		.done = mc_done,
	};
	struct evr_mcast_opts o;
	int ret;

	mc_opts(p->cfg, &o);
	if (p->num[0][0])
		o.group = p->num[0];
	if (p->num[1][0])
		o.bind_addr = p->num[1];
	ret = evr_mcast_new(&p->mc, p->loop, &o, &cbs, p);
	if (ret) {
		p->mc = NULL;
		p->run.reason = R_ERROR;
		snprintf(p->run.why, sizeof(p->run.why), "cannot create the engine: %s",
			 strerror(-ret));
		run_over(p, 0);
		return;
	}
	RLOG(p, "joining: %s group %s%s%s as a %s",
	     evr_mc_transport_name(o.transport), o.group,
	     o.bind_addr ? " on " : "", o.bind_addr ? o.bind_addr : "",
	     o.sender ? "sender" : "receiver");
	evr_mcast_start(p->mc); /* an early failure arrives via done() */
}

/* ------------------------------------------------------- host checks */

/* What this host lacks for the probe's run (locked memory, the device
 * nodes, the bind address's device, port and GID), as rstream --check
 * says it, so that "this host cannot do RDMA" stands apart from "the
 * network is bad".  A TCP or UDP probe needs none of it: every check is
 * skipped.  Cheap (a few files under /sys and /proc, no device opened):
 * before every run. */
void probe_hostcheck(struct probe *p)
{
	const struct probe_cfg *c = p->cfg;
	struct evr_hc_need need;
	unsigned char a[sizeof(struct in6_addr)];

	if (c->type == PROBE_RSTREAM) {
		struct evr_stream_opts o;

		rs_opts(c, &o);
		evr_stream_need(&o, &need);
	} else {
		struct evr_mcast_opts o;

		mc_opts(c, &o);
		evr_mcast_need(&o, &need);
	}
	/* the descriptors are the daemon's, not one probe's: no nofile
	 * check per probe */
	need.fds = 0;
	/* a bind given as a name: any device will do for the checks */
	if (need.addr && inet_pton(AF_INET, need.addr, a) != 1 &&
	    inet_pton(AF_INET6, need.addr, a) != 1)
		need.addr = NULL;
	p->hc_valid = evr_hostcheck_run(NULL, &need, &p->hc) == 0;
}

/* ------------------------------------------------------------ names */

/* The run's names: host (rstream) or group (mckey), and bind. */
static const char *name_of(const struct probe *p, unsigned i)
{
	if (i)
		return p->cfg->bind;
	return p->cfg->type == PROBE_RSTREAM ? p->cfg->host : p->cfg->group;
}

/* A number (getaddrinfo with it does not block): nothing to look up. */
static int numeric(const char *host)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *res;

	if (!host || getaddrinfo(host, NULL, &hints, &res))
		return !host;
	freeaddrinfo(res);
	return 1;
}

static void lookups_stop(struct probe *p)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		evr_lookup_free(p->lk[i]);
		p->lk[i] = NULL;
	}
}

/* Name i did not resolve (what: why): the run fails as "resolve", in the
 * words the engine used when it looked names up itself. */
static void name_failed(struct probe *p, unsigned i, const char *what)
{
	const char *name = name_of(p, i);

	lookups_stop(p);
	p->run.reason = R_RESOLVE;
	if (p->cfg->type == PROBE_RSTREAM)
		snprintf(p->run.why, sizeof(p->run.why), "cannot resolve %s port %s: "
			 "%s", name, i ? "0" : p->cfg->port, what);
	else
		snprintf(p->run.why, sizeof(p->run.why), "cannot resolve %s %s: %s",
			 i ? "bind address" : "group", name, what);
	run_over(p, 0);
}

static void start_engine(struct probe *p)
{
	if (p->cfg->type == PROBE_RSTREAM)
		start_rstream(p);
	else
		start_mckey(p);
}

static void looked_up(struct probe *p, unsigned i, int err,
		      const struct sockaddr *sa, socklen_t len)
{
	char what[160];

	/* sa is the lookup's: read it before the lookup goes */
	if (!err && getnameinfo(sa, len, p->num[i], sizeof(p->num[i]), NULL,
				0, NI_NUMERICHOST))
		err = EAI_NONAME;
	evr_lookup_free(p->lk[i]);
	p->lk[i] = NULL;
	if (!probe_running(p))
		return;
	if (err) {
		snprintf(what, sizeof(what), "getaddrinfo: %s",
			 gai_strerror(err));
		name_failed(p, i, what);
		return;
	}
	RLOG(p, "resolved %s to %s", name_of(p, i), p->num[i]);
	if (!p->lk[0] && !p->lk[1])
		start_engine(p);
}

static void name0_cb(void *ud, int err, const struct sockaddr *sa,
		     socklen_t len)
{
	looked_up(ud, 0, err, sa, len);
}

static void name1_cb(void *ud, int err, const struct sockaddr *sa,
		     socklen_t len)
{
	looked_up(ud, 1, err, sa, len);
}

/* Look the run's names up (the loop's table answers at once what it
 * knows, and asks once for a name every probe uses): the engine starts
 * when both are known, and is given numbers. */
static void lookups_start(struct probe *p)
{
	static const evr_lookup_fn cbs[2] = { name0_cb, name1_cb };
	char what[64];
	unsigned i;
	int ret;

	p->num[0][0] = p->num[1][0] = '\0';
	for (i = 0; i < 2; i++) {
		if (numeric(name_of(p, i)))
			continue;
		RLOG(p, "resolving %s", name_of(p, i));
		ret = evr_lookup_start(&p->lk[i], p->loop, name_of(p, i),
				       AF_UNSPEC, cbs[i], p);
		if (ret) {
			p->lk[i] = NULL;
			snprintf(what, sizeof(what), "the resolver: %s",
				 strerror(-ret));
			name_failed(p, i, what);
			return;
		}
	}
	if (!p->lk[0] && !p->lk[1])
		start_engine(p);
}

/* ------------------------------------------------------------ timers */

static void timeout_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct probe *p = w->data;

	if (!probe_running(p))
		return;
	if (p->lk[0] || p->lk[1]) {
		/* the name server's silence, not the path's */
		char what[96];
		unsigned i = p->lk[0] ? 0 : 1;

		snprintf(what, sizeof(what), "no answer within timeout_s "
			 "(%.1f s)", p->cfg->timeout_s);
		name_failed(p, i, what);
		return;
	}
	p->state = PR_TIMED_OUT;
	RLOG(p, "timeout_s (%.1f s) passed: cancelled", p->cfg->timeout_s);
	if (p->rs)
		evr_stream_cancel(p->rs);
	else if (p->mc)
		evr_mcast_cancel(p->mc);
}

/* The host checks' verdict in the run's log: each one that failed. */
static void log_hostcheck(struct probe *p)
{
	unsigned i;

	if (!p->hc_valid || !p->hc.nfail) {
		RLOG(p, "host checks: %s", p->hc_valid ? "ok" : "not run");
		return;
	}
	for (i = 0; i < EVR_HC_COUNT; i++)
		if (p->hc.rows[i].verdict == EVR_HC_FAIL)
			RLOG(p, "host check %s FAILED: %s",
			     evr_hostcheck_name(p->hc.rows[i].check),
			     p->hc.rows[i].fact);
}

static void run_start(struct probe *p)
{
	struct ev_loop *l = p->evl;
	double limit;

	/* the last engine, if its reap has not run yet */
	ev_timer_stop(l, &p->reap_w);
	reap_cb(l, &p->reap_w, 0);
	p->state = PR_RUNNING;
	free(p->run.log);
	memset(&p->run, 0, sizeof(p->run));
	p->run.join_s = -1;
	p->run.t0_ns = evr_now_ns();
	if (ring && ring->cap)
		p->run.log = runlog_new(p->run.t0_ns);
	RLOG(p, "run of probe \"%s\" (%s, every %g s, timeout %g s)",
	     p->cfg->name, p->cfg->type == PROBE_RSTREAM ? "rstream" :
	     "mckey", p->cfg->interval_s, p->cfg->timeout_s);
	limit = p->cfg->timeout_s;
	/* mckey: the deadline covers the transfer; joining and settling
	 * come first */
	if (p->cfg->type == PROBE_MCKEY)
		limit += p->cfg->settle_s + EVR_MC_DEFAULT_RESOLVE_MS / 1000.0 +
			 2.0;
	ev_timer_set(&p->timeout_w, limit, 0.);
	ev_timer_start(l, &p->timeout_w);
	probe_hostcheck(p);
	log_hostcheck(p);
	lookups_start(p);
}

/* ------------------------------------------------------------ paths */

/* Two of the agent's runs on one path at once would measure each other
 * (50 latency probes of one target in lockstep: 880 us each, against
 * 20 us alone): a run whose path is taken waits in the path's queue and
 * starts, from the loop, when the run before it is over. */
struct probe_path {
	struct probe_path *next;
	char *key;
	unsigned refs;
	struct probe *busy;              /* its run in flight, or NULL */
	struct probe *head, *tail;       /* waiting, first come first */
	struct ev_loop *evl;
	ev_timer kick_w;                 /* starts the next, from the loop */
};

static struct probe_path *paths;
static struct probe_agent_stats agent_stats;

const struct probe_agent_stats *probe_agent_stats(void)
{
	return &agent_stats;
}

static void path_kick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct probe_path *pa = w->data;
	struct probe *p = pa->head;

	(void)l;
	(void)revents;
	if (pa->busy || !p)
		return;
	pa->head = p->wait_next;
	if (!pa->head)
		pa->tail = NULL;
	p->wait_next = NULL;
	pa->busy = p;
	run_start(p);
}

/* rstream probes only: an mckey run sends to a group, not a path; and
 * not a probe configured "exclusive": false, whose runs go as they come */
static void path_attach(struct probe *p)
{
	const struct probe_cfg *c = p->cfg;
	struct probe_path *pa;
	char key[512];

	if (c->type != PROBE_RSTREAM || !c->host || !c->exclusive)
		return;
	snprintf(key, sizeof(key), "%d %s %s", (int)c->transport, c->host,
		 c->port ? c->port : "");
	for (pa = paths; pa && strcmp(pa->key, key); pa = pa->next)
		;
	if (!pa) {
		pa = calloc(1, sizeof(*pa));
		if (!pa || !(pa->key = strdup(key))) {
			free(pa);
			return; /* no queue: the probe runs as it comes */
		}
		pa->evl = p->evl;
		ev_timer_init(&pa->kick_w, path_kick_cb, 0., 0.);
		pa->kick_w.data = pa;
		pa->next = paths;
		paths = pa;
	}
	pa->refs++;
	p->path = pa;
}

/* p's run is over (or p goes): the next in the queue may go */
static void path_release(struct probe *p)
{
	struct probe_path *pa = p->path;

	if (!pa || pa->busy != p)
		return;
	pa->busy = NULL;
	if (pa->head && !ev_is_active(&pa->kick_w)) {
		ev_timer_set(&pa->kick_w, 0., 0.);
		ev_timer_start(pa->evl, &pa->kick_w);
	}
}

static void path_detach(struct probe *p)
{
	struct probe_path *pa = p->path, **pp;
	struct probe **q;

	if (!pa)
		return;
	for (q = &pa->head; *q; q = &(*q)->wait_next)
		if (*q == p) {
			*q = p->wait_next;
			break;
		}
	pa->tail = NULL;
	for (q = &pa->head; *q; q = &(*q)->wait_next)
		pa->tail = *q;
	if (p->state == PR_WAITING)
		p->state = PR_IDLE;
	path_release(p);
	p->path = NULL;
	if (--pa->refs)
		return;
	ev_timer_stop(pa->evl, &pa->kick_w);
	for (pp = &paths; *pp != pa; pp = &(*pp)->next)
		;
	*pp = pa->next;
	free(pa->key);
	free(pa);
}

/* A run now, or in the path's queue. */
static void run_or_wait(struct probe *p)
{
	struct probe_path *pa = p->path;

	if (!pa) {
		run_start(p);
		return;
	}
	if (!pa->busy && !pa->head) {
		pa->busy = p;
		run_start(p);
		return;
	}
	agent_stats.deferred++;
	p->state = PR_WAITING;
	p->wait_next = NULL;
	if (pa->tail)
		pa->tail->wait_next = p;
	else
		pa->head = p;
	pa->tail = p;
}

static void tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct probe *p = w->data;

	(void)l;
	(void)revents;
	if (p->state != PR_IDLE) {
		agent_stats.skipped++;
		plog(PLOG_DEBUG, "probe \"%s\": previous run %s (%s), tick "
		     "skipped", p->cfg->name, p->state == PR_WAITING ?
		     "still waiting for its path" : "still going",
		     probe_run_state_name(p->state));
		return;
	}
	run_or_wait(p);
}

int probe_run_once(struct probe *p)
{
	if (p->state != PR_IDLE)
		return -EBUSY;
	ev_timer_stop(p->evl, &p->tick_w);
	run_or_wait(p);
	return 0;
}

int probe_new(struct probe **out, struct evr_loop *loop,
	      const struct probe_cfg *cfg)
{
	struct probe *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->cfg = cfg;
	p->loop = loop;
	p->evl = evr_loop_ev(loop);
	p->st.mc_join_s = -1;
	p->st.last_reason = -1;
	ev_timer_init(&p->tick_w, tick_cb, 0., cfg->interval_s);
	ev_timer_init(&p->timeout_w, timeout_cb, cfg->timeout_s, 0.);
	ev_timer_init(&p->reap_w, reap_cb, 0., 0.);
	p->tick_w.data = p;
	p->timeout_w.data = p;
	p->reap_w.data = p;
	path_attach(p);
	*out = p;
	return 0;
}

void probe_start(struct probe *p)
{
	probe_start_in(p, 0.);
}

void probe_start_in(struct probe *p, double delay)
{
	ev_timer_set(&p->tick_w, delay, p->cfg->interval_s);
	ev_timer_start(p->evl, &p->tick_w);
}

void probe_free(struct probe *p)
{
	if (!p)
		return;
	ev_timer_stop(p->evl, &p->tick_w);
	ev_timer_stop(p->evl, &p->timeout_w);
	ev_timer_stop(p->evl, &p->reap_w);
	/* done() from a cancel must not count a run we are throwing away */
	p->state = PR_IDLE;
	path_detach(p);
	lookups_stop(p);
	if (p->rs)
		evr_stream_cancel(p->rs);
	if (p->mc)
		evr_mcast_cancel(p->mc);
	reap_cb(p->evl, &p->reap_w, 0);
	free(p->run.log);
	free(p);
}
