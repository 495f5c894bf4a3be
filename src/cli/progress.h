/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream's progress reports (--interval) and latency table
 * (--percentiles): both kept apart from upstream's result table.
 */
#ifndef EVR_CLI_PROGRESS_H
#define EVR_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "evrdma/stream.h"

/* rstream -c N: the connections' reports of one tick become one line
 * (and a conn#K line each with --per-conn).  A connection whose test is
 * over keeps its count in the sums (they never go backwards) and is no
 * longer waited for. */
struct progress_slot {
	uint64_t iters_done, iters_total;
	double gbps;
	unsigned gen;   /* the round it last reported in */
	unsigned test_index;
	int final;      /* its test test_index is over */
};

struct progress_out {
	FILE *f;
	int tty;        /* one live line, rewritten with \r */
	int live;       /* a live line is on screen now */
	int per_conn;   /* -c N --per-conn: a line per connection too */
	int no_live;    /* a server's clients at once: a line each, as
			 * one live line would show one of them at a time */
	struct progress_slot *slot; /* [conn_total], made at the first */
	unsigned nslots, gen, nfresh;
	/* the round in hand: its test, and its time (its latest report's) */
	uint64_t round_ns, round_dur_ns;
	unsigned round_ti;
	char round_test[32];
};

void progress_init(struct progress_out *po, FILE *f, int tty);
/* One report, without a newline:
 * "[   2.0s] 64_lat 41234/100000 iters 0.05 Gb/s" */
void progress_format(char *buf, size_t len, const struct evr_progress *p);
/* One report; with p->conn_total > 1 it joins its round's aggregate,
 * "[   2.0s] 64_lat 4 conns 1234/400000 iters 1.23 Gb/s", printed once
 * every connection still in the test has reported (or one reports
 * twice), at the time of the round's latest report. */
void progress_print(struct progress_out *po, const struct evr_progress *p);
/* -c N: connection r->conn_index's result (its test is over): its
 * iterations stay in the rounds' sums, and the rounds stop waiting for
 * it. */
void progress_conn_done(struct progress_out *po, const struct evr_result *r);
void progress_free(struct progress_out *po);
/* Erase the live line (before anything else is written to the screen). */
void progress_clear(struct progress_out *po);

/* The --percentiles table: header and one row (with newlines), usec. */
const char *lat_header(void);
void lat_format_row(char *buf, size_t len, const char *name,
		    const struct evr_lat_stats *l);
/* The --split table: header, and one row per part of a test's round
 * trip (name "" after the first), usec. */
/* --mps: the rate asked and achieved (per connection), the iterations
 * that went late and the latest, after the latency table. */
struct pace_figures {
	uint32_t mps;
	double achieved;
	uint64_t late, late_max_ns;
};
const char *pace_header(void);
void pace_format_row(char *buf, size_t len, const char *name,
		     const struct pace_figures *p);
const char *split_header(void);
void split_format_row(char *buf, size_t len, const char *name,
		      enum evr_split_part part, const struct evr_lat_stats *l);

#endif
