/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The status page (status.h): HTML written section by section into a
 * memory stream, and the same facts as JSON (jansson).  A page of 64
 * peers and 100 runs is 36-39 KB, of 256 peers 99 KB (doc/daemon.md,
 * measured by tests/e2e/fleet-browser.sh).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mesh.h"
#include "status.h"

/* ------------------------------------------------------------ figures */

double status_loss(const struct probe *p)
{
	unsigned n = p->st.recent_n, bad = 0, i;

	for (i = 0; i < n; i++)
		bad += (p->st.recent_fail >> i) & 1u;
	return n ? (double)bad / n : 0.;
}

/* The last successful run's p99, us; -1 without one. */
static double p99_us(const struct probe *p)
{
	return p->st.have_lat ? p->st.last_lat.p99_ns / 1e3 : -1.;
}

static double p50_us(const struct probe *p)
{
	return p->st.have_lat ? p->st.last_lat.p50_ns / 1e3 : -1.;
}

const char *status_cell(const struct probe *p, const struct status_cfg *c)
{
	double loss = status_loss(p), p99 = p99_us(p);

	if (!p->st.runs)
		return "none";
	if (!p->st.up || loss > c->loss_bad || p99 >= c->p99_warn_us)
		return "bad";
	if (loss > 0 || p99 >= c->p99_ok_us)
		return "warn";
	return "ok";
}

/* A probe's label in cells: its peer's name, or its own. */
static const char *label_of(const struct probe *p)
{
	return p->cfg->peer ? p->cfg->peer : p->cfg->name;
}

/* The run a probe's cell links to: its last failure's while it fails,
 * else its last run's; 0 when the ring no longer holds it. */
static uint64_t link_of(const struct probe *p, const struct runring *r)
{
	uint64_t id = p->st.up ? p->last_run_id : p->last_fail_id;

	return id && r && runring_find(r, id) ? id : 0;
}

static const char *reason_of(const struct probe *p)
{
	return p->st.last_reason >= 0 ? probe_reason_names[p->st.last_reason]
				      : "";
}

static void utc(char *buf, size_t len, double ts)
{
	time_t t = (time_t)ts;
	struct tm tm;

	if (ts <= 0 || !gmtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "-");
}

/* --------------------------------------------------------------- HTML */

void status_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* A time in us, or "-" without one. */
static void put_us(FILE *f, double us)
{
	if (us < 0)
		fputs("-", f);
	else
		fprintf(f, "%.1f&nbsp;us", us);
}

static const char css[] =
	"body{font:14px/1.4 sans-serif;margin:1em;color:#222}"
	"h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.4em}"
	"table{border-collapse:collapse}"
	"td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
	"th{background:#eee}"
	".cells{display:flex;flex-wrap:wrap;gap:3px}"
	".cell{display:block;width:7.5em;padding:3px;font-size:12px;"
	"text-decoration:none;color:#000;border:1px solid #888;"
	"overflow:hidden;white-space:nowrap}"
	".cell b{display:block;overflow:hidden;text-overflow:ellipsis}"
	".ok{background:#a5d6a7}.warn{background:#ffe082}"
	".bad{background:#ef9a9a}.none{background:#e0e0e0}"
	"td.ok,td.warn,td.bad,td.none{font-weight:bold}"
	"pre{background:#f6f6f6;padding:4px}";

static void html_head(FILE *f, const struct status_src *s)
{
	char now[40], up[40];

	utc(now, sizeof(now), s->now);
	utc(up, sizeof(up), s->start_ts);
	/* (the icon is none, inline: a browser asks for /favicon.ico
	 * otherwise, a 404 in its console) */
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<link rel=\"icon\" href=\"data:,\"><title>evrdma-probed on ", f);
	status_escape(f, s->host);
	fprintf(f, "</title><style>%s</style></head><body>\n<h1>"
		"evrdma-probed on ", css);
	status_escape(f, s->host);
	fputs("</h1>\n<p>version ", f);
	status_escape(f, s->version);
	fprintf(f, ", up since %s; now %s. The same as JSON: "
		"<a href=\"/status.json\">/status.json</a>; Prometheus: "
		"<a href=\"/metrics\">/metrics</a>.</p>\n", up, now);
}

