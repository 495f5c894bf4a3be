/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"

void progress_init(struct progress_out *po, FILE *f, int tty)
{
	memset(po, 0, sizeof(*po));
	po->f = f;
	po->tty = tty;
}

void progress_free(struct progress_out *po)
{
	free(po->slot);
	po->slot = NULL;
	po->nslots = 0;
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
	if (p->conn_total > 1)
		snprintf(who, sizeof(who), "conn#%u ", p->conn_index);
	snprintf(buf, len, "[%6.1fs] %s%s %s %.2f Gb/s",
		 p->elapsed_ns / 1e9, who, p->test ? p->test : "?", count,
		 p->gbps);
}

static void emit(struct progress_out *po, const char *line, int live)
{
	if (po->tty && live) {
		/* \033[K: erase the rest of a longer previous line */
		fprintf(po->f, "\r%s\033[K", line);
		po->live = 1;
	} else {
		if (po->live)
			fputs("\r\033[K", po->f);
		po->live = 0;
		fprintf(po->f, "%s\n", line);
	}
	fflush(po->f);
}

/* The round's aggregate: the sums over the connections that reported. */
static void flush_round(struct progress_out *po, const struct evr_progress *p)
{
	uint64_t done = 0, total = 0;
	double gbps = 0;
	unsigned i, n = 0;
	char line[256];

	for (i = 0; i < po->nslots; i++) {
		if (po->slot[i].gen != po->gen)
			continue;
		done += po->slot[i].iters_done;
		total += po->slot[i].iters_total;
		gbps += po->slot[i].gbps;
		n++;
	}
	if (total)
		snprintf(line, sizeof(line), "[%6.1fs] %s %u conns %llu/%llu "
			 "iters %.2f Gb/s", p->elapsed_ns / 1e9,
			 p->test ? p->test : "?", n, (unsigned long long)done,
			 (unsigned long long)total, gbps);
	else
		snprintf(line, sizeof(line), "[%6.1fs] %s %u conns %llu iters "
			 "%s%.2f Gb/s", p->elapsed_ns / 1e9,
			 p->test ? p->test : "?", n, (unsigned long long)done,
			 p->duration_ns ? "of the duration " : "", gbps);
	emit(po, line, 1);
	po->gen++;
	po->nfresh = 0;
}

void progress_print(struct progress_out *po, const struct evr_progress *p)
{
	struct progress_slot *sl;
	char line[256];

	if (p->conn_total > 1 && p->conn_index >= 1 &&
	    p->conn_index <= p->conn_total) {
		if (po->nslots != p->conn_total) {
			free(po->slot);
			po->slot = calloc(p->conn_total, sizeof(*po->slot));
			po->nslots = po->slot ? p->conn_total : 0;
			po->gen = 1; /* calloc's 0: never reported */
			po->nfresh = 0;
		}
		if (po->per_conn) {
			progress_format(line, sizeof(line), p);
			emit(po, line, 0);
		}
		if (!po->slot)
			return; /* no memory: the per-connection lines only */
		sl = &po->slot[p->conn_index - 1];
		if (sl->gen == po->gen)
			flush_round(po, p); /* it reports again: a new round */
		sl->iters_done = p->iters_done;
		sl->iters_total = p->iters_total;
		sl->gbps = p->gbps;
		sl->gen = po->gen;
		if (++po->nfresh == po->nslots)
			flush_round(po, p);
		return;
	}
	progress_format(line, sizeof(line), p);
	emit(po, line, 1);
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
