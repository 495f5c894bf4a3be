/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* --json records; the schema is rstream.1's and mckey.1's JSON OUTPUT. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "jsonout.h"
#include "report.h"
#include "mckey_opts.h"
#include "parse.h"
#include "rstream_opts.h"

/* Enough digits for nanosecond times and rates, without the 17-digit
 * noise of a double's exact value. */
#define JO_DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | \
		       JSON_REAL_PRECISION(12))

int jo_emit(FILE *out, json_t *rec)
{
	int ret = -1;

	if (!rec)
		return -1;
	if (!json_dumpf(rec, out, JO_DUMP_FLAGS) && fputc('\n', out) != EOF)
		ret = 0;
	json_decref(rec);
	if (fflush(out))
		ret = -1;
	return ret;
}

json_t *jo_record(const char *type)
{
	return json_pack("{s:s}", "type", type);
}

/* Setters that tolerate a NULL object (a failed allocation earlier): the
 * record is then dropped by jo_emit as a whole. */
static void set(json_t *o, const char *k, json_t *v)
{
	if (o)
		json_object_set_new(o, k, v);
	else
		json_decref(v);
}

static void set_str(json_t *o, const char *k, const char *v)
{
	set(o, k, json_string(v ? v : ""));
}

static void set_int(json_t *o, const char *k, long long v)
{
	set(o, k, json_integer(v));
}

