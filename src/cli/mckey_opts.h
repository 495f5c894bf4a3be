/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* mckey's command line: upstream's options plus evrdma's long ones. */
#ifndef EVR_CLI_MCKEY_OPTS_H
#define EVR_CLI_MCKEY_OPTS_H

#include <stdio.h>

#include "evrdma/mcast.h"
#include "threshold.h"

struct mckey_cli {
	struct evr_mcast_opts o;
	int stats;
	int trace;
	int json;       /* --json: JSON Lines instead of upstream's lines */
	int check;      /* --check: diagnose the host, run nothing */
	int no_host_check; /* --no-host-check: no checks before a run */
	struct thr_set fail_if; /* --fail-if (receiver: loss) */
	char fail_if_err[160];
};

/* A --fail-if threshold failed (mckey.1, EXIT STATUS). */
#define MCKEY_EXIT_THRESHOLD 8

enum {
	MCKEY_PARSE_OK = 0,
	MCKEY_PARSE_USAGE,      /* usage on stdout, exit 1 (upstream) */
	MCKEY_PARSE_BAD,        /* one line on stderr already, exit 1 */
	MCKEY_PARSE_UNMAPPED,   /* -M without -b: upstream's message, exit 1 */
	MCKEY_PARSE_HELP,
	MCKEY_PARSE_VERSION,
};

int mckey_parse(int argc, char **argv, struct mckey_cli *cli, FILE *err);
void mckey_usage(FILE *out, const char *prog);
/* The option table, in its order (for the tests). */
struct cli_opt;
const struct cli_opt *mckey_options(size_t *n);
void mckey_help(FILE *out, const char *prog);

#endif