static void html_cell(FILE *f, const struct probe *p,
		      const struct status_src *s)
{
	const char *cls = status_cell(p, s->cfg);
	uint64_t id = link_of(p, s->runs);

	if (id)
		fprintf(f, "<a class=\"cell %s\" href=\"/run/%" PRIu64 "\"",
			cls, id);
	else
		fprintf(f, "<a class=\"cell %s\" href=\"#runs\"", cls);
	fputs(" data-probe=\"", f);
	status_escape(f, p->cfg->name);
	fputs("\" title=\"", f);
	status_escape(f, p->cfg->name);
	fputs("\"><b>", f);
	status_escape(f, label_of(p));
	fputs("</b>p50 ", f);
	put_us(f, p50_us(p));
	fputs("<br>p99 ", f);
	put_us(f, p99_us(p));
	fprintf(f, "<br>loss %.0f%%", status_loss(p) * 100);
	if (!p->st.up && p->st.runs) {
		fputs("<br>", f);
		status_escape(f, reason_of(p));
	}
	fputs("</a>\n", f);
}

static void html_cells(FILE *f, const struct status_src *s)
{
	const struct status_cfg *c = s->cfg;
	size_t i;

	fputs("<h2 id=\"cells\">This host to each peer and target</h2>\n"
	      "<div class=\"cells\">\n", f);
	for (i = 0; i < s->nprobes; i++)
		html_cell(f, s->probes[i], s);
	for (i = 0; i < s->npeers; i++)
		html_cell(f, s->peers[i], s);
	fprintf(f, "</div>\n<p>Each cell: the last successful run's median "
		"and p99 round trip, the share of the last %d runs that "
		"failed and the last failure's reason. "
		"<span class=\"ok\">ok</span>: p99 under %g us, none failed; "
		"<span class=\"warn\">warn</span>: p99 under %g us, or some "
		"failed; <span class=\"bad\">bad</span>: the last run failed, "
		"p99 %g us or more, or more than %g%% failed. A cell links to "
		"its last run's log (a failing one's: the failure's).</p>\n",
		PROBE_RECENT, c->p99_ok_us, c->p99_warn_us, c->p99_warn_us,
		c->loss_bad * 100);
}

static void html_probe_row(FILE *f, const struct probe *p,
			   const struct status_src *s)
{
	const char *cls = status_cell(p, s->cfg);
	uint64_t id = link_of(p, s->runs);

	fputs("<tr><td>", f);
	status_escape(f, p->cfg->name);
	fputs("</td><td>", f);
	status_escape(f, p->cfg->peer ? p->cfg->peer : "");
	fputs("</td><td>", f);
	status_escape(f, p->cfg->type == PROBE_RSTREAM ? p->cfg->host :
		      p->cfg->group);
	fprintf(f, "</td><td class=\"%s\">%s</td><td>%" PRIu64 "</td><td>%"
		PRIu64 "</td><td>", cls, cls, p->st.runs, p->st.successes);
	put_us(f, p50_us(p));
	fputs("</td><td>", f);
	put_us(f, p99_us(p));
	fprintf(f, "</td><td>%.0f%%</td><td>%s</td><td>",
		status_loss(p) * 100, reason_of(p));
	if (id)
		fprintf(f, "<a href=\"/run/%" PRIu64 "\">run %" PRIu64
			"</a>", id, id);
	fputs("</td></tr>\n", f);
}

static void html_probes(FILE *f, const struct status_src *s)
{
	size_t i;

	fprintf(f, "<h2 id=\"probes\">Probes and mesh peers (%zu)</h2>\n"
		"<table><tr><th>probe</th><th>peer</th><th>target</th>"
		"<th>state</th><th>runs</th><th>ok</th><th>p50</th>"
		"<th>p99</th><th>loss</th><th>last failure</th><th>log</th>"
		"</tr>\n", s->nprobes + s->npeers);
	for (i = 0; i < s->nprobes; i++)
		html_probe_row(f, s->probes[i], s);
	for (i = 0; i < s->npeers; i++)
		html_probe_row(f, s->peers[i], s);
	fputs("</table>\n", f);
}