static void set_u64(json_t *o, const char *k, uint64_t v)
{
	/* JSON numbers above 2^63 do not occur in these counters */
	set(o, k, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

static void set_real(json_t *o, const char *k, double v)
{
	set(o, k, json_real(v));
}

static void set_bool(json_t *o, const char *k, int v)
{
	set(o, k, json_boolean(v));
}

/* ------------------------------------------------------------------ */
/* rstream                                                             */

static const char *io_name(enum evr_io_mode m)
{
	switch (m) {
	case EVR_IO_ASYNC:
		return "async";
	case EVR_IO_BLOCK:
		return "blocking";
	default:
		return "nonblocking";
	}
}

static const char *addr_fmt_name(enum evr_addr_fmt f)
{
	switch (f) {
	case EVR_ADDR_IP:
		return "ip";
	case EVR_ADDR_IPV6:
		return "ipv6";
	case EVR_ADDR_GID:
		return "gid";
	default:
		return "name";
	}
}

/* Both tools' first record; the caller adds to it and its options. */
static json_t *start_record(const char *tool, const char *version,
			    const char *mode, const char *transport)
{
	json_t *r = jo_record("start");

	set_str(r, "tool", tool);
	set_str(r, "version", version);
	set_str(r, "mode", mode);
	set_str(r, "transport", transport);
	return r;
}

/* How a row of EVR_STREAM_OPTIONS is echoed (its JSON column): the
 * encodings, each with the schema of what it writes
 * (jo_rstream_options_schema()). */
enum jo_enc {
	JE_INT, JE_BOOL, JE_SECS, JE_STR, JE_STR_NULL, JE_PORT, JE_ADDR_FMT,
	JE_TESTS, JE_NEGOTIATE, JE_POLL,
};
enum jo_when { JW_ALWAYS, JW_CUSTOM, JW_ASYNC, JW_SET };

struct jo_opt {
	const char *key;            /* NULL: not echoed */
	enum jo_enc enc;
	enum jo_when when;
	enum cli_side side;         /* echoed on that side only */
	const char *name;           /* the option's name, or NULL */
	size_t off, size;           /* the field */
};

#define JSON_JSON(k, e, w) .key = (k), .enc = JE_##e, .when = JW_##w
#define JSON_NOJSON .key = NULL
#define CLI_NAME_CLI(letter, lname, name_, what, why) .name = (name_)
#define CLI_NAME_NOCLI .name = NULL
#define JO_ROW(f, kind, lo, hi, def, fl, side_, cli, help, json, dkey) \
	{ JSON_##json, .side = CLI_##side_, CLI_NAME_##cli, \
	  .off = offsetof(struct evr_stream_opts, f), \
	  .size = sizeof(((struct evr_stream_opts *)0)->f) },
static const struct jo_opt jo_opts[] = { EVR_STREAM_OPTIONS(JO_ROW) };
#undef JO_ROW
#undef JSON_JSON
#undef JSON_NOJSON
#undef CLI_NAME_CLI
#undef CLI_NAME_NOCLI

/* A whole number field of 4 or 8 bytes (EVR_STREAM_OPTIONS says which) */
static uint64_t field_u(const struct evr_stream_opts *o, const struct jo_opt *j)
{
	const char *p = (const char *)o + j->off;
	uint32_t u32;
	uint64_t u64;

	if (j->size == sizeof(u64)) {
		memcpy(&u64, p, sizeof(u64));
		return u64;
	}
	memcpy(&u32, p, sizeof(u32));
	return u32;
}

static const char *field_str(const struct evr_stream_opts *o,
			     const struct jo_opt *j)
{
	const char *s;

	memcpy(&s, (const char *)o + j->off, sizeof(s));
	return s;
}

/* The words of the encodings that are rstream's own. */
static json_t *enc_word(const struct evr_stream_opts *o, enum jo_enc enc)
{
	switch (enc) {
	case JE_ADDR_FMT:
		return json_string(addr_fmt_name(o->addr_fmt));
	case JE_TESTS:
		/* the test series: "all" sizes, one custom test, or the
		 * default */
		return json_string(o->custom ? "custom" :
				   o->size_all ? "all" : "default");
	case JE_NEGOTIATE:
		return json_string(o->no_negotiate ? "never" :
				   o->force_negotiate ? "always" : "auto");
	default:
		/* --poll-usec's words: 0 never polls */
		return json_integer(o->poll_us == EVR_POLL_NEVER ? 0 :
				    o->poll_us);
	}
}

static json_t *enc_value(const struct evr_stream_opts *o,
			 const struct jo_opt *j)
{
	const char *s;

	switch (j->enc) {
	case JE_INT:
		/* JSON numbers above 2^63 do not occur in these options */
		return json_integer((json_int_t)field_u(o, j));
	case JE_BOOL:
		return json_boolean(field_u(o, j));
	case JE_SECS:
		return json_real((double)field_u(o, j) / 1000.0);
	case JE_STR:
		s = field_str(o, j);
		return json_string(s ? s : "");
	case JE_STR_NULL:
		s = field_str(o, j);
		return s ? json_string(s) : json_null();
	case JE_PORT:
		/* a number, unless it is a service name */
		s = field_str(o, j);
		if (s && s[0] && strspn(s, "0123456789") == strlen(s))
			return json_integer(atoi(s));
		return json_string(s ? s : "");
	default:
		return enc_word(o, j->enc);
	}
}

/* Is the row echoed for these options? */
static int echoed(const struct evr_stream_opts *o, const struct jo_opt *j)
{
	if (!j->key ||
	    (j->side == CLI_CLIENT && o->server) ||
	    (j->side == CLI_SERVER && !o->server))
		return 0;
	return j->when == JW_ALWAYS ||
	       (j->when == JW_CUSTOM && o->custom) ||
	       (j->when == JW_ASYNC && o->io == EVR_IO_ASYNC) ||
	       (j->when == JW_SET && field_u(o, j));
}

json_t *jo_rstream_start(const struct rstream_cli *cli, const char *version)
{
	struct evr_stream_opts eff; /* the defaults the engine runs with */
	json_t *r, *opt;
	size_t i;

	/* options that make no plan are echoed as given (the engine's
	 * refusal follows) */
	if (evr_stream_opts_resolve(&cli->o, &eff))
		eff = cli->o;
	r = start_record("rstream", version, eff.server ? "server" : "client",
			 evr_stream_transport_name(eff.transport));
	set_str(r, "io", io_name(eff.io));
	/* the options, in the table's order */
	opt = json_object();
	for (i = 0; i < CLI_ARRAY_SIZE(jo_opts); i++)
		if (echoed(&eff, &jo_opts[i]))
			set(opt, jo_opts[i].key, enc_value(&eff, &jo_opts[i]));
	set(r, "options", opt);
	return r;
}

/* What each encoding writes, as JSON Schema (doc/rstream.schema.json.in's
 * $defs: count, seconds). */
static json_t *enc_schema(enum jo_enc enc)
{
	switch (enc) {
	case JE_INT:
		return json_pack("{s:s}", "$ref", "#/$defs/count");
	case JE_BOOL:
		return json_pack("{s:s}", "type", "boolean");
	case JE_SECS:
		return json_pack("{s:s}", "$ref", "#/$defs/seconds");
	case JE_STR:
		return json_pack("{s:s}", "type", "string");
	case JE_STR_NULL:
		return json_pack("{s:[ss]}", "type", "string", "null");
	case JE_PORT:
		return json_pack("{s:[ss],s:s}", "type", "integer", "string",
				 "description", "a number, or a service name");
	case JE_ADDR_FMT:
		return json_pack("{s:[ssss]}", "enum", "name", "ip", "ipv6",
				 "gid");
	case JE_TESTS:
		return json_pack("{s:[sss],s:s}", "enum", "default", "all",
				 "custom", "description", "rstream's series, "
				 "-S all, or one test of -S, -C, -I");
	case JE_NEGOTIATE:
		return json_pack("{s:[sss],s:s}", "enum", "auto", "never",
				 "always", "description", "the test plan: "
				 "--no-negotiate never sends it, --negotiate "
				 "always");
	default:
		return json_pack("{s:s,s:s}", "$ref", "#/$defs/count",
				 "description", "async: how long a fast "
				 "exchange polls before it sleeps; 0 never");
	}
}

json_t *jo_rstream_options_schema(void)
{
	json_t *s = json_pack("{s:s,s:b,s:[],s:{}}", "type", "object",
			      "additionalProperties", 0, "required",
			      "properties");
	json_t *req = json_object_get(s, "required");
	json_t *props = json_object_get(s, "properties");
	json_t *p;
	size_t i;

	for (i = 0; s && i < CLI_ARRAY_SIZE(jo_opts); i++) {
		const struct jo_opt *j = &jo_opts[i];

		if (!j->key)
			continue;
		p = enc_schema(j->enc);
		/* which option it echoes */
		if (j->name && !json_object_get(p, "description"))
			set(p, "description", json_sprintf("rstream %s",
							   j->name));
		set(props, j->key, p);
		/* on both sides, always: always there */
		if (j->side == CLI_BOTH && j->when == JW_ALWAYS)
			json_array_append_new(req, json_string(j->key));
	}
	return s;
}

json_t *jo_lat(const struct evr_lat_stats *l)
{
	json_t *o = json_object();

	set_u64(o, "samples", l->samples);
	set_u64(o, "min_ns", l->min_ns);
	set_u64(o, "p50_ns", l->p50_ns);
	set_u64(o, "p90_ns", l->p90_ns);
	set_u64(o, "p99_ns", l->p99_ns);
	set_u64(o, "p99_9_ns", l->p999_ns);
	set_u64(o, "max_ns", l->max_ns);
	set_real(o, "mean_ns", l->mean_ns);
	return o;
}

json_t *jo_progress(const struct evr_progress *p)
{
	json_t *o = jo_record("progress");

	set_str(o, "test", p->test);
	set_int(o, "conn", p->conn_id);
	if (p->conn_total > 1)
		set_int(o, "conn_index", p->conn_index);
	if (p->peer && p->peer[0])
		set_str(o, "peer", p->peer);
	set_real(o, "elapsed_s", p->elapsed_ns / 1e9);
	set_u64(o, "iters_done", p->iters_done);
	if (p->iters_total)
		set_u64(o, "iters_total", p->iters_total);
	if (p->duration_ns)
		set_real(o, "duration_s", p->duration_ns / 1e9);
	set_u64(o, "bytes", p->bytes);
	set_real(o, "gbps", p->gbps);
	return o;
}

json_t *jo_result(const struct evr_result *r)
{
	return jo_result_since(r, 0);
}

/*
 * A result's usec/xfer, as the table's column; 0 for a run too short to
 * time.  With -c N it is the mean of the connections' own (rstream(1),
 * MANY CONNECTIONS).
 */
static double usec_per_xfer(const struct evr_result *r)
{
	double usec = r->elapsed_ns / 1000.0;

	if (r->nconns)
		return r->count ?
		       r->iter_mean_ns / 1000.0 / (r->count * 2.0) : 0.0;
	return r->iters && r->count ?
	       (usec / r->iters) / (r->count * 2.0) : 0.0;
}

json_t *jo_result_since(const struct evr_result *r, uint64_t run_t0)
{
	json_t *o = jo_record("result");

	set_str(o, "test", r->name);
	if (r->nconns > 1) {
		/* -c N: the sum over N connections */
		set_int(o, "connections", r->nconns);
		set_real(o, "conn_mean_elapsed_s", r->conn_mean_ns / 1e9);
	} else {
		set_int(o, "conn", r->conn_id);
		if (r->conn_index)
			set_int(o, "conn_index", r->conn_index);
	}
	set_str(o, "peer", r->peer);
	set_int(o, "bytes_per_xfer", r->size);
	set_int(o, "xfers_per_iter", r->count);
	set_int(o, "iters", r->iters);
	set_u64(o, "total_bytes", r->bytes);
	/* when the test's clock started, on the run's clock: with it an
	 * aggregate's wall time can be checked against its connections' */
	if (run_t0 && r->start_ns >= run_t0)
		set_u64(o, "start_ns", r->start_ns - run_t0);
	set_u64(o, "elapsed_ns", r->elapsed_ns);
	set_real(o, "elapsed_s", r->elapsed_ns / 1e9);
	/* upstream's columns, unrounded; 0 for a run too short to time */
	set_real(o, "gbps", r->elapsed_ns ?
			    (r->bytes * 8.0) / (double)r->elapsed_ns : 0.0);
	set_real(o, "usec_per_xfer", usec_per_xfer(r));
	if (r->lat)
		set(o, "latency", jo_lat(r->lat));
	if (r->split) {
		json_t *sp = json_object();

		set(sp, "net", jo_lat(&r->split->part[EVR_SPLIT_NET]));
		set(sp, "peer", jo_lat(&r->split->part[EVR_SPLIT_PEER]));
		set(sp, "local", jo_lat(&r->split->part[EVR_SPLIT_LOCAL]));
		set_u64(sp, "rejected", r->split->rejected);
		set(o, "split", sp);
	}
	if (r->mps) {
		json_t *pc = json_object();

		set_int(pc, "asked_per_s", r->mps);
		set_real(pc, "achieved_per_s", pace_achieved(r));
		set_u64(pc, "late", r->late);
		set_u64(pc, "late_max_ns", r->late_max_ns);
		set(o, "pace", pc);
	}
	if (r->spin_sleeps)
		set_u64(o, "spin_sleeps", r->spin_sleeps);
	return o;
}

/* A transport's rows that have a key, those with the flags in mask equal
 * to want: a yes or no a boolean, the rest numbers. */
static void set_rows(json_t *o, const struct evr_setting *rows, unsigned n,
		     unsigned mask, unsigned want)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		const struct evr_setting *r = &rows[i];

		if (!r->key || (r->flags & mask) != want)
			continue;
		if (r->flags & EVR_SETTING_BOOL)
			set_bool(o, r->key, r->value != 0);
		else
			set_int(o, r->key, r->value);
	}
}

