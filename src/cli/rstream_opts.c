/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <assert.h>
#include <string.h>
#include <strings.h>

#include "rstream_opts.h"
#include "parse.h"

int rstream_test_opt(struct rstream_cli *cli, const char *arg)
{
	struct evr_stream_opts *o = &cli->o;
	static const struct {
		const char *word;
		char letter;
	} words[] = {
		/* upstream compares this many leading characters */
		{ "socket", 's' }, { "async", 'a' }, { "block", 'b' },
		{ "nonblock", 'n' }, { "resolve", 'r' }, { "verify", 'v' },
		{ "fork", 'f' },
	};
	char c = 0;
	size_t i;

	if (strlen(arg) == 1) {
		c = arg[0];
	} else {
		for (i = 0; i < CLI_ARRAY_SIZE(words); i++)
			if (!strncasecmp(words[i].word, arg,
					 strlen(words[i].word))) {
				c = words[i].letter;
				break;
			}
	}
	switch (c) {
	case 's':
		o->transport = EVR_TRANSPORT_TCP;
		break;
	case 'a':
		cli->async = 1;
		break;
	case 'b':
		cli->blocking = 1;
		break;
	case 'n':
		cli->blocking = 0;
		break;
	case 'f':
		/* upstream: fork implies kernel sockets (for librspreload) */
		o->fork = 1;
		o->transport = EVR_TRANSPORT_TCP;
		break;
	case 'r':
		o->resolve_rdma = 1;
		break;
	case 'v':
		o->verify = 1;
		break;
	default:
		return -1;
	}
	return 0;
}

/* Per connection: its socket (TCP) or its completion channel (RDMA: the
 * CM ids share one event channel); besides: stdio, the loop's epoll,
 * signal and async fds, the listener and its spare, RDMA CM's event
 * channel and the devices' verbs contexts.  A little slack for the C
 * library (resolver, /proc). */
/* ---- the values that are more than a number ---- */

static int set_addr_fmt(void *obj, const char *arg)
{
	struct evr_stream_opts *o = &((struct rstream_cli *)obj)->o;

	/* Upstream tests prefixes ("ip", "gid"), so -f ipv4 or -f gids
	 * work there and here; ipv6 is evrdma's own (IPv6 only).  Stricter
	 * on purpose: a word that is none of these is an error, where
	 * upstream warns and resolves names (-f nmae would test what the
	 * user did not ask for). */
	if (!strcasecmp(arg, "name"))
		o->addr_fmt = EVR_ADDR_NAME;
	else if (!strcasecmp(arg, "ipv6"))
		o->addr_fmt = EVR_ADDR_IPV6;
	else if (!strncasecmp(arg, "ip", 2))
		o->addr_fmt = EVR_ADDR_IP;
	else if (!strncasecmp(arg, "gid", 3))
		o->addr_fmt = EVR_ADDR_GID;
	else
		return -1;
	if (o->addr_fmt == EVR_ADDR_GID)
		o->resolve_rdma = 1;
	return 0;
}

static void mark_client(void *obj)
{
	((struct rstream_cli *)obj)->o.server = 0;
}

/* -I, -C and a numeric -S: not the default series */
static void mark_custom(void *obj)
{
	((struct rstream_cli *)obj)->o.custom = 1;
}

/* -S all, or a size (its row's range; then the test is custom) */
static int set_size(void *obj, const char *arg)
{
	if (strncasecmp("all", arg, 3))
		return CLI_SET_NUMBER;
	((struct rstream_cli *)obj)->o.size_all = 1;
	return 0;
}

static int set_port(void *obj, const char *arg)
{
	/* a number, signed or not ("-1" too), is a port number; anything
	 * else a service name */
	const char *d = arg + (*arg == '-' || *arg == '+');
	long long v;

	if (!*d || (strspn(d, "0123456789") == strlen(d) &&
		    cli_num(arg, 1, 65535, 0, &v)))
		return -1;
	((struct rstream_cli *)obj)->o.port = arg;
	return 0;
}

