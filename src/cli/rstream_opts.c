/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "rstream_opts.h"
#include "parse.h"

void rstream_usage(FILE *out, const char *prog)
{
	/* Upstream's text, line for line. */
	fprintf(out, "usage: %s\n", prog);
	fprintf(out, "\t[-s server_address]\n");
	fprintf(out, "\t[-b bind_address]\n");
	fprintf(out, "\t[-f address_format]\n");
	fprintf(out, "\t    name, ip, ipv6, or gid\n");
	fprintf(out, "\t[-B buffer_size]\n");
	fprintf(out, "\t[-i inline_size]\n");
	fprintf(out, "\t[-I iterations]\n");
	fprintf(out, "\t[-C transfer_count]\n");
	fprintf(out, "\t[-S transfer_size or all]\n");
	fprintf(out, "\t[-p port_number]\n");
	fprintf(out, "\t[-k keepalive_time]\n");
	fprintf(out, "\t[-T test_option]\n");
	fprintf(out, "\t    s|sockets - use standard tcp/ip sockets\n");
	fprintf(out, "\t    a|async - asynchronous operation (use poll)\n");
	fprintf(out, "\t    b|blocking - use blocking calls\n");
	fprintf(out, "\t    f|fork - fork server processing\n");
	fprintf(out, "\t    n|nonblocking - use nonblocking calls\n");
	fprintf(out, "\t    r|resolve - use rdma cm to resolve address\n");
	fprintf(out, "\t    v|verify - verify data\n");
}

static void help_extra(FILE *out)
{
	fprintf(out, "evrdma options:\n");
	fprintf(out, "\t--stall-timeout SEC  fail a connection that makes no "
		     "progress for SEC seconds (default 10)\n");
	fprintf(out, "\t--once               server: serve one client run, "
		     "then exit (as upstream)\n");
	fprintf(out, "\t--no-negotiate       client: do not send the test "
		     "plan; speak exactly upstream's wire\n");
	fprintf(out, "\t--negotiate          client: send the test plan even "
		     "with -T v (evrdma servers only)\n");
	fprintf(out, "\t--trace              print every state transition "
		     "on stderr\n");
	fprintf(out, "\t-D, --duration SEC   client: run each test for SEC "
		     "seconds instead of its\n"
		     "\t                     count (evrdma servers only)\n");
	fprintf(out, "\t--percentiles        client: after the table, round-"
		     "trip latency per test:\n"
		     "\t                     min, p50, p90, p99, p99.9, max, "
		     "mean (usec)\n");
	fprintf(out, "\t--split              client: after the table, each "
		     "test's round trip in its\n"
		     "\t                     parts: network, server hold, "
		     "local delay (usec;\n"
		     "\t                     evrdma servers only)\n");
	fprintf(out, "\t--interval SEC       report progress on stderr every "
		     "SEC seconds\n");
	fprintf(out, "\t--json               JSON Lines on stdout instead of "
		     "the table (see rstream(1))\n");
	fprintf(out, "\t--settings           report each connection's "
		     "effective settings\n");
	fprintf(out, "\t--poll-usec N        -T a: poll up to N usec before "
		     "sleeping while the\n"
		     "\t                     exchange is fast (default 200; "
		     "0 never polls)\n");
	fprintf(out, "\t-c, --connections N  client: N connections side by "
		     "side per series (1 to 100000),\n"
		     "\t                     one aggregate row per test\n");
	fprintf(out, "\t--per-conn           with -c: a row per connection "
		     "too, named test#K\n");
	fprintf(out, "\t--all-at-once        with -c: tests start once the "
		     "server has taken all N\n");
	fprintf(out, "\t--max-conns N        server: serve at most N "
		     "connections at once (default 16384)\n");
	fprintf(out, "\t--max-memory SIZE    server: at most SIZE bytes of "
		     "connection buffers\n"
		     "\t                     in all (default 1g)\n");
	fprintf(out, "\t--chunk SIZE         server: a connection's buffer, "
		     "through which larger\n"
		     "\t                     transfers stream (default 1m)\n");
	fprintf(out, "\t--check              check this host for the run "
		     "(memlock, device access,\n"
		     "\t                     the -b address's RDMA device, "
		     "port, GID), print\n"
		     "\t                     a table (or --json), run nothing\n");
	fprintf(out, "\t--no-host-check      do not check the host before an "
		     "RDMA run (a failure\n"
		     "\t                     is still explained)\n");
	fprintf(out, "\t--help, --version\n");
}

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