json_t *jo_settings(unsigned conn, const char *peer,
		    const struct evr_conn_settings *s)
{
	json_t *o = jo_record("settings");

	set_int(o, "conn", conn);
	set_str(o, "peer", s->peer[0] ? s->peer : peer);
	set_str(o, "local", s->local);
	set_str(o, "transport", evr_stream_transport_name(s->transport));
	/* the transport's own settings, as it names them, then the
	 * keepalive's: no transport is named here */
	set_rows(o, s->rows, s->nrows, EVR_SETTING_KEEPALIVE, 0);
	set_bool(o, "keepalive", s->keepalive_on);
	if (s->keepalive_on) {
		set_int(o, "keepalive_idle_s", s->keepalive_idle_s);
		set_rows(o, s->rows, s->nrows, EVR_SETTING_KEEPALIVE,
			 EVR_SETTING_KEEPALIVE);
	}
	return o;
}

json_t *jo_info(const struct evr_info *i)
{
	json_t *o;

	switch (i->kind) {
	case EVR_INFO_LISTENING:
		o = jo_record("listening");
		if (i->local && i->local[0])
			set_str(o, "address", i->local);
		return o;
	case EVR_INFO_KEEPALIVE:
		/* conn 0 on a server: the listener */
		o = jo_record("keepalive");
		set_int(o, "conn", i->conn_id);
		set_bool(o, "on", i->keepalive_on);
		set_int(o, "idle_s", i->keepalive_idle);
		return o;
	case EVR_INFO_ACCEPTED:
		o = jo_record("accepted");
		set_int(o, "conn", i->conn_id);
		set_str(o, "peer", i->peer);
		return o;
	case EVR_INFO_CONN_DONE:
		o = jo_record("conn_done");
		set_int(o, "conn", i->conn_id);
		set_str(o, "peer", i->peer);
		set_bool(o, "negotiated", i->negotiated);
		return o;
	case EVR_INFO_SETTINGS:
		return i->settings ? jo_settings(i->conn_id, i->peer,
						 i->settings) : NULL;
	case EVR_INFO_TURNED_AWAY:
		return NULL; /* the conn_failed record says it, once */
	}
	return NULL;
}

