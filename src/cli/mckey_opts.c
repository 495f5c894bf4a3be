/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>

#include "mckey_opts.h"

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
	fprintf(out, "\t--help, --version\n");
}

static int num(const char *s, long long min, long long max, int base,
	       long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, base);
	if (end == s || *end || errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int secs(const char *s, double min, double max, unsigned *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= min) || v > max)
		return -1;
	*ms = (unsigned)(v * 1000.0 + 0.5);
	return 0;
}

static int bad(FILE *err, const char *opt, const char *val, const char *what)
{
	fprintf(err, "mckey: invalid value '%s' for %s: %s\n", val, opt, what);
	return MCKEY_PARSE_BAD;
}

enum { OPT_UDP = 256, OPT_UDP_PORT, OPT_SETTLE, OPT_DEADLINE, OPT_RATE,
       OPT_STATS, OPT_TRACE, OPT_HELP, OPT_VERSION, OPT_JSON, OPT_WINDOW,
       OPT_MAX_SENDERS };

int mckey_parse(int argc, char **argv, struct mckey_cli *cli, FILE *err)
{
	static const struct option longopts[] = {
		{ "udp", no_argument, NULL, OPT_UDP },
		{ "udp-port", required_argument, NULL, OPT_UDP_PORT },
		{ "settle", required_argument, NULL, OPT_SETTLE },
		{ "deadline", required_argument, NULL, OPT_DEADLINE },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "trace", no_argument, NULL, OPT_TRACE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "max-senders", required_argument, NULL, OPT_MAX_SENDERS },
		{ NULL, 0, NULL, 0 },
	};
	struct evr_mcast_opts *o = &cli->o;
	long long v;
	char *end;
	int op;

	memset(cli, 0, sizeof(*cli));
	o->nqps = 1;
	o->count = 10;
	o->size = 100;
	o->port_space = RDMA_PS_UDP;
	o->settle_ms = EVR_MC_DEFAULT_SETTLE_MS;
	o->deadline_ms = EVR_MC_DEFAULT_DEADLINE_MS;
	o->udp_port = EVR_MC_DEFAULT_UDP_PORT;
	o->window = EVR_MC_DEFAULT_WINDOW;
	o->max_senders = EVR_MC_DEFAULT_MAX_SENDERS;
	optind = 0; /* 0: glibc also forgets a half-parsed "-xyz" group */
	opterr = 1;
	while ((op = getopt_long(argc, argv, "m:M:sb:c:C:S:p:ol", longopts,
				 NULL)) != -1) {
		switch (op) {
		case 'm':
			o->group = optarg;
			break;
		case 'M':
			o->unmapped = optarg;
			o->group = optarg;
			break;
		case 's':
			o->sender = 1;
			break;
		case 'b':
			o->bind_addr = optarg;
			break;
		case 'c':
			if (num(optarg, 1, 1024, 10, &v))
				return bad(err, "-c", optarg,
					   "connections must be 1 to 1024");
			o->nqps = (unsigned)v;
			break;
		case 'C':
			if (num(optarg, 0, 100000000, 10, &v))
				return bad(err, "-C", optarg,
					   "message count must be 0 to 100000000");
			o->count = (unsigned)v;
			break;
		case 'S':
			if (num(optarg, 0, 65507, 10, &v))
				return bad(err, "-S", optarg,
					   "message size must be 0 to 65507");
			o->size = (unsigned)v;
			break;
		case 'p':
			/* upstream: strtol(optarg, NULL, 0) */
			if (num(optarg, 0, 0xffff, 0, &v) ||
			    (v != RDMA_PS_UDP && v != RDMA_PS_IPOIB))
				return bad(err, "-p", optarg,
					   "port space must be 0x111 (UDP) or 0x2 (IPOIB)");
			o->port_space = (int)v;
			break;
		case 'o':
			o->sendonly = 1;
			break;
		case 'l':
			o->no_loopback = 1;
			break;
		case OPT_UDP:
			o->transport = EVR_MC_UDP;
			break;
		case OPT_UDP_PORT:
			if (num(optarg, 1, 65535, 10, &v))
				return bad(err, "--udp-port", optarg,
					   "port must be 1 to 65535");
			o->udp_port = (uint16_t)v;
			break;
		case OPT_SETTLE:
			if (secs(optarg, 0, 3600, &o->settle_ms))
				return bad(err, "--settle", optarg,
					   "must be 0 to 3600 seconds");
			break;
		case OPT_DEADLINE:
			if (secs(optarg, 0.01, 86400, &o->deadline_ms))
				return bad(err, "--deadline", optarg,
					   "must be 0.01 to 86400 seconds");
			break;
		case OPT_RATE:
			errno = 0;
			o->rate = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(o->rate > 0) ||
			    o->rate > 1e7)
				return bad(err, "--rate", optarg,
					   "must be above 0 and at most 1e7 messages/s");
			break;
		case OPT_WINDOW:
			if (num(optarg, EVR_MC_MIN_WINDOW, EVR_MC_MAX_WINDOW,
				10, &v))
				return bad(err, "--window", optarg,
					   "must be 64 to 1048576");
			o->window = ((unsigned)v + 63) & ~63u;
			break;
		case OPT_MAX_SENDERS:
			if (num(optarg, 1, EVR_MC_MAX_MAX_SENDERS, 10, &v))
				return bad(err, "--max-senders", optarg,
					   "must be 1 to 4096");
			o->max_senders = (unsigned)v;
			break;
		case OPT_STATS:
			cli->stats = 1;
			break;
		case OPT_TRACE:
			cli->trace = 1;
			break;
		case OPT_JSON:
			cli->json = 1;
			break;
		case OPT_HELP:
			return MCKEY_PARSE_HELP;
		case OPT_VERSION:
			return MCKEY_PARSE_VERSION;
		default:
			return MCKEY_PARSE_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(err, "mckey: unexpected argument '%s'\n", argv[optind]);
		return MCKEY_PARSE_BAD;
	}
	if (o->unmapped && !o->bind_addr)
		return MCKEY_PARSE_UNMAPPED;
	if (!o->group) {
		fprintf(err, "mckey: a multicast address is required (-m or -M)\n");
		return MCKEY_PARSE_BAD;
	}
	return MCKEY_PARSE_OK;
}
