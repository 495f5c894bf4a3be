/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{probe="..."[,peer="...",labels][,extra]} */
static void series(FILE *f, const char *name, const struct probe *p,
		   const char *extra)
{
	fprintf(f, "%s{probe=\"", name);
	metrics_escape(f, p->cfg->name);
	/* a mesh peer's: peer="NAME" and its file's labels, escaped */
	fprintf(f, "\"%s%s%s%s}", p->cfg->labels ? "," : "",
		p->cfg->labels ? p->cfg->labels : "", extra ? "," : "",
		extra ? extra : "");
}

static void u64(FILE *f, const char *name, const struct probe *p,
		const char *extra, uint64_t v)
{
	series(f, name, p, extra);
	fprintf(f, " %llu\n", (unsigned long long)v);
}

static void dbl(FILE *f, const char *name, const struct probe *p,
		const char *extra, double v)
{
	series(f, name, p, extra);
	fprintf(f, " %.15g\n", v);
}

/* The daemon's own series. */
static void render_daemon(FILE *f, size_t n, const struct metrics_daemon *d)
{
	family(f, "evrdma_probed_build_info", "gauge",
	       "evrdma-probed's version, as a label; always 1.");
	fprintf(f, "evrdma_probed_build_info{version=\"");
	metrics_escape(f, d->version);
	fprintf(f, "\"} 1\n");
	family(f, "evrdma_probed_start_time_seconds", "gauge",
	       "When the daemon started, seconds since the epoch.");
	fprintf(f, "evrdma_probed_start_time_seconds %.3f\n", d->start_ts);
	family(f, "evrdma_probed_config_reloads_total", "counter",
	       "Configuration reloads (SIGHUP) that were applied.");
	fprintf(f, "evrdma_probed_config_reloads_total %llu\n",
		(unsigned long long)d->reloads);
	family(f, "evrdma_probed_config_reload_failures_total", "counter",
	       "Configuration reloads rejected; the old configuration stays.");
	fprintf(f, "evrdma_probed_config_reload_failures_total %llu\n",
		(unsigned long long)d->reload_failures);
	family(f, "evrdma_probed_config_last_reload_successful", "gauge",
	       "1 if the last reload (or the start) loaded the file.");
	fprintf(f, "evrdma_probed_config_last_reload_successful %d\n",
		d->last_reload_ok);
	family(f, "evrdma_probed_probes", "gauge",
	       "Probes in the running configuration.");
	fprintf(f, "evrdma_probed_probes %zu\n", n);
	family(f, "evrdma_probed_responders", "gauge",
	       "Responders in the running configuration.");
	fprintf(f, "evrdma_probed_responders %zu\n", d->nresponders);
}

/* ---- the responders' series: label responder="tcp:ADDR:PORT" ---- */

static void resp_u64(FILE *f, const char *name, const struct responder *r,
		     const char *extra, uint64_t v)
{
	fprintf(f, "%s{responder=\"", name);
	metrics_escape(f, r->cfg->label);
	fprintf(f, "\"%s%s} %llu\n", extra ? "," : "", extra ? extra : "",
		(unsigned long long)v);
}

static void render_responders(FILE *f, const struct metrics_daemon *d)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} rows[] = {
		{ "evrdma_responder_listening", "gauge",
		  "1 while the responder listens, 0 while it cannot (tried "
		  "again every 5 s).", 0 },
		{ "evrdma_responder_connections_total", "counter",
		  "Connections the responder accepted and served.",
		  offsetof(struct responder_stats, served) },
		{ "evrdma_responder_connections_finished_total", "counter",
		  "Connections served to their end without a failure.",
		  offsetof(struct responder_stats, done) },
		{ "evrdma_responder_connections_active", "gauge",
		  "Connections being served now.",
		  offsetof(struct responder_stats, active) },
	};
	const struct responder *r;
	char extra[64];
	size_t i, k;
	int rr;

	for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		family(f, rows[k].name, rows[k].type, rows[k].help);
		for (i = 0; i < d->nresponders; i++) {
			r = d->responders[i];
			resp_u64(f, rows[k].name, r, NULL, k == 0 ?
				 (uint64_t)r->st.listening :
				 *(const uint64_t *)((const char *)&r->st +
						     rows[k].off));
		}
	}
	family(f, "evrdma_responder_dropped_total", "counter",
	       "Connections the responder dropped or turned away, by "
	       "reason.");
	for (i = 0; i < d->nresponders; i++)
		for (rr = 0; rr < RR_MAX; rr++) {
			snprintf(extra, sizeof(extra), "reason=\"%s\"",
				 resp_reason_names[rr]);
			resp_u64(f, "evrdma_responder_dropped_total",
				 d->responders[i], extra,
				 d->responders[i]->st.dropped[rr]);
		}
}

/* ---- the probes' series: a row each ---- */

enum who { ANY, RSTREAM, MCKEY, MC_SENDER, MC_RECEIVER };
/* a field of struct probe_stats (U64, DBL, INT), or a family of its own */
enum kind { U64, DBL, INT, FAILURES, LAT_HIST, RTT, HOSTCHECK };