json_t *jo_failure(const char *type, const struct evr_failure *f,
		   const char *message, int exit_status)
{
	json_t *o = jo_record(type);

	set_str(o, "message", message);
	if (f->phase != EVR_PH_SETUP)
		set_int(o, "conn", f->conn_id);
	set_str(o, "error", evr_err_name(f->err));
	if (f->err < 0 && -f->err < EVR_E_BASE)
		set_int(o, "errno", -f->err);
	set_str(o, "phase", evr_phase_name(f->phase));
	set_str(o, "where", f->where);
	set_str(o, "peer", f->peer);
	if (f->test[0]) {
		set_str(o, "test", f->test);
		set_int(o, "test_index", f->test_index);
		set_int(o, "tests_total", f->test_total);
		set_u64(o, "iters_done", f->iters_done);
		set_u64(o, "iters_total", f->iters_total);
		set_u64(o, "xfers_done", f->xfers_done);
		set_u64(o, "xfers_total", f->xfers_total);
	}
	set_u64(o, "bytes_done", f->bytes_done);
	if (f->device[0]) {
		set_str(o, "device", f->device);
		if (f->port)
			set_int(o, "port", f->port);
	}
	if (exit_status >= 0)
		set_int(o, "exit_status", exit_status);
	return o;
}

json_t *jo_error(const char *message, int exit_status)
{
	json_t *o = jo_record("error");

	set_str(o, "message", message);
	set_int(o, "exit_status", exit_status);
	return o;
}