static int set_test(void *obj, const char *arg)
{
	return rstream_test_opt(obj, arg);
}

/* --fail-if EXPR, repeatable; its own message (CLI_OWN_MSG) */
static int set_fail_if(void *obj, const char *arg)
{
	struct rstream_cli *cli = obj;

	return thr_add(&cli->fail_if, arg, THR_RSTREAM, cli->fail_if_err,
		       sizeof(cli->fail_if_err)) ? -1 : 0;
}

static const char *fail_if_why(void *obj)
{
	return ((struct rstream_cli *)obj)->fail_if_err;
}

/* ---- the options: EVR_STREAM_OPTIONS (evrdma/stream.h), then ours ---- */

enum row_id {
#define ROW_ID(f, ...) R_##f,
	EVR_STREAM_OPTIONS(ROW_ID)
#undef ROW_ID
	/* rstream's own: no option of the engine's */
	R_TEST, R_TRACE, R_HELP, R_VERSION, R_JSON, R_PER_CONN, R_CHECK,
	R_NO_HOST_CHECK, R_FAIL_IF,
	R_N
};

/* A row: the option (name NULL: rstream has none for the field), the
 * table's flags (EVR_SOPT_*), and its --help: upstream's usage line and
 * the lines under it, or our synopsis and text. */
struct row {
	struct cli_opt opt;
	unsigned sflags;
	const char *syn, *text;
};

#define KIND_NUM .kind = CLI_NUM
#define KIND_MS .kind = CLI_SECS
#define KIND_FLAG .kind = CLI_FLAG
#define KIND_STR .kind = CLI_STR
#define KIND_WORD .kind = CLI_CALL  /* its set(): setters[] */
#define UNIT_NUM 1
#define UNIT_MS 1000.0              /* the field's ms, given in seconds */
#define UNIT_FLAG 1
#define UNIT_STR 1
#define UNIT_WORD 1
#define CLI_CLI(letter, lname_, name_, what_, why_) \
	.val = (letter), .lname = (lname_), .name = (name_), .what = (what_), \
	.why = (why_)
#define CLI_NOCLI .name = NULL
#define HELP_HELP(s, t) .syn = (s), .text = (t)
#define HELP_NOHELP .syn = NULL
#define FLAGS(fl) (((fl) & EVR_SOPT_SUFFIX ? CLI_SUFFIX : 0u) | \
		   ((fl) & EVR_SOPT_ZERO_NEVER ? CLI_ZERO_NEG : 0u))