static int set_size(void *obj, const char *arg)
{
	struct evr_stream_opts *o = &((struct rstream_cli *)obj)->o;
	long long v;

	if (!strncasecmp("all", arg, 3)) {
		o->size_all = 1;
		return 0;
	}
	if (cli_num(arg, 1, EVR_MAX_XFER_SIZE, CLI_SUFFIX, &v))
		return -1;
	o->size = (uint32_t)v;
	o->custom = 1;
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

/* --poll-usec: 0 is "never" here, where the engine's 0 is its default */
static int set_poll(void *obj, const char *arg)
{
	long long v;

	if (cli_num(arg, 0, EVR_MAX_POLL_US, 0, &v))
		return -1;
	((struct rstream_cli *)obj)->o.poll_us = v ? (int)v : EVR_POLL_NEVER;
	return 0;
}

enum { OPT_STALL = 256, OPT_ONCE, OPT_NO_NEG, OPT_NEG, OPT_TRACE, OPT_HELP,
       OPT_VERSION, OPT_PCT, OPT_INTERVAL, OPT_JSON, OPT_SETTINGS,
       OPT_PER_CONN, OPT_MAX_CONNS, OPT_MAX_MEM, OPT_CHUNK, OPT_POLL,
       OPT_CHECK, OPT_NO_HOST_CHECK, OPT_ALL_AT_ONCE, OPT_SPLIT };

#define O(m) .off = CLI_FIELD(struct rstream_cli, o.m)
#define C(m) .off = CLI_FIELD(struct rstream_cli, m)
#define NUM(l, h, fl) .kind = CLI_NUM, .lo = (l), .hi = (h), .flags = (fl)
#define SECS(l, h) .kind = CLI_SECS, .lo = (l), .hi = (h)

/*
 * Every option.  A side other than CLI_BOTH makes the option an error on
 * the other side (rstream.1, OPTIONS), with why as the reason; rules
 * between options are in exclusions[] below.  The order is said twice:
 * getopt_long's message for an ambiguous prefix ("--n", "--max") lists
 * its candidates in it, and of several options given on the wrong side
 * the first in it is named.  A new option goes in the place that keeps
 * both (tests/check_cli.c holds the orders).
 */
static const struct cli_opt options[] = {
	{ 's', NULL, "-s", CLI_STR, O(host), .after = mark_client },
	{ 'b', NULL, "-b", CLI_STR, O(bind_addr) },
	{ 'f', NULL, "-f", CLI_CALL, .set = set_addr_fmt,
	  .what = "use name, ip (or any ip... word, as upstream), ipv6 or "
		  "gid" },
	{ 'B', NULL, "-B", NUM(0, 1 << 30, CLI_SUFFIX), O(buffer_size),
	  .what = "buffer size must be 0 (default) to 1g" },
	{ 'i', NULL, "-i", NUM(0, 65536, CLI_SUFFIX), O(inline_size),
	  .what = "inline size must be 0 to 65536" },
	{ 'I', NULL, "-I", NUM(1, EVR_MAX_COUNT, 0), O(iters),
	  .what = "iterations must be 1 to 1000000000", .after = mark_custom },
	{ 'C', NULL, "-C", NUM(1, EVR_MAX_COUNT, 0), O(count),
	  .what = "transfer count must be 1 to 1000000000",
	  .after = mark_custom },
	{ 'S', NULL, "-S", CLI_CALL, .set = set_size,
	  .what = "transfer size must be 1 to 1g, or all" },
	{ 'p', NULL, "-p", CLI_CALL, .set = set_port,
	  .what = "port must be 1 to 65535 or a service name" },
	{ 'k', NULL, "-k", NUM(0, 32767, 0), O(keepalive),
	  .what = "keepalive time must be 0 (off) to 32767 seconds" },
	/* the value named, then upstream's usage */
	{ 'T', NULL, "-T", CLI_CALL, .flags = CLI_BAD_USAGE, .set = set_test,
	  .what = "one of s a b n f r v, or socket async block nonblock "
		  "fork resolve verify" },
	{ OPT_STALL, "stall-timeout", "--stall-timeout", SECS(0.01, 86400),
	  O(stall_ms), .what = "must be 0.01 to 86400 seconds" },
	{ OPT_TRACE, "trace", "--trace", CLI_FLAG, C(trace) },
	{ OPT_INTERVAL, "interval", "--interval", SECS(0.01, 86400),
	  O(interval_ms), .what = "must be 0.01 to 86400 seconds" },
	{ OPT_HELP, "help", "--help", CLI_RETURN, .ret = RSTREAM_PARSE_HELP },
	{ OPT_VERSION, "version", "--version", CLI_RETURN,
	  .ret = RSTREAM_PARSE_VERSION },
	{ OPT_JSON, "json", "--json", CLI_FLAG, C(json) },
	{ OPT_SETTINGS, "settings", "--settings", CLI_FLAG, O(report_settings) },
	{ OPT_POLL, "poll-usec", "--poll-usec", CLI_CALL, .set = set_poll,
	  .what = "must be 0 (never poll) to 100000 microseconds" },
	{ 'c', "connections", "-c", NUM(1, EVR_MAX_CONNS, 0), O(conns),
	  .what = "connections must be 1 to 100000", .side = CLI_CLIENT,
	  .why = "a server serves any number of connections" },
	{ 'D', "duration", "-D/--duration", SECS(0.01, 86400), O(duration_ms),
	  .what = "must be 0.01 to 86400 seconds", .side = CLI_CLIENT,
	  .why = "the server follows the client" },
	{ OPT_PCT, "percentiles", "--percentiles", CLI_FLAG, O(percentiles),
	  .side = CLI_CLIENT },
	{ OPT_SPLIT, "split", "--split", CLI_FLAG, O(lat_split),
	  .side = CLI_CLIENT },
	{ OPT_PER_CONN, "per-conn", "--per-conn", CLI_FLAG, C(per_conn),
	  .side = CLI_CLIENT },
	{ OPT_ALL_AT_ONCE, "all-at-once", "--all-at-once", CLI_FLAG,
	  O(all_at_once), .side = CLI_CLIENT },
	{ OPT_NO_NEG, "no-negotiate", "--no-negotiate", CLI_FLAG,
	  O(no_negotiate), .side = CLI_CLIENT,
	  .why = "a server speaks upstream's wire to every client that does" },
	{ OPT_NEG, "negotiate", "--negotiate", CLI_FLAG, O(force_negotiate),
	  .side = CLI_CLIENT,
	  .why = "a server negotiates with every client that asks" },
	{ OPT_ONCE, "once", "--once", CLI_FLAG, O(once), .side = CLI_SERVER },
	{ OPT_MAX_CONNS, "max-conns", "--max-conns", NUM(1, EVR_MAX_CONNS, 0),
	  O(max_conns), .what = "must be 1 to 100000", .side = CLI_SERVER },
	{ OPT_MAX_MEM, "max-memory", "--max-memory",
	  NUM(1024, 1LL << 40, CLI_SUFFIX), O(max_memory),
	  .what = "must be 1k to 1024g", .side = CLI_SERVER },
	{ OPT_CHUNK, "chunk", "--chunk", NUM(1024, EVR_MAX_XFER_SIZE, CLI_SUFFIX),
	  O(chunk_size), .what = "must be 1k to 1g", .side = CLI_SERVER },
	{ OPT_CHECK, "check", "--check", CLI_FLAG, C(check) },
	{ OPT_NO_HOST_CHECK, "no-host-check", "--no-host-check", CLI_FLAG,
	  C(no_host_check) },
};

#undef O
#undef C
#undef NUM
#undef SECS

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
	{ "--poll-usec", "-T a", poll_not_async, 0,
	  "--poll-usec is -T a's poll (-T n always polls, -T b never does): "
	  "add -T a" },
};

const struct cli_opt *rstream_options(size_t *n)
{
	*n = CLI_ARRAY_SIZE(options);
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

	for (i = 0; i < CLI_ARRAY_SIZE(options); i++) {
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

	for (i = 0; i < CLI_ARRAY_SIZE(options); i++)
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
	if (o->custom && o->size_all)
		o->size_all = 0; /* upstream: -S all with -C/-I is custom */
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
	ret = cli_getopt(argc, argv, options, CLI_ARRAY_SIZE(options), cli,
			 "rstream", err, &seen);
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

void rstream_help(FILE *out, const char *prog)
{
	rstream_usage(out, prog);
	help_extra(out);
}