static void html_mesh(FILE *f, const struct status_src *s)
{
	const struct mesh_stats *m = s->mesh;
	char good[40];

	fputs("<h2 id=\"peers-file\">Peers file</h2>\n<p>", f);
	if (!m) {
		fputs("No mesh configured.</p>\n", f);
		return;
	}
	utc(good, sizeof(good), m->last_good_ts);
	status_escape(f, s->peers_file);
	fprintf(f, ": <span class=\"%s\">%s</span>; %zu peers listed, "
		"%zu probed; %" PRIu64 " failed reads; last good read %s."
		"</p>\n", m->file_ok ? "ok" : "bad",
		m->file_ok ? "ok" : "REFUSED (the last good peers stay)",
		m->listed, m->peers, m->file_errors, good);
}

static void html_dev(FILE *f, const struct evr_dev_info *d)
{
	unsigned k;

	fputs("<tr><td>", f);
	status_escape(f, d->name);
	fputs("</td><td>", f);
	status_escape(f, d->netdev);
	fprintf(f, "</td><td class=\"%s\">", !strcmp(d->state, "ACTIVE") ?
		"ok" : "bad");
	status_escape(f, d->state);
	fprintf(f, "</td><td>%s</td><td>", d->in_use ? "yes" : "no");
	for (k = 0; k < d->nports && k < EVR_DEV_PORTS_MAX; k++) {
		fprintf(f, "%s%u: ", k ? ", " : "", k + 1);
		status_escape(f, d->ports[k].state);
		fprintf(f, " (%d GIDs)", d->ports[k].gids);
	}
	fputs("</td></tr>\n", f);
}

static void html_devs(FILE *f, const struct status_src *s)
{
	unsigned i;

	fputs("<h2 id=\"devices\">RDMA devices</h2>\n", f);
	if (!s->ndevs) {
		fputs("<p>None used yet (a device shows once a probe or "
		      "responder has used it).</p>\n", f);
		return;
	}
	fputs("<table><tr><th>device</th><th>netdev</th><th>state</th>"
	      "<th>in use</th><th>ports</th></tr>\n", f);
	for (i = 0; i < s->ndevs; i++)
		html_dev(f, &s->devs[i]);
	fputs("</table>\n", f);
}

static uint64_t dropped_of(const struct responder *r)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < RR_MAX; k++)
		n += r->st.dropped[k];
	return n;
}

static void html_resps(FILE *f, const struct status_src *s)
{
	const struct responder *r;
	size_t i;

	fputs("<h2 id=\"responders\">Responders</h2>\n", f);
	if (!s->nresponders) {
		fputs("<p>None configured.</p>\n", f);
		return;
	}
	fputs("<table><tr><th>responder</th><th>listening</th><th>active"
	      "</th><th>served</th><th>finished</th><th>dropped</th></tr>\n",
	      f);
	for (i = 0; i < s->nresponders; i++) {
		r = s->responders[i];
		fputs("<tr><td>", f);
		status_escape(f, r->cfg->label);
		fprintf(f, "</td><td class=\"%s\">%s</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%"
			PRIu64 "</td></tr>\n", r->st.listening ? "ok" : "bad",
			r->st.listening ? "yes" : "no", r->st.active,
			r->st.served, r->st.done, dropped_of(r));
	}
	fputs("</table>\n", f);
}

static void html_run_row(FILE *f, const struct runrec *r)
{
	char t[40];

	utc(t, sizeof(t), r->start_ts);
	fprintf(f, "<tr><td><a href=\"/run/%" PRIu64 "\">%" PRIu64
		"</a></td><td>%s</td><td>", r->id, r->id, t);
	status_escape(f, r->probe);
	fprintf(f, "</td><td class=\"%s\">%s</td><td>%.6f&nbsp;s</td><td>",
		r->ok ? "ok" : "bad", r->ok ? "ok" : r->reason,
		r->duration_s);
	put_us(f, r->p50_ns ? r->p50_ns / 1e3 : -1.);
	fputs("</td><td>", f);
	put_us(f, r->p99_ns ? r->p99_ns / 1e3 : -1.);
	fputs("</td></tr>\n", f);
}

