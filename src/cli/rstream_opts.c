/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rstream_opts.h"
#include "../stream/plan.h"

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
	fprintf(out, "\t--interval SEC       report progress on stderr every "
		     "SEC seconds\n");
	fprintf(out, "\t--json               JSON Lines on stdout instead of "
		     "the table (see rstream(1))\n");
	fprintf(out, "\t--settings           report each connection's "
		     "effective settings\n");
	fprintf(out, "\t-c, --connections N  client: N connections side by "
		     "side per series (1 to 100000),\n"
		     "\t                     one aggregate row per test\n");
	fprintf(out, "\t--per-conn           with -c: a row per connection "
		     "too, named test#K\n");
	fprintf(out, "\t--max-conns N        server: serve at most N "
		     "connections at once (default 16384)\n");
	fprintf(out, "\t--max-memory SIZE    server: at most SIZE bytes of "
		     "connection buffers\n"
		     "\t                     in all (default 1g)\n");
	fprintf(out, "\t--chunk SIZE         server: a connection's buffer, "
		     "through which larger\n"
		     "\t                     transfers stream (default 1m)\n");
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
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (!strncasecmp(words[i].word, arg,
					 strlen(words[i].word))) {
				c = words[i].letter;
				break;
			}
	}
	switch (c) {
	case 's':
		o->xport = EVR_XPORT_TCP;
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
		o->xport = EVR_XPORT_TCP;
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

/* A whole number in [min, max], with an optional k/m/g (binary) suffix
 * when allow_suffix.  Returns 0 or -1. */
static int parse_num(const char *s, long long min, long long max,
		     int allow_suffix, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno)
		return -1;
	if (allow_suffix && *end) {
		long long mul;

		switch (*end) {
		case 'k': case 'K':
			mul = 1024;
			break;
		case 'm': case 'M':
			mul = 1024 * 1024;
			break;
		case 'g': case 'G':
			mul = 1024LL * 1024 * 1024;
			break;
		default:
			return -1;
		}
		if (__builtin_mul_overflow(v, mul, &v))
			return -1;
		end++;
	}
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The one line of every bad value: "rstream: invalid value 'V' for OPT:
 * WHAT". */
static int bad(FILE *err, const char *prog, const char *opt, const char *val,
	       const char *what)
{
	fprintf(err, "%s: invalid value '%s' for %s: %s\n", prog, val, opt,
		what);
	return RSTREAM_PARSE_BAD;
}

enum { OPT_STALL = 256, OPT_ONCE, OPT_NO_NEG, OPT_NEG, OPT_TRACE, OPT_HELP,
       OPT_VERSION, OPT_PCT, OPT_INTERVAL, OPT_JSON, OPT_SETTINGS,
       OPT_PER_CONN, OPT_MAX_CONNS, OPT_MAX_MEM, OPT_CHUNK };

/* Seconds in [min, max] as a number of milliseconds, or -1. */
static long long parse_secs_ms(const char *s, double min, double max)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(s, &end);
	if (end == s || *end || errno || !(sec >= min) || sec > max)
		return -1;
	return (long long)(sec * 1000.0 + 0.5);
}

/* Per connection: its socket (TCP) or its completion channel (RDMA: the
 * CM ids share one event channel); besides: stdio, the loop's epoll,
 * signal and async fds, the listener and its spare, RDMA CM's event
 * channel and the devices' verbs contexts.  A little slack for the C
 * library (resolver, /proc). */
unsigned long rstream_fds_needed(unsigned n, int rdma)
{
	return (unsigned long)n + (rdma ? 32 : 16);
}

