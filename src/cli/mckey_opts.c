/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>

#include "mckey_opts.h"
#include "parse.h"

void mckey_usage(FILE *out, const char *prog)
{
	/* Upstream's text, line for line. */
	fprintf(out, "usage: %s\n", prog);
	fprintf(out, "\t-m multicast_address\n");
	fprintf(out, "\t[-M unmapped_multicast_address]\n"
		     "\t replaces -m and requires -b\n");
	fprintf(out, "\t[-s(ender)]\n");
	fprintf(out, "\t[-b bind_address]\n");
	fprintf(out, "\t[-c connections]\n");
	fprintf(out, "\t[-C message_count]\n");
	fprintf(out, "\t[-S message_size]\n");
	fprintf(out, "\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n",
		RDMA_PS_UDP, RDMA_PS_IPOIB);
	fprintf(out, "\t[-o join as a send-only full-member]\n");
	fprintf(out, "\t[-l join without multicast loopback]\n");
}

void mckey_help(FILE *out, const char *prog)
{
	mckey_usage(out, prog);
	fprintf(out, "evrdma options:\n");
	fprintf(out, "\t--udp               use kernel UDP/IP multicast instead "
		     "of RDMA\n");
	fprintf(out, "\t--udp-port N        UDP port of the group (default %u)\n",
		EVR_MC_DEFAULT_UDP_PORT);
	fprintf(out, "\t--settle SEC        pause after joining (default 3)\n");
	fprintf(out, "\t--deadline SEC      limit on sending or receiving "
		     "(default 30)\n");
	fprintf(out, "\t--rate N            sender: messages per second per "
		     "QP (default: unpaced)\n");
	fprintf(out, "\t--window N          receiver: sequence numbers tracked "
		     "per sender (default %u)\n", EVR_MC_DEFAULT_WINDOW);
	fprintf(out, "\t--max-senders N     receiver: senders tracked per QP "
		     "(default %u)\n", EVR_MC_DEFAULT_MAX_SENDERS);
	fprintf(out, "\t--stats             print per-QP and per-sender "
		     "statistics\n");
	fprintf(out, "\t--trace             print every state transition on "
		     "stderr\n");
	fprintf(out, "\t--json              JSON Lines on stdout instead of "
		     "the text (see mckey(1))\n");
	fprintf(out, "\t--check             check this host for the run "
		     "(memlock, device access,\n"
		     "\t                    the -b address's RDMA device, "
		     "port, GID, path MTU\n"
		     "\t                    for -S), print a table (or "
		     "--json), run nothing\n");
	fprintf(out, "\t--no-host-check     do not check the host before an "
		     "RDMA run (a failure\n"
		     "\t                    is still explained)\n");
	fprintf(out, "\t--fail-if EXPR      receiver: fail the run (exit "
		     "status 8) when a QP's\n"
		     "\t                    loss passes the limit, e.g. "
		     "'loss>0.1%%'\n");
	fprintf(out, "\t--help, --version\n");
}

static void group_is_unmapped(void *obj)
{
	struct evr_mcast_opts *o = &((struct mckey_cli *)obj)->o;

	o->group = o->unmapped;
}

static int set_port_space(void *obj, const char *arg)
{
	long long v;

	/* upstream: strtol(optarg, NULL, 0) */
	if (cli_num(arg, 0, 0xffff, CLI_ANY_BASE, &v) ||
	    (v != RDMA_PS_UDP && v != RDMA_PS_IPOIB))
		return -1;
	((struct mckey_cli *)obj)->o.port_space = (int)v;
	return 0;
}

static int set_rate(void *obj, const char *arg)
{
	struct evr_mcast_opts *o = &((struct mckey_cli *)obj)->o;
	char *end;

	errno = 0;
	o->rate = strtod(arg, &end);
	return end == arg || *end || errno || !(o->rate > 0) ||
	       o->rate > 1e7 ? -1 : 0;
}

static int set_fail_if(void *obj, const char *arg)
{
	struct mckey_cli *cli = obj;

	return thr_add(&cli->fail_if, arg, THR_MCKEY, cli->fail_if_err,
		       sizeof(cli->fail_if_err)) ? -1 : 0;
}

static const char *fail_if_why(void *obj)
{
	return ((struct mckey_cli *)obj)->fail_if_err;
}

/* a whole number of 64-bit words of the receive bitmap */
static void round_window(void *obj)
{
	struct evr_mcast_opts *o = &((struct mckey_cli *)obj)->o;

	o->window = (o->window + 63) & ~63u;
}

enum { OPT_UDP = 256, OPT_UDP_PORT, OPT_SETTLE, OPT_DEADLINE, OPT_RATE,
       OPT_STATS, OPT_TRACE, OPT_HELP, OPT_VERSION, OPT_JSON, OPT_WINDOW,
       OPT_MAX_SENDERS, OPT_CHECK, OPT_NO_HOST_CHECK, OPT_FAIL_IF };

#define O(m) .off = CLI_FIELD(struct mckey_cli, o.m)
#define C(m) .off = CLI_FIELD(struct mckey_cli, m)
#define NUM(l, h) .kind = CLI_NUM, .lo = (l), .hi = (h)
#define SECS(l, h) .kind = CLI_SECS, .lo = (l), .hi = (h)

