/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rstream's command line: upstream's options plus evrdma's long ones. */
#ifndef EVR_CLI_RSTREAM_OPTS_H
#define EVR_CLI_RSTREAM_OPTS_H

#include <stdio.h>

#include "evrdma/stream.h"
#include "threshold.h"

struct rstream_cli {
	struct evr_stream_opts o;
	int trace;
	/* -T a and -T b are independent flags, as upstream; the I/O mode is
	 * derived from them once parsing is done. */
	int async, blocking;
	int json;       /* --json: JSON Lines instead of the table */
	int per_conn;           /* --per-conn: a row per connection too */
	int check;              /* --check: diagnose the host, run nothing */
	int no_host_check;      /* --no-host-check: no checks before a run */
	struct thr_set fail_if; /* --fail-if, repeatable */
	char fail_if_err[160];  /* what the last bad one lacked */
	int lat_hidden;         /* the distribution is --fail-if's alone:
				 * no latency table */
	int all_dropped;        /* -S all gave way to -C or -I */
};

enum {
	RSTREAM_PARSE_OK = 0,
	RSTREAM_PARSE_USAGE,    /* print usage, exit 1 (upstream) */
	RSTREAM_PARSE_BAD,      /* one line already written to err, exit 1 */
	RSTREAM_PARSE_HELP,     /* --help: usage, exit 0 */
	RSTREAM_PARSE_VERSION,
};

/* Parse argv into cli.  Messages for bad values go to err. */
int rstream_parse(int argc, char **argv, struct rstream_cli *cli, FILE *err);
void rstream_usage(FILE *out, const char *prog);
/* --help: usage plus evrdma's own options. */
void rstream_help(FILE *out, const char *prog);
/* The one line (without "rstream: warning: ") a client must print before
 * it runs a test the server may not know of, or NULL.  After a
 * successful parse. */
const char *rstream_plan_warning(const struct rstream_cli *cli);
/* The one line (without "rstream: warning: ") for -S all given with -C
 * or -I, which then runs one custom test of 1000 bytes as upstream's
 * does, or NULL.  After a successful parse. */
const char *rstream_size_warning(const struct rstream_cli *cli);
/* -T letters and words, as upstream: returns 0 or -1. */
int rstream_test_opt(struct rstream_cli *cli, const char *arg);

/* A rule between options: when holds() says so, the command line is
 * refused with "rstream: MSG", a message that names both options. */
struct rstream_exclusion {
	const char *opt, *other;    /* as the message names them */
	int (*holds)(const struct evr_stream_opts *o);
	int before_sides;           /* checked before the side rule */
	const char *msg;
};
/* The table rstream_parse() checks, in its order (for the tests). */
const struct rstream_exclusion *rstream_exclusions(size_t *n);
/* The option table, in its order (for the tests). */
struct cli_opt;
const struct cli_opt *rstream_options(size_t *n);


#endif
