/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdio.h>

#include "progress.h"

void progress_init(struct progress_out *po, FILE *f, int tty)
{
	po->f = f;
	po->tty = tty;
	po->live = 0;
}

void progress_format(char *buf, size_t len, const struct evr_progress *p)
{
	char who[96] = "", count[64];

	if (p->server)
		snprintf(who, sizeof(who), "conn %u %s ", p->conn_id,
			 p->peer ? p->peer : "");
	if (p->iters_total)
		snprintf(count, sizeof(count), "%llu/%llu iters",
			 (unsigned long long)p->iters_done,
			 (unsigned long long)p->iters_total);
	else if (p->duration_ns)
		snprintf(count, sizeof(count), "%llu iters of %.1fs",
			 (unsigned long long)p->iters_done,
			 p->duration_ns / 1e9);
	else
		snprintf(count, sizeof(count), "%llu iters",
			 (unsigned long long)p->iters_done);
	snprintf(buf, len, "[%6.1fs] %s%s %s %.2f Gb/s",
		 p->elapsed_ns / 1e9, who, p->test ? p->test : "?", count,
		 p->gbps);
}

void progress_print(struct progress_out *po, const struct evr_progress *p)
{
	char line[256];

	progress_format(line, sizeof(line), p);
	if (po->tty) {
		/* \033[K: erase the rest of a longer previous line */
		fprintf(po->f, "\r%s\033[K", line);
		po->live = 1;
	} else {
		fprintf(po->f, "%s\n", line);
	}
	fflush(po->f);
}

void progress_clear(struct progress_out *po)
{
	if (!po->live)
		return;
	fputs("\r\033[K", po->f);
	fflush(po->f);
	po->live = 0;
}

const char *lat_header(void)
{
	static char hdr[128];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr),
			 "%-10s%10s%11s%11s%11s%11s%11s%11s%11s\n", "name",
			 "samples", "min_us", "p50_us", "p90_us", "p99_us",
			 "p99.9_us", "max_us", "mean_us");
	return hdr;
}

void lat_format_row(char *buf, size_t len, const char *name,
		    const struct evr_lat_stats *l)
{
	snprintf(buf, len,
		 "%-10s%10llu%11.2f%11.2f%11.2f%11.2f%11.2f%11.2f%11.2f\n",
		 name, (unsigned long long)l->samples, l->min_ns / 1e3,
		 l->p50_ns / 1e3, l->p90_ns / 1e3, l->p99_ns / 1e3,
		 l->p999_ns / 1e3, l->max_ns / 1e3, l->mean_ns / 1e3);
}