static void html_runs(FILE *f, const struct status_src *s)
{
	const struct runrec *r;
	unsigned i;

	fprintf(f, "<h2 id=\"runs\">The last runs (%u kept, newest first)"
		"</h2>\n<table><tr><th>run</th><th>start</th><th>probe</th>"
		"<th>outcome</th><th>took</th><th>p50</th><th>p99</th></tr>"
		"\n", s->runs ? s->runs->cap : 0);
	for (i = 0; s->runs && (r = runring_nth(s->runs, i)); i++)
		html_run_row(f, r);
	fputs("</table>\n", f);
}

int status_html(char **buf, size_t *len, const struct status_src *s)
{
	FILE *f = open_memstream(buf, len);

	if (!f)
		return -ENOMEM;
	html_head(f, s);
	html_cells(f, s);
	html_probes(f, s);
	html_mesh(f, s);
	html_devs(f, s);
	html_resps(f, s);
	html_runs(f, s);
	fputs("</body></html>\n", f);
	if (fclose(f)) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* --------------------------------------------------------------- JSON */

/* a time in us, or null */
static json_t *jus(double us)
{
	return us < 0 ? json_null() : json_real(us);
}

static json_t *json_probe(const struct probe *p, const struct status_src *s)
{
	uint64_t id = link_of(p, s->runs);

	return json_pack("{s:s, s:s?, s:s, s:s?, s:b, s:I, s:I, s:o, s:o, "
			 "s:f, s:s?, s:o}",
			 "name", p->cfg->name, "peer", p->cfg->peer,
			 "type", p->cfg->type == PROBE_RSTREAM ? "rstream" :
			 "mckey", "target", p->cfg->type == PROBE_RSTREAM ?
			 p->cfg->host : p->cfg->group, "up", p->st.up,
			 "runs", (json_int_t)p->st.runs,
			 "successes", (json_int_t)p->st.successes,
			 "p50_us", jus(p50_us(p)), "p99_us", jus(p99_us(p)),
			 "loss", status_loss(p), "last_failure",
			 p->st.last_reason >= 0 ? reason_of(p) : NULL,
			 "log", id ? json_sprintf("/run/%" PRIu64, id) :
			 json_null());
}

static json_t *json_cells(const struct status_src *s)
{
	json_t *a = json_array();
	size_t i, n = s->nprobes + s->npeers;
	const struct probe *p;
	json_t *o;

	for (i = 0; a && i < n; i++) {
		p = i < s->nprobes ? s->probes[i] : s->peers[i - s->nprobes];
		o = json_probe(p, s);
		if (o)
			json_object_set_new(o, "cell",
					    json_string(status_cell(p, s->cfg)));
		if (json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *json_dev(const struct evr_dev_info *d)
{
	json_t *ports = json_array();
	unsigned k;

	for (k = 0; ports && k < d->nports && k < EVR_DEV_PORTS_MAX; k++)
		json_array_append_new(ports, json_pack("{s:i, s:s, s:i}",
			"port", (int)k + 1, "state", d->ports[k].state,
			"gids", d->ports[k].gids));
	return json_pack("{s:s, s:s, s:s, s:b, s:o}", "name", d->name,
			 "netdev", d->netdev, "state", d->state,
			 "in_use", d->in_use, "ports", ports);
}

static json_t *json_devs(const struct status_src *s)
{
	json_t *a = json_array();
	unsigned i;

	for (i = 0; a && i < s->ndevs; i++)
		json_array_append_new(a, json_dev(&s->devs[i]));
	return a;
}

static json_t *json_resp(const struct responder *r)
{
	json_t *dropped = json_object();
	int k;

	for (k = 0; dropped && k < RR_MAX; k++)
		json_object_set_new(dropped, resp_reason_names[k],
				    json_integer((json_int_t)r->st.dropped[k]));
	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:o}", "responder",
			 r->cfg->label, "listening", r->st.listening,
			 "active", (json_int_t)r->st.active,
			 "served", (json_int_t)r->st.served,
			 "finished", (json_int_t)r->st.done, "dropped", dropped);
}

static json_t *json_resps(const struct status_src *s)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < s->nresponders; i++)
		json_array_append_new(a, json_resp(s->responders[i]));
	return a;
}

