/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rstream's result table, in upstream's exact format. */
#ifndef EVR_CLI_REPORT_H
#define EVR_CLI_REPORT_H

#include <stddef.h>

#include "evrdma/stream.h"

/* The header line, with its newline. */
const char *rstream_header(void);
/* --mps: the iterations a second one connection achieved (an
 * aggregate: the mean connection's), iters over conn_mean_ns. */
double pace_achieved(const struct evr_result *r);
/* One row, with its newline, as upstream's show_perf() prints it. */
void rstream_format_row(char *buf, size_t len, const struct evr_result *r);
/* --settings: one line, with its newline, for a connection's settings. */
void rstream_format_settings(char *buf, size_t len, unsigned conn,
			     const char *peer,
			     const struct evr_conn_settings *s);



/* Documented exit statuses (rstream.1, EXIT STATUS). */
enum {
	RSTREAM_EXIT_OK = 0,
	RSTREAM_EXIT_USAGE = 1,
	RSTREAM_EXIT_RESOLVE = 2,
	RSTREAM_EXIT_CONNECT = 3,
	RSTREAM_EXIT_TEST = 4,
	RSTREAM_EXIT_LOCAL = 5,
	RSTREAM_EXIT_NOTSUP = 6,
	RSTREAM_EXIT_DEVICE = 7,  /* the RDMA device went away or its port
				   * went down */
	RSTREAM_EXIT_THRESHOLD = 8, /* a --fail-if threshold failed */
	RSTREAM_EXIT_INTERRUPTED = 130,
	RSTREAM_EXIT_NODEV = 255,
};

int rstream_exit_status(const struct evr_failure *f);
/* A result row's figures as its table row shows them: Gb/sec and
 * usec/xfer. */
void rstream_row_figures(const struct evr_result *r, double *gbps,
			 double *xfer_usec);
/* evr_failure_str(), with rstream's option names where the engine speaks
 * of its settings or limits (o: the engine's options, for the limits'
 * values; NULL: the defaults). */
void rstream_failure_str(const struct evr_failure *f,
			 const struct evr_stream_opts *o, char *buf, size_t len);
#endif
