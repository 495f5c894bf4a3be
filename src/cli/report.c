/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "report.h"
#include "../stream/plan.h"

const char *rstream_header(void)
{
	static char hdr[96];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr), "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n",
			 "name", "bytes", "xfers", "iters", "total", "time",
			 "Gb/sec", "usec/xfer");
	return hdr;
}

void rstream_format_row(char *buf, size_t len, const struct evr_result *r)
{
	char sz[32], cnt[32], it[32], tot[32], name[32];
	double usec = r->elapsed_ns / 1000.0;
	/* usec/xfer is one connection's: the mean of them with -c N */
	double conn_usec = r->nconns ? r->conn_mean_ns / 1000.0 : usec;

	evr__size_str(sz, sizeof(sz), r->size);
	evr__cnt_str(cnt, sizeof(cnt), r->count);
	evr__cnt_str(it, sizeof(it), r->iters);
	evr__size_str(tot, sizeof(tot), (long long)r->bytes);
	/* -c N --per-conn: one connection's row is named test#K */
	if (r->conn_index) {
		size_t n = (size_t)snprintf(name, sizeof(name) - 1, "%s#%u",
					    r->name, r->conn_index);

		/* too long for its column, it still ends in a space */
		if (n >= 10 && n < sizeof(name) - 1)
			strcpy(name + n, " ");
	} else {
		snprintf(name, sizeof(name), "%s", r->name);
	}
	/* Upstream's columns, including the header's 2-column skew over
	 * usec/xfer, so that scripts reading either tool's table agree. */
	snprintf(buf, len, "%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", name,
		 sz, cnt, it, tot, usec / 1000000.0,
		 (r->bytes * 8) / (1000.0 * usec),
		 (conn_usec / r->iters) / (r->count * 2.0));
}

int rstream_exit_status(const struct evr_failure *f)
{
	if (!f || !f->err)
		return RSTREAM_EXIT_OK;
	switch (-f->err) {
	case EVR_E_RESOLVE:
		return RSTREAM_EXIT_RESOLVE;
	case EVR_E_NODEV:
		return RSTREAM_EXIT_NODEV;
	case EVR_E_NOTSUP:
		return RSTREAM_EXIT_NOTSUP;
	case EVR_E_CANCELLED:
		return RSTREAM_EXIT_INTERRUPTED;
	default:
		break;
	}
	switch (f->phase) {
	case EVR_PH_SETUP:
		return RSTREAM_EXIT_LOCAL;
	case EVR_PH_CONNECT:
		return RSTREAM_EXIT_CONNECT;
	default:
		return RSTREAM_EXIT_TEST;
	}
}