static json_t *json_mesh(const struct status_src *s)
{
	const struct mesh_stats *m = s->mesh;

	if (!m)
		return json_null();
	return json_pack("{s:s?, s:b, s:I, s:I, s:I, s:f}",
			 "path", s->peers_file, "ok", m->file_ok,
			 "listed", (json_int_t)m->listed,
			 "peers", (json_int_t)m->peers,
			 "errors", (json_int_t)m->file_errors,
			 "last_good_ts", m->last_good_ts);
}

static json_t *json_run(const struct runrec *r)
{
	return json_pack("{s:I, s:s, s:s, s:f, s:f, s:b, s:s?, s:o, s:o, "
			 "s:o}", "id", (json_int_t)r->id, "probe", r->probe,
			 "peer", r->peer, "start_ts", r->start_ts,
			 "duration_s", r->duration_s, "ok", r->ok,
			 "reason", r->reason,
			 "p50_us", jus(r->p50_ns ? r->p50_ns / 1e3 : -1.),
			 "p99_us", jus(r->p99_ns ? r->p99_ns / 1e3 : -1.),
			 "log", json_sprintf("/run/%" PRIu64, r->id));
}

static json_t *json_runs(const struct status_src *s)
{
	json_t *a = json_array();
	const struct runrec *r;
	unsigned i;

	for (i = 0; a && s->runs && (r = runring_nth(s->runs, i)); i++)
		json_array_append_new(a, json_run(r));
	return a;
}

int status_json(char **buf, size_t *len, const struct status_src *s)
{
	const struct status_cfg *c = s->cfg;
	json_t *o;

	o = json_pack("{s:s, s:s, s:f, s:f, s:{s:f, s:f, s:f, s:i}, s:o, "
		      "s:o, s:o, s:o, s:o}", "host", s->host, "version",
		      s->version, "time", s->now, "start_ts", s->start_ts,
		      "thresholds", "p99_ok_us", c->p99_ok_us, "p99_warn_us",
		      c->p99_warn_us, "loss_bad", c->loss_bad,
		      "recent_runs", PROBE_RECENT,
		      "devices", json_devs(s), "responders", json_resps(s),
		      "probes", json_cells(s), "peers_file", json_mesh(s),
		      "runs", json_runs(s));
	*buf = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!*buf)
		return -ENOMEM;
	*len = strlen(*buf);
	return 0;
}

/* ------------------------------------------------------ /favicon.ico */

/* A browser asks for it with every page that names no icon (/run/ID's
 * text): a green square, not a 404 in its console. */
int status_icon(char **buf, size_t *len)
{
	static const char svg[] =
		"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
		"<rect width=\"16\" height=\"16\" fill=\"#2e7d32\"/></svg>\n";

	*buf = strdup(svg);
	*len = sizeof(svg) - 1;
	return *buf ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------- /run/ID */

int status_run(char **buf, size_t *len, const struct runring *r,
	       const char *url)
{
	const struct runrec *rec;
	char *end, t[40];
	unsigned long long id;
	int n;

	if (strncmp(url, "/run/", 5) || url[5] < '0' || url[5] > '9')
		return 0;
	id = strtoull(url + 5, &end, 10);
	if (*end || !(rec = runring_find(r, id)))
		return 0;
	utc(t, sizeof(t), rec->start_ts);
	n = asprintf(buf, "run %llu of probe %s%s%s, started %s: %s%s\n\n%s",
		     id, rec->probe, rec->peer[0] ? ", peer " : "", rec->peer,
		     t, rec->ok ? "ok" : "FAILED, ", rec->ok ? "" : rec->reason,
		     rec->log ? rec->log->buf : "(no log was kept)\n");
	if (n < 0)
		return -ENOMEM;
	*len = (size_t)n;
	return 1;
}
