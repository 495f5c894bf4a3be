/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --fail-if EXPR: a run's pass/fail thresholds (rstream(1), mckey(1)).
 * EXPR is a measure, > or <, and a value: "p99>50us", "max > 1ms",
 * "gbps<10", "loss>0.1%".  Parsed once, checked against each result
 * row, and said at the end: which threshold failed, by how much, in
 * which test.  No I/O here (tests/check_cli.c holds the rules).
 */
#ifndef EVR_CLI_THRESHOLD_H
#define EVR_CLI_THRESHOLD_H

#include <stddef.h>

enum thr_measure {
	THR_MIN, THR_P50, THR_P90, THR_P99, THR_P999, THR_MAX, THR_MEAN,
	THR_USEC,      /* usec/xfer, the table's last column */
	THR_GBPS,      /* Gb/sec */
	THR_LOSS,      /* mckey: percent of the datagrams due, lost */
	THR__COUNT
};

/* The measures a program takes (bit 1 << THR_*). */
#define THR_RSTREAM ((1u << THR_LOSS) - 1)
#define THR_MCKEY (1u << THR_LOSS)

#define THR_MAX_EXPRS 16

struct threshold {
	enum thr_measure m;
	int below;          /* "<": fails when the value is below limit */
	double limit;       /* ns for the latencies, usec, Gb/s, percent */
	char expr[48];      /* as given, for the lines and JSON */
	/* what the run saw: the worst value and where (checked 0: no row
	 * had the measure) */
	unsigned checked;
	int failed;
	double worst;
	char where[32];
};

struct thr_set {
	struct threshold t[THR_MAX_EXPRS];
	unsigned n;
};

/* Parse EXPR into set (allowed: THR_RSTREAM or THR_MCKEY).  0, or -1
 * with what is wrong in err (a clause, to follow "invalid value ...
 * for --fail-if: "). */
int thr_add(struct thr_set *set, const char *expr, unsigned allowed,
	    char *err, size_t len);
/* Does any threshold of set need the latency distribution? */
int thr_need_lat(const struct thr_set *set);
/* The measure's name as EXPR spells it ("p99.9"), and its unit as
 * values are given back ("ns", "usec", "Gb/s", "%"). */
const char *thr_measure_name(enum thr_measure m);
const char *thr_unit(enum thr_measure m);
/* A row's value of measure m (have: which of values[] it has, bit
 * 1 << THR_*), against each threshold of set: the worst kept. */
void thr_observe(struct thr_set *set, const double values[THR__COUNT],
		 unsigned have, const char *where);
/* The thresholds that failed. */
unsigned thr_failed(const struct thr_set *set);
/* One threshold's verdict as a line (no newline): "--fail-if 'p99>50us':
 * 64_lat p99 73.20 usec, 1.46 x the limit", or that it passed, or that
 * no row had its measure. */
void thr_line(const struct threshold *t, char *buf, size_t len);

#endif