int rstream_parse(int argc, char **argv, struct rstream_cli *cli, FILE *err)
{
	static const struct option longopts[] = {
		{ "stall-timeout", required_argument, NULL, OPT_STALL },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "no-negotiate", no_argument, NULL, OPT_NO_NEG },
		{ "negotiate", no_argument, NULL, OPT_NEG },
		{ "trace", no_argument, NULL, OPT_TRACE },
		{ "duration", required_argument, NULL, 'D' },
		{ "percentiles", no_argument, NULL, OPT_PCT },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "settings", no_argument, NULL, OPT_SETTINGS },
		{ "connections", required_argument, NULL, 'c' },
		{ "per-conn", no_argument, NULL, OPT_PER_CONN },
		{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
		{ "max-memory", required_argument, NULL, OPT_MAX_MEM },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ NULL, 0, NULL, 0 },
	};
	/* The options of one side only (rstream.1, OPTIONS): the same rule
	 * and message for each. */
	static const struct {
		int op;
		const char *name;
		int client;         /* 1: client only; 0: server only */
		const char *why;
	} sided[] = {
		{ 'c', "-c", 1, "a server serves any number of connections" },
		{ 'D', "-D/--duration", 1, "the server follows the client" },
		{ OPT_PCT, "--percentiles", 1, NULL },
		{ OPT_PER_CONN, "--per-conn", 1, NULL },
		{ OPT_NEG, "--negotiate", 1,
		  "a server negotiates with every client that asks" },
		{ OPT_NO_NEG, "--no-negotiate", 1,
		  "a server speaks upstream's wire to every client that does" },
		{ OPT_ONCE, "--once", 0, NULL },
		{ OPT_MAX_CONNS, "--max-conns", 0, NULL },
		{ OPT_MAX_MEM, "--max-memory", 0, NULL },
		{ OPT_CHUNK, "--chunk", 0, NULL },
	};
	enum { NSIDED = sizeof(sided) / sizeof(sided[0]) };
	const char *prog = "rstream";
	struct evr_stream_opts *o = &cli->o;
	unsigned seen = 0, i;
	int inline_given = 0;
	long long v;
	int op;

	memset(cli, 0, sizeof(*cli));
	o->xport = EVR_XPORT_RDMA;
	o->io = EVR_IO_NONBLOCK;
	o->port = EVR_DEFAULT_PORT;
	o->inline_size = 64;
	o->size = 1000;
	o->count = 1000;
	o->iters = 1;
	o->server = 1;
	optind = 0; /* 0: glibc also forgets a half-parsed "-xyz" group */
	opterr = 1;
	while ((op = getopt_long(argc, argv, "s:b:f:B:i:I:C:S:p:k:T:D:c:",
				 longopts, NULL)) != -1) {
		for (i = 0; i < NSIDED; i++)
			if (sided[i].op == op)
				seen |= 1u << i;
		switch (op) {
		case 's':
			o->host = optarg;
			o->server = 0;
			break;
		case 'b':
			o->bind_addr = optarg;
			break;
		case 'f':
			/* Upstream tests prefixes ("ip", "gid"), so -f ipv4
			 * or -f gids work there and here; ipv6 is evrdma's
			 * own (IPv6 only).  Stricter on purpose: a word that
			 * is none of these is an error, where upstream warns
			 * and resolves names (-f nmae would test what the
			 * user did not ask for). */
			if (!strcasecmp(optarg, "name"))
				o->addr_fmt = EVR_ADDR_NAME;
			else if (!strcasecmp(optarg, "ipv6"))
				o->addr_fmt = EVR_ADDR_IPV6;
			else if (!strncasecmp(optarg, "ip", 2))
				o->addr_fmt = EVR_ADDR_IP;
			else if (!strncasecmp(optarg, "gid", 3))
				o->addr_fmt = EVR_ADDR_GID;
			else
				return bad(err, prog, "-f", optarg,
					   "use name, ip (or any ip... word, "
					   "as upstream), ipv6 or gid");
			if (o->addr_fmt == EVR_ADDR_GID)
				o->resolve_rdma = 1;
			break;
		case 'B':
			if (parse_num(optarg, 0, 1LL << 30, 1, &v))
				return bad(err, prog, "-B", optarg,
					   "buffer size must be 0 (default) to 1g");
			o->buffer_size = (int)v;
			break;
		case 'i':
			if (parse_num(optarg, 0, 65536, 1, &v))
				return bad(err, prog, "-i", optarg,
					   "inline size must be 0 to 65536");
			inline_given = 1;
			o->inline_size = (int)v;
			break;
		case 'I':
			if (parse_num(optarg, 1, EVR_MAX_COUNT, 0, &v))
				return bad(err, prog, "-I", optarg,
					   "iterations must be 1 to 1000000000");
			o->iters = (uint32_t)v;
			o->custom = 1;
			break;
		case 'C':
			if (parse_num(optarg, 1, EVR_MAX_COUNT, 0, &v))
				return bad(err, prog, "-C", optarg,
					   "transfer count must be 1 to 1000000000");
			o->count = (uint32_t)v;
			o->custom = 1;
			break;
		case 'S':
			if (!strncasecmp("all", optarg, 3)) {
				o->size_all = 1;
				break;
			}
			if (parse_num(optarg, 1, EVR_MAX_XFER_SIZE, 1, &v))
				return bad(err, prog, "-S", optarg,
					   "transfer size must be 1 to 1g, or all");
			o->size = (uint32_t)v;
			o->custom = 1;
			break;
		case 'p': {
			/* a number, signed or not ("-1" too), is a port
			 * number; anything else a service name */
			const char *d = optarg + (*optarg == '-' ||
						  *optarg == '+');

			if (!*d || (strspn(d, "0123456789") == strlen(d) &&
				    parse_num(optarg, 1, 65535, 0, &v)))
				return bad(err, prog, "-p", optarg,
					   "port must be 1 to 65535 or a service name");
			o->port = optarg;
			break;
		}
		case 'k':
			if (parse_num(optarg, 0, 32767, 0, &v))
				return bad(err, prog, "-k", optarg,
					   "keepalive time must be 0 (off) to 32767 seconds");
			o->keepalive = (int)v;
			break;
		case 'T':
			if (rstream_test_opt(cli, optarg)) {
				/* the value named, then upstream's usage */
				bad(err, prog, "-T", optarg, "one of s a b n f "
				    "r v, or socket async block nonblock fork "
				    "resolve verify");
				return RSTREAM_PARSE_USAGE;
			}
			break;
		case OPT_STALL:
			v = parse_secs_ms(optarg, 0.01, 86400);
			if (v < 0)
				return bad(err, prog, "--stall-timeout", optarg,
					   "must be 0.01 to 86400 seconds");
			o->stall_ms = (unsigned)v;
			break;
		case 'D':
			v = parse_secs_ms(optarg, 0.01, 86400);
			if (v < 0) {
				return bad(err, prog, "-D/--duration", optarg,
					   "must be 0.01 to 86400 seconds");
			}
			o->duration_ms = (uint32_t)v;
			break;
		case OPT_PCT:
			o->percentiles = 1;
			break;
		case OPT_INTERVAL:
			v = parse_secs_ms(optarg, 0.01, 86400);
			if (v < 0) {
				return bad(err, prog, "--interval", optarg,
					   "must be 0.01 to 86400 seconds");
			}
			o->interval_ms = (uint32_t)v;
			break;
		case 'c':
			if (parse_num(optarg, 1, EVR_MAX_CONNS, 0, &v))
				return bad(err, prog, "-c", optarg,
					   "connections must be 1 to 100000");
			o->conns = (unsigned)v;
			break;
		case OPT_PER_CONN:
			cli->per_conn = 1;
			break;
		case OPT_MAX_CONNS:
			if (parse_num(optarg, 1, EVR_MAX_CONNS, 0, &v)) {
				return bad(err, prog, "--max-conns", optarg,
					   "must be 1 to 100000");
			}
			o->max_conns = (unsigned)v;
			break;
		case OPT_MAX_MEM:
			if (parse_num(optarg, 1024, 1LL << 40, 1, &v)) {
				return bad(err, prog, "--max-memory", optarg,
					   "must be 1k to 1024g");
			}
			o->max_memory = (uint64_t)v;
			break;
		case OPT_CHUNK:
			if (parse_num(optarg, 1024, EVR_MAX_XFER_SIZE, 1, &v)) {
				return bad(err, prog, "--chunk", optarg,
					   "must be 1k to 1g");
			}
			o->chunk_size = (uint32_t)v;
			break;
		case OPT_ONCE:
			o->once = 1;
			break;
		case OPT_NO_NEG:
			o->no_negotiate = 1;
			break;
		case OPT_NEG:
			o->force_negotiate = 1;
			break;
		case OPT_TRACE:
			cli->trace = 1;
			break;
		case OPT_JSON:
			cli->json = 1;
			break;
		case OPT_SETTINGS:
			o->report_settings = 1;
			break;
		case OPT_HELP:
			return RSTREAM_PARSE_HELP;
		case OPT_VERSION:
			return RSTREAM_PARSE_VERSION;
		default:
			return RSTREAM_PARSE_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(err, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		return RSTREAM_PARSE_BAD;
	}
	/* Upstream's -T a with -T b sleeps in poll, then calls: that is our
	 * async mode.  -T b alone makes blocking calls. */
	o->io = cli->async ? EVR_IO_ASYNC :
		cli->blocking ? EVR_IO_BLOCK : EVR_IO_NONBLOCK;
	if (o->custom && o->size_all)
		o->size_all = 0; /* upstream: -S all with -C/-I is custom */
	if (o->no_negotiate && o->force_negotiate) {
		fprintf(err, "%s: --negotiate and --no-negotiate exclude each "
			"other\n", prog);
		return RSTREAM_PARSE_BAD;
	}
	/* One rule for every option of one side: given on the other, it
	 * is an error (not silently ignored), named with the reason. */
	for (i = 0; i < NSIDED; i++) {
		if (!(seen & (1u << i)) || sided[i].client == !o->server)
			continue;
		fprintf(err, "%s: %s is a %s option (use it %s)%s%s\n", prog,
			sided[i].name, sided[i].client ? "client" : "server",
			sided[i].client ? "with -s" : "without -s",
			sided[i].why ? "; " : "",
			sided[i].why ? sided[i].why : "");
		return RSTREAM_PARSE_BAD;
	}
	if (o->duration_ms && o->no_negotiate) {
		fprintf(err, "%s: -D/--duration needs plan negotiation; it "
			"excludes --no-negotiate\n", prog);
		return RSTREAM_PARSE_BAD;
	}
	if (o->duration_ms && o->verify) {
		fprintf(err, "%s: -D/--duration cannot be combined with -T v "
			"(its iteration mark takes a data byte)\n", prog);
		return RSTREAM_PARSE_BAD;
	}
	if (o->conns > 1 && o->io == EVR_IO_BLOCK) {
		fprintf(err, "%s: -c with -T b: blocking calls serve one "
			"connection at a time; use -T a or -T n\n", prog);
		return RSTREAM_PARSE_BAD;
	}
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
	if (inline_given && o->xport == EVR_XPORT_TCP)
		fprintf(err, "%s: note: -i is the RDMA inline size and means "
			"nothing over TCP (-T s); ignored (progress reports: "
			"--interval SEC)\n", prog);
	return RSTREAM_PARSE_OK;
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