/* Every option: upstream's letters, then evrdma's long options in the
 * order getopt_long lists an ambiguous prefix's candidates ("--s"). */
static const struct cli_opt options[] = {
	{ 'm', NULL, "-m", CLI_STR, O(group) },
	{ 'M', NULL, "-M", CLI_STR, O(unmapped), .after = group_is_unmapped },
	{ 's', NULL, "-s", CLI_FLAG, O(sender) },
	{ 'b', NULL, "-b", CLI_STR, O(bind_addr) },
	{ 'c', NULL, "-c", NUM(1, 1024), O(nqps),
	  .what = "connections must be 1 to 1024" },
	{ 'C', NULL, "-C", NUM(0, 100000000), O(count),
	  .what = "message count must be 0 to 100000000" },
	{ 'S', NULL, "-S", NUM(0, 65507), O(size),
	  .what = "message size must be 0 to 65507" },
	{ 'p', NULL, "-p", CLI_CALL, .set = set_port_space,
	  .what = "port space must be 0x111 (UDP) or 0x2 (IPOIB)" },
	{ 'o', NULL, "-o", CLI_FLAG, O(sendonly) },
	{ 'l', NULL, "-l", CLI_FLAG, O(no_loopback) },
	{ OPT_UDP, "udp", "--udp", CLI_CONST, .lo = EVR_MC_UDP, O(transport) },
	{ OPT_UDP_PORT, "udp-port", "--udp-port", NUM(1, 65535), O(udp_port),
	  .what = "port must be 1 to 65535" },
	{ OPT_SETTLE, "settle", "--settle", SECS(0, 3600), O(settle_ms),
	  .what = "must be 0 to 3600 seconds" },
	{ OPT_DEADLINE, "deadline", "--deadline", SECS(0.01, 86400),
	  O(deadline_ms), .what = "must be 0.01 to 86400 seconds" },
	{ OPT_RATE, "rate", "--rate", CLI_CALL, .set = set_rate,
	  .what = "must be above 0 and at most 1e7 messages/s" },
	{ OPT_STATS, "stats", "--stats", CLI_FLAG, C(stats) },
	{ OPT_TRACE, "trace", "--trace", CLI_FLAG, C(trace) },
	{ OPT_HELP, "help", "--help", CLI_RETURN, .ret = MCKEY_PARSE_HELP },
	{ OPT_VERSION, "version", "--version", CLI_RETURN,
	  .ret = MCKEY_PARSE_VERSION },
	{ OPT_JSON, "json", "--json", CLI_FLAG, C(json) },
	{ OPT_WINDOW, "window", "--window",
	  NUM(EVR_MC_MIN_WINDOW, EVR_MC_MAX_WINDOW), O(window),
	  .what = "must be 64 to 1048576", .after = round_window },
	{ OPT_MAX_SENDERS, "max-senders", "--max-senders",
	  NUM(1, EVR_MC_MAX_MAX_SENDERS), O(max_senders),
	  .what = "must be 1 to 4096" },
	{ OPT_CHECK, "check", "--check", CLI_FLAG, C(check) },
	{ OPT_NO_HOST_CHECK, "no-host-check", "--no-host-check", CLI_FLAG,
	  C(no_host_check) },
	{ OPT_FAIL_IF, "fail-if", "--fail-if", CLI_CALL, .set = set_fail_if,
	  .why_bad = fail_if_why, .what = "loss, > or <, and a percentage" },
};

const struct cli_opt *mckey_options(size_t *n)
{
	*n = CLI_ARRAY_SIZE(options);
	return options;
}

#undef O
#undef C
#undef NUM
#undef SECS

int mckey_parse(int argc, char **argv, struct mckey_cli *cli, FILE *err)
{
	struct evr_mcast_opts *o = &cli->o;
	uint64_t seen;
	int ret;

	memset(cli, 0, sizeof(*cli));
	o->nqps = 1;
	o->count = 10;
	o->size = 100;
	o->port_space = RDMA_PS_UDP;
	/* mckey's own default where the engine's 0 is a value (no settle);
	 * the engine's defaults (deadline, udp_port, window, max_senders,
	 * its timeouts) stay 0 here: evr_mcast_opts_resolve() has them */
	o->settle_ms = EVR_MC_DEFAULT_SETTLE_MS;
	ret = cli_getopt(argc, argv, options, CLI_ARRAY_SIZE(options), cli,
			 "mckey", err, &seen);
	switch (ret) {
	case CLI_PARSE_DONE:
		break;
	case CLI_PARSE_USAGE:
		return MCKEY_PARSE_USAGE;
	case CLI_PARSE_BAD:
		return MCKEY_PARSE_BAD;
	default:
		return ret;         /* --help, --version */
	}
	if (o->unmapped && !o->bind_addr)
		return MCKEY_PARSE_UNMAPPED;
	if (o->sender && cli->fail_if.n) {
		fprintf(err, "mckey: --fail-if is a receiver's option (a "
			"sender counts no loss)\n");
		return MCKEY_PARSE_BAD;
	}
	if (!o->group && !cli->check) {
		fprintf(err, "mckey: a multicast address is required (-m or -M)\n");
		return MCKEY_PARSE_BAD;
	}
	return MCKEY_PARSE_OK;
}
