/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream's progress reports (--interval) and latency table
 * (--percentiles): both kept apart from upstream's result table.
 */
#ifndef EVR_CLI_PROGRESS_H
#define EVR_CLI_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "evrdma/stream.h"

struct progress_out {
	FILE *f;
	int tty;        /* one live line, rewritten with \r */
	int live;       /* a live line is on screen now */
};

void progress_init(struct progress_out *po, FILE *f, int tty);
/* One report, without a newline:
 * "[   2.0s] 64_lat 41234/100000 iters 0.05 Gb/s" */
void progress_format(char *buf, size_t len, const struct evr_progress *p);
void progress_print(struct progress_out *po, const struct evr_progress *p);
/* Erase the live line (before anything else is written to the screen). */
void progress_clear(struct progress_out *po);

/* The --percentiles table: header and one row (with newlines), usec. */
const char *lat_header(void);
void lat_format_row(char *buf, size_t len, const char *name,
		    const struct evr_lat_stats *l);

#endif