json_t *jo_threshold(const struct threshold *t, const char *message)
{
	json_t *o = jo_record("threshold");

	set_str(o, "expr", t->expr);
	set_str(o, "measure", thr_measure_name(t->m));
	set_str(o, "op", t->below ? "<" : ">");
	set_real(o, "limit", t->limit);
	set_str(o, "unit", thr_unit(t->m));
	set_bool(o, "passed", t->checked && !t->failed);
	if (t->checked) {
		set_real(o, "worst", t->worst);
		set_str(o, "test", t->where);
	}
	set_str(o, "message", message);
	return o;
}

json_t *jo_rstream_summary(const struct jo_totals *t, int exit_status)
{
	json_t *o = jo_record("summary");

	set_str(o, "tool", "rstream");
	set_int(o, "results", t->results);
	set_u64(o, "total_bytes", t->total_bytes);
	set_real(o, "elapsed_s", t->elapsed_ns / 1e9);
	set_int(o, "accepted", t->accepted);
	set_int(o, "conn_done", t->conn_done);
	set_int(o, "conn_failed", t->conn_failed);
	set_int(o, "exit_status", exit_status);
	return o;
}

/* ------------------------------------------------------------------ */
/* mckey                                                               */

json_t *jo_mckey_start(const struct mckey_cli *cli, const char *version)
{
	struct evr_mcast_opts eff; /* the defaults the engine runs with */
	const struct evr_mcast_opts *m = &eff;
	struct evr_setting rows[EVR_SETTINGS_MAX];
	json_t *r, *opt;
	int nrows;

	if (evr_mcast_opts_resolve(&cli->o, &eff))
		eff = cli->o;
	r = start_record("mckey", version, m->sender ? "sender" : "receiver",
			 evr_mc_transport_name(m->transport));
	opt = json_object();

	set_str(opt, "group", m->group);
	set_bool(opt, "unmapped", m->unmapped != NULL);
	set(opt, "bind", m->bind_addr ? json_string(m->bind_addr) :
					json_null());
	set_int(opt, "qps", m->nqps);
	set_int(opt, "messages_per_qp", m->count);
	set_int(opt, "message_bytes", m->size);
	/* the transport's own (UDP's port, RDMA's port space) */
	nrows = evr_mcast_settings(m, rows, EVR_SETTINGS_MAX);
	set_rows(opt, rows, nrows > 0 ? (unsigned)nrows : 0, 0, 0);
	set_bool(opt, "sendonly", m->sendonly);
	set_bool(opt, "loopback", !m->no_loopback);
	set_real(opt, "settle_s", m->settle_ms / 1000.0);
	set_real(opt, "deadline_s", m->deadline_ms / 1000.0);
	set_real(opt, "rate_per_s", m->rate);
	set_int(opt, "window", m->window);
	set_int(opt, "max_senders", m->max_senders);
	set(r, "options", opt);
	return r;
}