struct metric {
	const char *name, *type, *help;
	enum who who;
	enum kind kind;
	size_t off;
};

#define STAT(field) offsetof(struct probe_stats, field)

static const struct metric metrics[] = {
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

static int applies(enum who w, const struct probe *p)
{
	switch (w) {
	case ANY:
		return 1;
	case RSTREAM:
		return p->cfg->type == PROBE_RSTREAM;
	case MCKEY:
		return p->cfg->type == PROBE_MCKEY;
	case MC_SENDER:
		return p->cfg->type == PROBE_MCKEY && p->cfg->sender;
	case MC_RECEIVER:
		return p->cfg->type == PROBE_MCKEY && !p->cfg->sender;
	}
	return 0;
}

static void render_failures(FILE *f, const struct metric *m,
			    const struct probe *p)
{
	char extra[64];
	int r;

	for (r = 0; r < R_MAX; r++) {
		if (!probe_reason_applies(p->cfg->type, r))
			continue;
		snprintf(extra, sizeof(extra), "reason=\"%s\"",
			 probe_reason_names[r]);
		u64(f, m->name, p, extra, p->st.failures[r]);
	}
}

static void render_lat_hist(FILE *f, const struct probe *p)
{
	char extra[64];
	uint64_t cum = 0;
	int b;

	for (b = 0; b < PROBE_NBUCKETS; b++) {
		cum += p->st.hist[b];
		snprintf(extra, sizeof(extra), "le=\"%s\"",
			 probe_bucket_str[b]);
		u64(f, "evrdma_rstream_latency_seconds_bucket", p, extra, cum);
	}
	cum += p->st.hist[PROBE_NBUCKETS];
	u64(f, "evrdma_rstream_latency_seconds_bucket", p, "le=\"+Inf\"",
	    cum);
	dbl(f, "evrdma_rstream_latency_seconds_sum", p, NULL, p->st.hist_sum);
	u64(f, "evrdma_rstream_latency_seconds_count", p, NULL,
	    p->st.hist_count);
}

static void render_rtt(FILE *f, const struct probe *p)
{
	static const char *const q[] = { "0.5", "0.9", "0.99", "0.999" };
	const struct evr_lat_stats *l = &p->st.last_lat;
	const uint64_t v[] = { l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns };
	char extra[64];
	int b;

	if (p->st.have_lat)
		for (b = 0; b < 4; b++) {
			snprintf(extra, sizeof(extra), "quantile=\"%s\"", q[b]);
			dbl(f, "evrdma_rstream_rtt_seconds", p, extra,
			    v[b] / 1e9);
		}
	dbl(f, "evrdma_rstream_rtt_seconds_sum", p, NULL, p->st.rtt_sum);
	u64(f, "evrdma_rstream_rtt_seconds_count", p, NULL, p->st.rtt_count);
}

static void render_hostcheck(FILE *f, const struct metric *m,
			     const struct probe *p)
{
	const struct evr_hc_row *r;
	char extra[64];

	if (!p->hc_valid)
		return;
	for (r = p->hc.rows; r < p->hc.rows + EVR_HC_COUNT; r++) {
		if (r->verdict == EVR_HC_SKIP)
			continue;
		snprintf(extra, sizeof(extra), "check=\"%s\"",
			 evr_hostcheck_name(r->check));
		u64(f, m->name, p, extra, r->verdict == EVR_HC_OK);
	}
}

static void render_metric(FILE *f, const struct metric *m,
			  const struct probe *p)
{
	const char *st = (const char *)&p->st;

	switch (m->kind) {
	case U64:
		u64(f, m->name, p, NULL, *(const uint64_t *)(st + m->off));
		break;
	case DBL:
		dbl(f, m->name, p, NULL, *(const double *)(st + m->off));
		break;
	case INT:
		u64(f, m->name, p, NULL,
		    (uint64_t)*(const int *)(st + m->off));
		break;
	case FAILURES:
		render_failures(f, m, p);
		break;
	case LAT_HIST:
		render_lat_hist(f, p);
		break;
	case RTT:
		render_rtt(f, p);
		break;
	case HOSTCHECK:
		render_hostcheck(f, m, p);
		break;
	}
}

int metrics_render(char **buf, size_t *len, struct probe *const *probes,
		   size_t n, const struct metrics_daemon *d)
{
	size_t i, k;
	FILE *f;

	*buf = NULL;
	*len = 0;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	render_daemon(f, n, d);
	for (k = 0; k < sizeof(metrics) / sizeof(metrics[0]); k++) {
		family(f, metrics[k].name, metrics[k].type, metrics[k].help);
		for (i = 0; i < n; i++)
			if (probes[i] && applies(metrics[k].who, probes[i]))
				render_metric(f, &metrics[k], probes[i]);
	}
	render_responders(f, d);
	if (fclose(f) || !*buf) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}
