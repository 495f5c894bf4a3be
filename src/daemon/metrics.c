/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The page: tables of rows, one style whoever owns the series.  A row is
 * a family (name, type, help), whose subjects it applies to (who), how
 * its samples are written (kind: a field at off in the subject's
 * counters, or a family of its own shape) and the field.  The daemon's
 * own rows, then a row per probe (the configured ones, then the mesh's),
 * the responders', the mesh's file's: a new series is one row.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mesh.h"
#include "metrics.h"

void metrics_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '"':
			fputs("\\\"", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* Whose series: its label (probe="NAME" and a mesh peer's labels,
 * responder="LABEL", none for the daemon's own) and its counters, which
 * a row's off points into. */
struct subject {
	const char *key;            /* NULL: no label */
	const char *value;
	const char *labels;         /* 'peer="NAME",k="v"', or NULL */
	const void *st;
	const struct probe *p;      /* a probe's: its own families */
};

enum who { ANY, RSTREAM, MCKEY, MC_SENDER, MC_RECEIVER };
/* a field (U64, DBL, INT, UINT, SIZE, TIME: "%.3f" seconds), or a
 * family of its own */
enum kind { U64, DBL, INT, UINT, SIZE, TIME,
	    FAILURES, LAT_HIST, RTT, HOSTCHECK, SPLIT_HIST, SPLIT_U64,
	    RESP_DROPPED, BUILD_INFO, LOCAL_DELAY, HTTP_DROPPED };

struct metric {
	const char *name, *type, *help;
	enum who who;
	enum kind kind;
	size_t off;
};

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{key="value"[,labels][,extra]}, or name[{extra}] without a key */
static void series(FILE *f, const char *name, const struct subject *s,
		   const char *extra)
{
	fputs(name, f);
	if (!s->key && !extra)
		return;
	fputc('{', f);
	if (s->key) {
		fprintf(f, "%s=\"", s->key);
		metrics_escape(f, s->value);
		fprintf(f, "\"%s%s", s->labels ? "," : "",
			s->labels ? s->labels : "");
	}
	fprintf(f, "%s%s}", s->key && extra ? "," : "", extra ? extra : "");
}

static void u64(FILE *f, const char *name, const struct subject *s,
		const char *extra, uint64_t v)
{
	series(f, name, s, extra);
	fprintf(f, " %llu\n", (unsigned long long)v);
}

static void dbl(FILE *f, const char *name, const struct subject *s,
		const char *extra, double v)
{
	series(f, name, s, extra);
	fprintf(f, " %.15g\n", v);
}

/* A histogram: NAME_bucket (cumulative, le="%g" of each bound, +Inf
 * last), _sum, _count; hist has nb + 1 buckets, not cumulative. */
static void render_hist(FILE *f, const char *name, const struct subject *s,
			const double *le, int nb, const uint64_t *hist,
			double sum, uint64_t count)
{
	char extra[64], full[128];
	uint64_t cum = 0;
	int b;

	snprintf(full, sizeof(full), "%s_bucket", name);
	for (b = 0; b <= nb; b++) {
		cum += hist[b];
		if (b < nb)
			snprintf(extra, sizeof(extra), "le=\"%g\"", le[b]);
		else
			snprintf(extra, sizeof(extra), "le=\"+Inf\"");
		u64(f, full, s, extra, cum);
	}
	snprintf(full, sizeof(full), "%s_sum", name);
	dbl(f, full, s, NULL, sum);
	snprintf(full, sizeof(full), "%s_count", name);
	u64(f, full, s, NULL, count);
}

static void render_split(FILE *f, const char *name, const struct subject *s,
			 const struct split_hist *h)
{
	render_hist(f, name, s, split_bucket_le, SPLIT_NBUCKETS, h->b, h->sum,
		    h->count);
}

/* One value by reason: names[n], the counters at v. */
static void render_reasons(FILE *f, const char *name,
			   const struct subject *s, const char *const *names,
			   int n, const uint64_t *v)
{
	char extra[64];
	int r;

	for (r = 0; r < n; r++) {
		snprintf(extra, sizeof(extra), "reason=\"%s\"", names[r]);
		u64(f, name, s, extra, v[r]);
	}
}

/* ---- the daemon's own series: a view of its counters ---- */

struct daemon_view {
	struct metrics_daemon d;
	size_t probes, responders;
	struct evr_lookup_stats dns;    /* the loop's table of names */
	struct http_stats http;         /* /metrics' connections */
	struct mesh_stats mesh;
	struct probe_agent_stats runs;  /* its own runs' waits and skips */
};

#define DV(field) offsetof(struct daemon_view, field)

static const struct metric daemon_rows[] = {
	{ "evrdma_probed_build_info", "gauge",
	  "evrdma-probed's version, as a label; always 1.", ANY, BUILD_INFO,
	  0 },
	{ "evrdma_probed_start_time_seconds", "gauge",
	  "When the daemon started, seconds since the epoch.", ANY, TIME,
	  DV(d.start_ts) },
	{ "evrdma_probed_config_reloads_total", "counter",
	  "Configuration reloads (SIGHUP) that were applied.", ANY, U64,
	  DV(d.reloads) },
	{ "evrdma_probed_config_reload_failures_total", "counter",
	  "Configuration reloads rejected; the old configuration stays.",
	  ANY, U64, DV(d.reload_failures) },
	{ "evrdma_probed_config_last_reload_successful", "gauge",
	  "1 if the last reload (or the start) loaded the file.", ANY, INT,
	  DV(d.last_reload_ok) },
	{ "evrdma_probed_probes", "gauge",
	  "Probes in the running configuration.", ANY, SIZE, DV(probes) },
	{ "evrdma_probed_responders", "gauge",
	  "Responders in the running configuration.", ANY, SIZE,
	  DV(responders) },
	{ "evrdma_probed_dns_queries_total", "counter",
	  "Name lookups sent to the resolver: one per name while its "
	  "answer is kept (dns_cache_s, dns_negative_cache_s).", ANY, U64,
	  DV(dns.queries) },
	{ "evrdma_probed_dns_cache_hits_total", "counter",
	  "Name lookups answered by a kept answer or by a query "
	  "already under way.", ANY, U64, DV(dns.hits) },
	{ "evrdma_probed_dns_failures_total", "counter",
	  "Queries that found no address: no such name, no answer "
	  "within dns_timeout_s, or another resolver error.", ANY, U64,
	  DV(dns.failures) },
	{ "evrdma_probed_dns_timeouts_total", "counter",
	  "Queries without an answer within dns_timeout_s (counted in "
	  "the failures too).", ANY, U64, DV(dns.timeouts) },
	{ "evrdma_probed_dns_cached_names", "gauge",
	  "Names whose answer (or failure) is kept now.", ANY, UINT,
	  DV(dns.cached) },
	{ "evrdma_probed_runs_deferred_total", "counter",
	  "Probe runs that waited for another of the agent's runs on "
	  "the same path (an rstream probe's target) to end: one run on "
	  "a path at a time, so that none measures another.", ANY, U64,
	  DV(runs.deferred) },
	{ "evrdma_probed_ticks_skipped_total", "counter",
	  "Probe intervals that started no run: the probe's last run, "
	  "or its wait for its path, was not over (a probe that takes "
	  "longer than its interval, or a busy path).", ANY, U64,
	  DV(runs.skipped) },
	{ "evrdma_probed_local_delay_seconds", "histogram",
	  "This host's part of its probes' round trips: from its kernel's "
	  "receipt of an echo to the agent's read of it (TCP probes of "
	  "evrdma responders; RDMA has no receive timestamps).", ANY,
	  LOCAL_DELAY, 0 },
	/* the HTTP side's connections: what could keep a scrape out */
	{ "evrdma_http_connections_total", "counter",
	  "Connections accepted on the /metrics port.", ANY, U64,
	  DV(http.accepted) },
	{ "evrdma_http_connections_open", "gauge",
	  "Connections held now, waiting for a request or being "
	  "answered.", ANY, UINT, DV(http.open) },
	{ "evrdma_http_requests_total", "counter",
	  "Complete requests received on the /metrics port.", ANY, U64,
	  DV(http.requests) },
	{ "evrdma_http_connections_dropped_total", "counter",
	  "Connections closed or turned away by the daemon, by reason: "
	  "evicted (idle, to make room), timeout (no request in time, "
	  "or an answer not read), per_ip and limit (turned away, "
	  "nothing idle to evict), fds (no descriptor left), error.", ANY,
	  HTTP_DROPPED, DV(http.dropped) },
};

/* The mesh's and its peers file's: families without a sample when there
 * is no mesh. */
static const struct metric mesh_rows[] = {
	{ "evrdma_mesh_peers", "gauge",
	  "Mesh peers probed: those the selection (group_by) keeps of "
	  "the peers file's last good read, this host's own excluded.", ANY,
	  SIZE, DV(mesh.peers) },
	{ "evrdma_mesh_peers_selected", "gauge",
	  "Of the peers file's peer lines as last read, those the "
	  "selection (group_by, across) keeps; every one without a "
	  "selection, a bad line counted.", ANY, SIZE, DV(mesh.selected) },
	{ "evrdma_mesh_peers_listed", "gauge",
	  "Peer lines of the peers file as last read, good or bad, "
	  "this host's own excluded.", ANY, SIZE, DV(mesh.listed) },
	{ "evrdma_mesh_peers_file_ok", "gauge",
	  "1 if the last read of the peers file was good, 0 if it "
	  "failed (the peers of the last good read are probed).", ANY, INT,
	  DV(mesh.file_ok) },
	{ "evrdma_mesh_peers_file_errors_total", "counter",
	  "Reads of the peers file that failed: unreadable, missing, "
	  "listing no peer, or a bad line.", ANY, U64, DV(mesh.file_errors) },
	{ "evrdma_mesh_peers_file_last_good_timestamp_seconds", "gauge",
	  "When the peers file was last read good, seconds since the "
	  "epoch.", ANY, TIME, DV(mesh.last_good_ts) },
};

/* ---- the responders' series: label responder="tcp:ADDR:PORT" ---- */

#define RST(field) offsetof(struct responder_stats, field)

static const struct metric resp_rows[] = {
	{ "evrdma_responder_listening", "gauge",
	  "1 while the responder listens, 0 while it cannot (tried "
	  "again every 5 s).", ANY, INT, RST(listening) },
	{ "evrdma_responder_connections_total", "counter",
	  "Connections the responder accepted and served.", ANY, U64,
	  RST(served) },
	{ "evrdma_responder_connections_finished_total", "counter",
	  "Connections served to their end without a failure.", ANY, U64,
	  RST(done) },
	{ "evrdma_responder_connections_active", "gauge",
	  "Connections being served now.", ANY, U64, RST(active) },
	{ "evrdma_responder_dropped_total", "counter",
	  "Connections the responder dropped or turned away, by "
	  "reason.", ANY, RESP_DROPPED, RST(dropped) },
};

/* ---- the probes' series: label probe="NAME" ---- */

#define STAT(field) offsetof(struct probe_stats, field)

static const struct metric probe_rows[] = {
	{ "evrdma_probe_runs_total", "counter",
	  "Probe runs finished, successful or not.", ANY, U64, STAT(runs) },
	{ "evrdma_probe_failures_total", "counter",
	  "Probe runs that failed, by reason.", ANY, FAILURES, 0 },
	{ "evrdma_probe_up", "gauge",
	  "1 if the probe's last run succeeded, else 0.", ANY, INT, STAT(up) },
	{ "evrdma_probe_last_success_timestamp_seconds", "gauge",
	  "End of the last successful run, seconds since the epoch "
	  "(0: never).", ANY, DBL, STAT(last_success_ts) },
	{ "evrdma_probe_duration_seconds", "gauge",
	  "How long the last finished run took, start to end.", ANY, DBL,
	  STAT(last_duration_s) },
	{ "evrdma_rstream_latency_seconds", "histogram",
	  "Round trip of each iteration of each successful run, one "
	  "observation per iteration.", RSTREAM, LAT_HIST, 0 },
	{ "evrdma_rstream_network_rtt_seconds", "histogram",
	  "The network's part of each iteration's round trip: the round "
	  "trip less the responder's hold and this host's delay (an evrdma "
	  "responder's runs only).", RSTREAM, SPLIT_HIST, STAT(net) },
	{ "evrdma_rstream_responder_hold_seconds", "histogram",
	  "How long the responder held each iteration's request, from its "
	  "kernel's receipt to its echo's send, on its own clock: its "
	  "host's part of the round trip (an evrdma responder's runs "
	  "only).", RSTREAM, SPLIT_HIST, STAT(hold) },
	{ "evrdma_rstream_split_rejected_total", "counter",
	  "Iterations whose parts did not fit in their round trip (a clock "
	  "step, a responder that lies), left out of the two histograms "
	  "above.", RSTREAM, SPLIT_U64, STAT(split_rejected) },
	{ "evrdma_rstream_rtt_seconds", "summary",
	  "Round trip of each iteration: quantiles of the last "
	  "successful run; sum and count over all runs.", RSTREAM, RTT, 0 },
	/* bytes, Prometheus's base unit (promtool rejects bits): rstream's
	 * Gb/sec is this times 8e-9 */
	{ "evrdma_rstream_throughput_bytes_per_second", "gauge",
	  "Bytes moved in both directions over the elapsed time of the "
	  "last successful run (rstream's Gb/sec is this times 8e-9).",
	  RSTREAM, DBL, STAT(throughput_Bps) },
	{ "evrdma_mckey_sent_total", "counter",
	  "Multicast messages sent by sender probes.", MC_SENDER, U64,
	  STAT(mc_sent) },
	{ "evrdma_mckey_received_total", "counter",
	  "Multicast messages received by receiver probes.", MC_RECEIVER,
	  U64, STAT(mc_received) },
	{ "evrdma_mckey_lost_total", "counter",
	  "Messages lost on the way to receiver probes: the gaps in "
	  "each sender's sequence below the highest received, on QPs "
	  "that joined.", MC_RECEIVER, U64, STAT(mc_lost) },
	{ "evrdma_mckey_shortfall_total", "counter",
	  "Messages a receiver probe expected in a run (its count) and "
	  "did not receive, on QPs that joined: lost, never sent, or "
	  "not yet arrived when the run ended.", MC_RECEIVER, U64,
	  STAT(mc_shortfall) },
	{ "evrdma_mckey_bad_headers_total", "counter",
	  "Messages with a malformed or out-of-range evrdma header "
	  "received by receiver probes.", MC_RECEIVER, U64, STAT(mc_bad) },
	{ "evrdma_mckey_untracked_total", "counter",
	  "Messages receiver probes did not track: from senders beyond "
	  "the limit, or outside a sender's window.", MC_RECEIVER, U64,
	  STAT(mc_untracked) },
	{ "evrdma_mckey_join_latency_seconds", "gauge",
	  "Join call to MULTICAST_JOIN in the last run (-1: no join).",
	  MCKEY, DBL, STAT(mc_join_s) },
	{ "evrdma_host_check_ok", "gauge",
	  "1 if this host passes the check (rstream --check's) for the "
	  "probe's run before its last run, else 0; checks that do not "
	  "apply (all of them for TCP and UDP) have no series.", ANY,
	  HOSTCHECK, 0 },
};

static int applies(enum who w, const struct subject *s)
{
	const struct probe_cfg *c = s->p ? s->p->cfg : NULL;

	switch (w) {
	case ANY:
		return 1;
	case RSTREAM:
		return c && c->type == PROBE_RSTREAM;
	case MCKEY:
		return c && c->type == PROBE_MCKEY;
	case MC_SENDER:
		return c && c->type == PROBE_MCKEY && c->sender;
	case MC_RECEIVER:
		return c && c->type == PROBE_MCKEY && !c->sender;
	}
	return 0;
}

static void render_failures(FILE *f, const struct metric *m,
			    const struct subject *s)
{
	char extra[64];
	int r;

	for (r = 0; r < R_MAX; r++) {
		if (!probe_reason_applies(s->p->cfg->type, r))
			continue;
		snprintf(extra, sizeof(extra), "reason=\"%s\"",
			 probe_reason_names[r]);
		u64(f, m->name, s, extra, s->p->st.failures[r]);
	}
}

static void render_rtt(FILE *f, const struct subject *s)
{
	static const char *const q[] = { "0.5", "0.9", "0.99", "0.999" };
	const struct probe_stats *st = &s->p->st;
	const struct evr_lat_stats *l = &st->last_lat;
	const uint64_t v[] = { l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns };
	char extra[64];
	int b;

	if (st->have_lat)
		for (b = 0; b < 4; b++) {
			snprintf(extra, sizeof(extra), "quantile=\"%s\"", q[b]);
			dbl(f, "evrdma_rstream_rtt_seconds", s, extra,
			    v[b] / 1e9);
		}
	dbl(f, "evrdma_rstream_rtt_seconds_sum", s, NULL, st->rtt_sum);
	u64(f, "evrdma_rstream_rtt_seconds_count", s, NULL, st->rtt_count);
}

static void render_hostcheck(FILE *f, const struct metric *m,
			     const struct subject *s)
{
	const struct probe *p = s->p;
	const struct evr_hc_row *r;
	char extra[64];

	if (!p->hc_valid)
		return;
	for (r = p->hc.rows; r < p->hc.rows + EVR_HC_COUNT; r++) {
		if (r->verdict == EVR_HC_SKIP)
			continue;
		snprintf(extra, sizeof(extra), "check=\"%s\"",
			 evr_hostcheck_name(r->check));
		u64(f, m->name, s, extra, r->verdict == EVR_HC_OK);
	}
}

static void render_metric(FILE *f, const struct metric *m,
			  const struct subject *s)
{
	const char *st = (const char *)s->st + m->off;
	const struct daemon_view *v = s->st;

	switch (m->kind) {
	case U64:
		u64(f, m->name, s, NULL, *(const uint64_t *)st);
		break;
	case DBL:
		dbl(f, m->name, s, NULL, *(const double *)st);
		break;
	case INT:
		u64(f, m->name, s, NULL, (uint64_t)*(const int *)st);
		break;
	case UINT:
		u64(f, m->name, s, NULL, *(const unsigned *)st);
		break;
	case SIZE:
		u64(f, m->name, s, NULL, *(const size_t *)st);
		break;
	case TIME:
		series(f, m->name, s, NULL);
		fprintf(f, " %.3f\n", *(const double *)st);
		break;
	case FAILURES:
		render_failures(f, m, s);
		break;
	case LAT_HIST:
		render_hist(f, m->name, s, probe_bucket_le, PROBE_NBUCKETS,
			    s->p->st.hist, s->p->st.hist_sum,
			    s->p->st.hist_count);
		break;
	case RTT:
		render_rtt(f, s);
		break;
	case HOSTCHECK:
		render_hostcheck(f, m, s);
		break;
	case SPLIT_HIST:
		/* the series come with the first run that had the parts */
		if (s->p->st.have_split)
			render_split(f, m->name, s,
				     (const struct split_hist *)st);
		break;
	case SPLIT_U64:
		if (s->p->st.have_split)
			u64(f, m->name, s, NULL, *(const uint64_t *)st);
		break;
	case RESP_DROPPED:
		render_reasons(f, m->name, s, resp_reason_names, RR_MAX,
			       (const uint64_t *)st);
		break;
	case BUILD_INFO:
		fprintf(f, "%s{version=\"", m->name);
		metrics_escape(f, v->d.version);
		fprintf(f, "\"} 1\n");
		break;
	case LOCAL_DELAY:
		render_split(f, m->name, s, probe_local_delay());
		break;
	case HTTP_DROPPED:
		render_reasons(f, m->name, s, http_drop_names, HD_MAX,
			       (const uint64_t *)st);
		break;
	}
}

/* Each row's family, then its series of each subject it applies to. */
static void render_rows(FILE *f, const struct metric *rows, size_t nrows,
			const struct subject *s, size_t n)
{
	size_t k, i;

	for (k = 0; k < nrows; k++) {
		family(f, rows[k].name, rows[k].type, rows[k].help);
		for (i = 0; i < n; i++)
			if (applies(rows[k].who, &s[i]))
				render_metric(f, &rows[k], &s[i]);
	}
}

#define ROWS(t) t, sizeof(t) / sizeof(t[0])

static void probe_subject(struct subject *s, const struct probe *p)
{
	s->key = "probe";
	s->value = p->cfg->name;
	s->labels = p->cfg->labels;
	s->st = &p->st;
	s->p = p;
}

/* The host's RDMA devices, as the loop's registry last saw them: a
 * state set per device, an up gauge per port, the events by kind. */
static const char *const dev_states[] = { "ACTIVE", "PORT_DOWN", "GONE" };

static void dev_label(FILE *f, const char *name, const struct evr_dev_info *d)
{
	fprintf(f, "%s{device=\"", name);
	metrics_escape(f, d->name);
	fputc('"', f);
}

static void render_devices(FILE *f, struct evr_loop *l)
{
	struct evr_dev_info *devs;
	unsigned n, i, k;

	n = evr_loop_devices(l, NULL, 0);
	if (!n)
		return;
	devs = calloc(n, sizeof(*devs));
	if (!devs)
		return;
	n = evr_loop_devices(l, devs, n);
	family(f, "evrdma_rdma_device_state", "gauge",
	       "The RDMA device's state as last seen, 1 for its state: "
	       "ACTIVE, PORT_DOWN (a port down or without a GID), GONE "
	       "(removed or failed, until it is back)");
	for (i = 0; i < n; i++)
		for (k = 0; k < sizeof(dev_states) / sizeof(dev_states[0]); k++) {
			dev_label(f, "evrdma_rdma_device_state", &devs[i]);
			fputs(",netdev=\"", f);
			metrics_escape(f, devs[i].netdev);
			fprintf(f, "\",state=\"%s\"} %d\n", dev_states[k],
				!strcmp(devs[i].state, dev_states[k]));
		}
	family(f, "evrdma_rdma_port_up", "gauge",
	       "1 when the RDMA port is active with a GID, as last seen");
	for (i = 0; i < n; i++)
		for (k = 0; k < devs[i].nports; k++) {
			dev_label(f, "evrdma_rdma_port_up", &devs[i]);
			fprintf(f, ",port=\"%u\"} %d\n", k + 1,
				strcmp(devs[i].state, "GONE") &&
				!strcmp(devs[i].ports[k].state, "ACTIVE"));
		}
	family(f, "evrdma_rdma_device_events_total", "counter",
	       "The RDMA device's events by kind: its asynchronous events "
	       "(port_err, port_active, gid_change, device_fatal, "
	       "port_other, async_error), its removals and returns");
	for (i = 0; i < n; i++)
		for (k = 0; k < devs[i].nevents; k++) {
			dev_label(f, "evrdma_rdma_device_events_total",
				  &devs[i]);
			fprintf(f, ",kind=\"%s\"} %llu\n", devs[i].events[k].kind,
				(unsigned long long)devs[i].events[k].count);
		}
	free(devs);
}

/* The daemon's own numbers, as they are now, into v. */
static void daemon_view_fill(struct daemon_view *v,
			     const struct metrics_src *src,
			     const struct metrics_daemon *d)
{
	memset(v, 0, sizeof(*v));
	v->d = *d;
	v->probes = src->nprobes + src->npeers;
	v->responders = src->nresponders;
	if (d->loop)
		evr_loop_lookup_stats(d->loop, &v->dns);
	v->runs = *probe_agent_stats();
	if (d->http)
		v->http = *d->http;
	if (src->mesh)
		v->mesh = *src->mesh;
}

/* The subjects of the probes' rows (the configured probes, then the
 * mesh's) into ps, and of the responders' into rs. */
static void subjects_fill(struct subject *ps, struct subject *rs,
			  const struct metrics_src *src)
{
	size_t i;

	for (i = 0; i < src->nprobes; i++)
		probe_subject(&ps[i], src->probes[i]);
	for (i = 0; i < src->npeers; i++)
		probe_subject(&ps[src->nprobes + i], src->peers[i]);
	for (i = 0; i < src->nresponders; i++) {
		rs[i].key = "responder";
		rs[i].value = src->responders[i]->cfg->label;
		rs[i].st = &src->responders[i]->st;
	}
}

int metrics_render(char **buf, size_t *len, const struct metrics_src *src,
		   const struct metrics_daemon *d)
{
	static const struct metrics_src none;
	struct daemon_view v;
	struct subject self = { .st = &v }, *ps, *rs;
	size_t np;
	FILE *f;

	if (!src)
		src = &none;
	daemon_view_fill(&v, src, d);
	/* the configured probes, then the mesh's */
	np = src->nprobes + src->npeers;
	ps = calloc(np + 1, sizeof(*ps));
	rs = calloc(src->nresponders + 1, sizeof(*rs));
	*buf = NULL;
	*len = 0;
	f = ps && rs ? open_memstream(buf, len) : NULL;
	if (!f) {
		free(ps);
		free(rs);
		return -ENOMEM;
	}
	subjects_fill(ps, rs, src);
	render_rows(f, ROWS(daemon_rows), &self, 1);
	if (d->loop)
		render_devices(f, d->loop);
	render_rows(f, ROWS(probe_rows), ps, np);
	render_rows(f, ROWS(resp_rows), rs, src->nresponders);
	render_rows(f, ROWS(mesh_rows), &self, src->mesh ? 1 : 0);
	free(ps);
	free(rs);
	if (fclose(f) || !*buf) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}