json_t *jo_mc_phase(enum evr_mc_phase p)
{
	static const char *const names[] = {
		[EVR_MC_PH_STARTING] = "starting",
		[EVR_MC_PH_JOINING] = "joining",
		[EVR_MC_PH_TRANSFER] = "transfer",
		[EVR_MC_PH_TRANSFER_DONE] = "transfer_done",
	};
	json_t *o = jo_record("phase");

	set_str(o, "phase", (unsigned)p < CLI_ARRAY_SIZE(names) ?
			    names[p] : "unknown");
	return o;
}

json_t *jo_mc_join(const char *group, const struct evr_mc_joined *j)
{
	json_t *o = jo_record("join");

	set_int(o, "qp", j->qp);
	set_str(o, "group", group);
	set_str(o, "joined_address", j->dgid);
	set_int(o, "mlid", j->mlid);
	set_int(o, "sl", j->sl);
	set_u64(o, "join_ns", j->join_ns);
	set_real(o, "join_ms", j->join_ns / 1e6);
	return o;
}

json_t *jo_mc_cm_event(unsigned qp, const char *event, int status,
		       int is_error)
{
	json_t *o = jo_record("cm_event");

	set_int(o, "qp", qp);
	set_str(o, "event", event);
	set_int(o, "status", status);
	set_bool(o, "is_error", is_error);
	return o;
}

json_t *jo_mc_failure(const struct evr_mc_failure *f)
{
	json_t *o = jo_record("error");
	char line[512];

	cli_mc_failure_str(f, line, sizeof(line));
	set_str(o, "message", line);
	set_int(o, "qp", f->qp);
	set_int(o, "err", f->err);
	set_str(o, "error", evr_err_name(f->code));
	/* "system": the errno, whether a call said it or the engine
	 * (the deadline's ETIME) */
	if (f->with_errno)
		set_int(o, "errno", f->sys_errno);
	else if (f->code < 0 && -f->code < EVR_E_BASE)
		set_int(o, "errno", -f->code);
	return o;
}

json_t *jo_mc_qp(int sender, const struct evr_mc_qp_report *q)
{
	json_t *o = jo_record(sender ? "send_stats" : "recv_stats");

	set_int(o, "qp", q->qp);
	set_bool(o, "joined", q->joined);
	set_bool(o, "timed_out", q->timed_out);
	if (sender) {
		set_u64(o, "sent", q->sent);
		set_u64(o, "completed", q->send_completed);
	} else {
		set_u64(o, "received", q->received);
		set_u64(o, "expected", q->expected);
		set_u64(o, "foreign", q->foreign);
		set_u64(o, "bad", q->bad);
		set_u64(o, "untracked", q->untracked);
		set_int(o, "senders", q->nsenders);
		set_int(o, "window", q->window);
		set_int(o, "max_senders", q->max_senders);
	}
	return o;
}

json_t *jo_mc_sender(unsigned qp, const struct evr_mc_sender_report *s)
{
	json_t *o = jo_record("sender_stats");
	char id[16];

	snprintf(id, sizeof(id), "%08x", s->sender);
	set_int(o, "qp", qp);
	set_str(o, "sender", id);
	set_u64(o, "received", s->unique);
	set_int(o, "expected", s->count);
	set_u64(o, "lost", s->lost);
	set_u64(o, "duplicates", s->duplicates);
	set_u64(o, "reordered", s->reordered);
	set_u64(o, "not_received", s->not_received);
	set_u64(o, "outside_window", s->out_of_window);
	return o;
}

json_t *jo_mckey_summary(int return_status, int exit_status,
			 uint64_t elapsed_ns, unsigned joined, unsigned nqps)
{
	json_t *o = jo_record("summary");

	set_str(o, "tool", "mckey");
	set_int(o, "qps", nqps);
	set_int(o, "joined", joined);
	set_real(o, "elapsed_s", elapsed_ns / 1e9);
	set_int(o, "return_status", return_status);
	set_int(o, "exit_status", exit_status);
	return o;
}