#define TABLE_ROW(f, kind, lo_, hi_, def, fl, side_, cli, help, ...) \
	[R_##f] = { .opt = { CLI_##cli, KIND_##kind, .flags = FLAGS(fl), \
			     .lo = (lo_) / UNIT_##kind, \
			     .hi = (hi_) / UNIT_##kind, \
			     .off = CLI_FIELD(struct rstream_cli, o.f), \
			     .side = CLI_##side_ }, \
		    .sflags = (fl), HELP_##help },
#define OWN(m) .off = CLI_FIELD(struct rstream_cli, m)

static const struct row rows[R_N] = {
	EVR_STREAM_OPTIONS(TABLE_ROW)
	/* the value named, then upstream's usage */
	[R_TEST] = { { 'T', NULL, "-T", CLI_CALL, .flags = CLI_BAD_USAGE,
		       .set = set_test,
		       .what = "one of s a b n f r v, or socket async block "
			       "nonblock fork resolve verify" },
		     .syn = "[-T test_option]",
		     .text = "    s|sockets - use standard tcp/ip sockets\n"
			     "    a|async - asynchronous operation (use poll)\n"
			     "    b|blocking - use blocking calls\n"
			     "    f|fork - fork server processing\n"
			     "    n|nonblocking - use nonblocking calls\n"
			     "    r|resolve - use rdma cm to resolve address\n"
			     "    v|verify - verify data" },
	[R_TRACE] = { { 0, "trace", "--trace", CLI_FLAG, OWN(trace) },
		      .syn = "--trace",
		      .text = "print every state transition on stderr" },
	[R_HELP] = { { 0, "help", "--help", CLI_RETURN,
		       .ret = RSTREAM_PARSE_HELP } },
	[R_VERSION] = { { 0, "version", "--version", CLI_RETURN,
			  .ret = RSTREAM_PARSE_VERSION } },
	[R_JSON] = { { 0, "json", "--json", CLI_FLAG, OWN(json) },
		     .syn = "--json",
		     .text = "JSON Lines on stdout instead of the table (see "
			     "rstream(1))" },
	[R_PER_CONN] = { { 0, "per-conn", "--per-conn", CLI_FLAG,
			   OWN(per_conn), .side = CLI_CLIENT },
			 .syn = "--per-conn",
			 .text = "with -c: a row per connection too, named "
				 "test#K" },
	[R_CHECK] = { { 0, "check", "--check", CLI_FLAG, OWN(check) },
		      .syn = "--check",
		      .text = "check this host for the run (memlock, device "
			      "access,\nthe -b address's RDMA device, port, "
			      "GID), print\na table (or --json), run nothing" },
	[R_NO_HOST_CHECK] = { { 0, "no-host-check", "--no-host-check",
				CLI_FLAG, OWN(no_host_check) },
			      .syn = "--no-host-check",
			      .text = "do not check the host before an RDMA run "
				      "(a failure\nis still explained)" },
	[R_FAIL_IF] = { { 0, "fail-if", "--fail-if", CLI_CALL,
			  .set = set_fail_if, .why_bad = fail_if_why,
			  .side = CLI_CLIENT,
			  .what = "a measure, > or <, and a limit" },
			.syn = "--fail-if EXPR",
			.text = "fail the run (exit status 8) when a test's "
				"measure passes\nthe limit, e.g. 'p99>50us', "
				"'max>1ms', 'gbps<10', 'usec>5';\nmeasures: "
				"min p50 p90 p99 p99.9 max mean (round trip),\n"
				"usec (usec/xfer), gbps; repeatable" },
};

#undef KIND_NUM
#undef KIND_MS
#undef KIND_FLAG
#undef KIND_STR
#undef KIND_WORD
#undef UNIT_NUM
#undef UNIT_MS
#undef UNIT_FLAG
#undef UNIT_STR
#undef UNIT_WORD
#undef CLI_CLI
#undef CLI_NOCLI
#undef HELP_HELP
#undef HELP_NOHELP
#undef FLAGS
#undef TABLE_ROW
#undef OWN

/* The values that are more than a number (a row of kind WORD has one). */
static const struct {
	enum row_id row;
	int (*set)(void *obj, const char *arg);
} setters[] = {
	{ R_addr_fmt, set_addr_fmt }, { R_size, set_size },
	{ R_port, set_port },
};

/*
 * getopt's order, which is said twice: getopt_long's message for an
 * ambiguous prefix ("--n", "--max") lists its candidates in it, and of
 * several options given on the wrong side the first in it is named
 * (tests/check_cli.c holds both).  A row not listed comes after these,
 * in the table's order: a new option's place, unless it must go
 * elsewhere to keep both.
 */
static const enum row_id getopt_order[] = {
	R_host, R_bind_addr, R_addr_fmt, R_buffer_size, R_inline_size,
	R_iters, R_count, R_size, R_port, R_keepalive, R_TEST, R_stall_ms,
	R_TRACE, R_interval_ms, R_HELP, R_VERSION, R_JSON, R_report_settings,
	R_poll_us, R_conns, R_duration_ms, R_percentiles, R_lat_split,
	R_PER_CONN, R_all_at_once, R_no_negotiate, R_force_negotiate, R_once,
	R_max_conns, R_max_memory, R_chunk_size, R_CHECK, R_NO_HOST_CHECK,
	R_FAIL_IF,
};

/* --help's order for evrdma's options, for people; a row not listed
 * comes after these, in getopt's order.  Upstream's (a letter, no long
 * name) come first, in getopt's order, as upstream's usage has them. */
static const enum row_id help_order[] = {
	R_stall_ms, R_once, R_no_negotiate, R_force_negotiate, R_TRACE,
	R_duration_ms, R_percentiles, R_lat_split, R_mps, R_interval_ms,
	R_JSON, R_report_settings, R_poll_us, R_conns, R_PER_CONN, R_all_at_once,
	R_max_conns, R_max_memory, R_chunk_size, R_CHECK, R_NO_HOST_CHECK,
	R_FAIL_IF,
};

/* The option table getopt reads, in its order, and the row of each. */
static struct cli_opt options[R_N];
static const struct row *option_row[R_N];
static size_t noptions;

static void add_option(enum row_id id)
{
	const struct row *r = &rows[id];
	struct cli_opt *o = &options[noptions];
	size_t i;

	for (i = 0; i < noptions; i++)
		if (option_row[i] == r)
			return;
	if (!r->opt.name)
		return;
	*o = r->opt;
	/* a long option only: a value of its own past the letters */
	if (!o->val)
		o->val = 256 + (int)id;
	if (r->sflags & EVR_SOPT_CUSTOM)
		o->after = mark_custom;
	if (r->sflags & EVR_SOPT_CLIENT)
		o->after = mark_client;
	for (i = 0; i < CLI_ARRAY_SIZE(setters); i++)
		if (setters[i].row == id) {
			o->kind = CLI_CALL;
			o->set = setters[i].set;
		}
	assert(o->kind != CLI_CALL || o->set);
	option_row[noptions++] = r;
}

static void build_options(void)
{
	size_t i;

	if (noptions)
		return;
	for (i = 0; i < CLI_ARRAY_SIZE(getopt_order); i++)
		add_option(getopt_order[i]);
	for (i = 0; i < R_N; i++)
		add_option((enum row_id)i);
}

static int upstreams(const struct cli_opt *o)
{
	return o->val < 256 && !o->lname;
}

/* Upstream's line and the lines under it, each as it is. */
static void usage_lines(FILE *out, const struct row *r)
{
	const char *t = r->text, *nl;

	fprintf(out, "\t%s\n", r->syn);
	for (; t; t = nl ? nl + 1 : NULL) {
		nl = strchr(t, '\n');
		fprintf(out, "\t%.*s\n", nl ? (int)(nl - t) : (int)strlen(t),
			t);
	}
}

/* Ours: the synopsis, then the text; a "\n" in it goes on under the
 * text's column. */
static void help_lines(FILE *out, const struct row *r)
{
	const char *t = r->text, *nl;

	fprintf(out, "\t%-20s ", r->syn);
	while ((nl = strchr(t, '\n'))) {
		fprintf(out, "%.*s\n\t%21s", (int)(nl - t), t, "");
		t = nl + 1;
	}
	fprintf(out, "%s\n", t);
}

void rstream_usage(FILE *out, const char *prog)
{
	size_t i;

	build_options();
	/* upstream's text, line for line */
	fprintf(out, "usage: %s\n", prog);
	for (i = 0; i < noptions; i++)
		if (upstreams(&options[i]))
			usage_lines(out, option_row[i]);
}

static void help_extra(FILE *out)
{
	const struct row *done[R_N];
	size_t i, j, n = 0;

	fprintf(out, "evrdma options:\n");
	for (i = 0; i < CLI_ARRAY_SIZE(help_order); i++) {
		help_lines(out, &rows[help_order[i]]);
		done[n++] = &rows[help_order[i]];
	}
	for (i = 0; i < noptions; i++) {
		for (j = 0; j < n && done[j] != option_row[i]; j++)
			;
		if (j == n && option_row[i]->syn &&
		    !upstreams(&options[i]))
			help_lines(out, option_row[i]);
	}
	fprintf(out, "\t--help, --version\n");
}

/* ---- rules between options ---- */

static int neg_both(const struct evr_stream_opts *o)
{
	return o->no_negotiate && o->force_negotiate;
}

static int duration_no_neg(const struct evr_stream_opts *o)
{
	return o->duration_ms && o->no_negotiate;
}

static int duration_verify(const struct evr_stream_opts *o)
{
	return o->duration_ms && o->verify;
}

static int conns_blocking(const struct evr_stream_opts *o)
{
	return o->conns > 1 && o->io == EVR_IO_BLOCK;
}

static int mps_split(const struct evr_stream_opts *o)
{
	return o->mps && o->lat_split;
}

static int poll_not_async(const struct evr_stream_opts *o)
{
	return o->poll_us && o->io != EVR_IO_ASYNC;
}

/* In the order they are checked: the first that holds is the one line
 * said.  Those before_sides come before the side rule (so a server given
 * both --negotiate and --no-negotiate is told that they exclude each
 * other). */
static const struct rstream_exclusion exclusions[] = {
	{ "--negotiate", "--no-negotiate", neg_both, 1,
	  "--negotiate and --no-negotiate exclude each other" },
	{ "-D/--duration", "--no-negotiate", duration_no_neg, 0,
	  "-D/--duration needs plan negotiation; it excludes --no-negotiate" },
	{ "-D/--duration", "-T v", duration_verify, 0,
	  "-D/--duration cannot be combined with -T v (its iteration mark "
	  "takes a data byte)" },
	{ "-c", "-T b", conns_blocking, 0,
	  "-c with -T b: blocking calls serve one connection at a time; use "
	  "-T a or -T n" },
	{ "--mps", "--split", mps_split, 0,
	  "--mps cannot be combined with --split (--split parts a round trip "
	  "from its send, --mps counts it from its schedule)" },
	{ "--poll-usec", "-T a", poll_not_async, 0,
	  "--poll-usec is -T a's poll (-T n always polls, -T b never does): "
	  "add -T a" },
};

const struct cli_opt *rstream_options(size_t *n)
{
	build_options();
	*n = noptions;
	return options;
}

const struct rstream_exclusion *rstream_exclusions(size_t *n)
{
	*n = CLI_ARRAY_SIZE(exclusions);
	return exclusions;
}

static int excluded(const struct evr_stream_opts *o, int before_sides,
		    FILE *err)
{
	size_t i;

	for (i = 0; i < CLI_ARRAY_SIZE(exclusions); i++) {
		const struct rstream_exclusion *x = &exclusions[i];

		if (x->before_sides == before_sides && x->holds(o)) {
			fprintf(err, "rstream: %s\n", x->msg);
			return 1;
		}
	}
	return 0;
}

/* One rule for every option of one side: given on the other, it is an
 * error (not silently ignored), named with the reason. */
static int wrong_side(const struct evr_stream_opts *o, uint64_t seen,
		      FILE *err)
{
	enum cli_side other = o->server ? CLI_CLIENT : CLI_SERVER;
	size_t i;

	for (i = 0; i < noptions; i++) {
		const struct cli_opt *r = &options[i];

		if (!(seen & (1ull << i)) || r->side != other)
			continue;
		fprintf(err, "rstream: %s is a %s option (use it %s)%s%s\n",
			r->name, other == CLI_CLIENT ? "client" : "server",
			other == CLI_CLIENT ? "with -s" : "without -s",
			r->why ? "; " : "", r->why ? r->why : "");
		return 1;
	}
	return 0;
}

/* Was the option val on the command line? */
static int given(uint64_t seen, int val)
{
	size_t i;

	for (i = 0; i < noptions; i++)
		if (options[i].val == val)
			return !!(seen & (1ull << i));
	return 0;
}

/* What the options mean together, once all are read. */
static int finish(struct rstream_cli *cli, uint64_t seen, FILE *err)
{
	struct evr_stream_opts *o = &cli->o;

	/* Upstream's -T a with -T b sleeps in poll, then calls: that is our
	 * async mode.  -T b alone makes blocking calls. */
	o->io = cli->async ? EVR_IO_ASYNC :
		cli->blocking ? EVR_IO_BLOCK : EVR_IO_NONBLOCK;
	if (o->custom && o->size_all) {
		o->size_all = 0; /* upstream: -S all with -C/-I is custom */
		cli->all_dropped = 1;
	}
	if (excluded(o, 1, err) || wrong_side(o, seen, err) ||
	    excluded(o, 0, err))
		return RSTREAM_PARSE_BAD;
	/* Many connections of one run are told apart by the plan they send:
	 * a verifying client negotiates too (unless told not to). */
	if (o->conns > 1 && o->verify && !o->no_negotiate)
		o->force_negotiate = 1;
	if (o->fork && !o->server) {
		/* upstream ignores -T f on a client; so do we */
		o->fork = 0;
	}
	/* Accepted, as upstream, but not in silence: an iperf3 user's -i is
	 * an interval.  Last, so that a command line that fails says only
	 * why. */
	if (given(seen, 'i') && !(evr_stream_transport_caps(o->transport) &
				  EVR_TRANSPORT_CAP_INLINE))
		fprintf(err, "rstream: note: -i is the RDMA inline size and "
			"means nothing over TCP (-T s); ignored (progress "
			"reports: --interval SEC)\n");
	return RSTREAM_PARSE_OK;
}

int rstream_parse(int argc, char **argv, struct rstream_cli *cli, FILE *err)
{
	struct evr_stream_opts *o = &cli->o;
	uint64_t seen;
	int ret;

	memset(cli, 0, sizeof(*cli));
	o->transport = EVR_TRANSPORT_RDMA;
	o->io = EVR_IO_NONBLOCK;
	o->port = EVR_DEFAULT_PORT;
	o->inline_size = 64;
	o->size = 1000;
	o->count = 1000;
	o->iters = 1;
	o->server = 1;
	build_options();
	ret = cli_getopt(argc, argv, options, noptions, cli, "rstream", err,
			 &seen);
	switch (ret) {
	case CLI_PARSE_DONE:
		return finish(cli, seen, err);
	case CLI_PARSE_USAGE:
		return RSTREAM_PARSE_USAGE;
	case CLI_PARSE_BAD:
		return RSTREAM_PARSE_BAD;
	default:
		return ret;         /* --help, --version */
	}
}

const char *rstream_plan_warning(const struct rstream_cli *cli)
{
	const struct evr_stream_opts *o = &cli->o;

	/* Only where a user can be handed a result for a test the server
	 * did not run: a client whose plan is not the default series, that
	 * does not send it only because -T v keeps upstream's wire by
	 * default (upstream's pattern check covers the first sync, which
	 * the plan's greeting replaces).  An explicit --no-negotiate is a
	 * choice made knowingly; -c N > 1 negotiates already. */
	if (o->server || !o->verify || !(o->custom || o->size_all) ||
	    o->force_negotiate || o->no_negotiate)
		return NULL;
	return "-T v sends no test plan (upstream's wire): the server must "
	       "run the same test (started with the same -S/-C/-I), or, for "
	       "an evrdma server, add --negotiate";
}

const char *rstream_size_warning(const struct rstream_cli *cli)
{
	const struct evr_stream_opts *o = &cli->o;

	if (o->server || !cli->all_dropped)
		return NULL;
	return "-S all with -C or -I runs one custom test of 1000 bytes, as "
	       "upstream's does; leave out -C and -I for the 33 sizes";
}

void rstream_help(FILE *out, const char *prog)
{
	rstream_usage(out, prog);
	help_extra(out);
}
