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

/* The round's aggregate, at its own time: the sums over the connections
 * that reported in it, and those whose test is over. */
static void flush_round(struct progress_out *po)
{
	uint64_t done = 0, total = 0;
	double gbps = 0;
	unsigned i, n = 0;
	char line[256];

	for (i = 0; i < po->nslots; i++) {
		const struct progress_slot *sl = &po->slot[i];

		if (sl->final ? sl->test_index != po->round_ti :
				sl->gen != po->gen)
			continue;
		done += sl->iters_done;
		total += sl->iters_total;
		if (!sl->final)
			gbps += sl->gbps;
		n++;
	}
	if (total)
		snprintf(line, sizeof(line), "[%6.1fs] %s %u conns %llu/%llu "
			 "iters %.2f Gb/s", po->round_ns / 1e9, po->round_test,
			 n, (unsigned long long)done,
			 (unsigned long long)total, gbps);
	else
		snprintf(line, sizeof(line), "[%6.1fs] %s %u conns %llu iters "
			 "%s%.2f Gb/s", po->round_ns / 1e9, po->round_test, n,
			 (unsigned long long)done,
			 po->round_dur_ns ? "of the duration " : "", gbps);
	emit(po, line, 1);
	po->gen++;
	po->nfresh = 0;
	po->round_ns = 0;
}

/* The connections a round waits for: those still in a test. */
static unsigned live_slots(const struct progress_out *po)
{
	unsigned i, n = 0;

	for (i = 0; i < po->nslots; i++)
		n += !po->slot[i].final;
	return n;
}

/* A new slot for each of n connections, none of them reported yet, and
 * a new round; no slots at all when out of memory. */
static void reset_slots(struct progress_out *po, unsigned n)
{
	free(po->slot);
	po->slot = calloc(n, sizeof(*po->slot));
	po->nslots = po->slot ? n : 0;
	po->gen = 1; /* calloc's 0: never reported */
	po->nfresh = 0;
	po->round_ns = 0;
}

/* The round's time and test: those of its latest report. */
static void note_round(struct progress_out *po, const struct evr_progress *p)
{
	if (po->nfresh && p->elapsed_ns <= po->round_ns)
		return;
	po->round_ns = p->elapsed_ns;
	po->round_ti = p->test_index;
	po->round_dur_ns = p->duration_ns;
	snprintf(po->round_test, sizeof(po->round_test), "%s",
		 p->test ? p->test : "?");
}

void progress_print(struct progress_out *po, const struct evr_progress *p)
{
	struct progress_slot *sl;
	char line[256];

	if (p->conn_total > 1 && p->conn_index >= 1 &&
	    p->conn_index <= p->conn_total) {
		if (po->nslots != p->conn_total)
			reset_slots(po, p->conn_total);
		if (po->per_conn) {
			progress_format(line, sizeof(line), p);
			emit(po, line, 0);
		}
		if (!po->slot)
			return; /* no memory: the per-connection lines only */
		sl = &po->slot[p->conn_index - 1];
		if (sl->gen == po->gen && po->nfresh)
			flush_round(po); /* it reports again: a new round */
		sl->iters_done = p->iters_done;
		sl->iters_total = p->iters_total;
		sl->gbps = p->gbps;
		sl->gen = po->gen;
		sl->test_index = p->test_index;
		sl->final = 0;
		note_round(po, p);
		if (++po->nfresh >= live_slots(po))
			flush_round(po);
		return;
	}
	progress_format(line, sizeof(line), p);
	emit(po, line, !po->no_live);
}

void progress_conn_done(struct progress_out *po, const struct evr_result *r)
{
	struct progress_slot *sl;

	if (!r->conn_index || r->nconns || r->conn_index > po->nslots)
		return;
	sl = &po->slot[r->conn_index - 1];
	if (sl->gen == po->gen && po->nfresh)
		po->nfresh--;   /* counted as final now, not as reported */
	if (!sl->gen) {
		/* it never reported: its test is the round's, and a count
		 * (no -D) is all it ran */
		sl->test_index = po->round_ti;
		sl->iters_total = po->round_dur_ns ? 0 : r->iters;
	}
	sl->iters_done = r->iters;
	sl->final = 1;
	/* the round in hand may wait for nobody else now */
	if (po->nfresh && po->nfresh >= live_slots(po))
		flush_round(po);
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

const char *split_header(void)
{
	static char hdr[128];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr),
			 "%-10s%-7s%8s%11s%11s%11s%11s%11s%11s\n", "name",
			 "part", "samples", "min_us", "p50_us", "p90_us",
			 "p99_us", "max_us", "mean_us");
	return hdr;
}

void split_format_row(char *buf, size_t len, const char *name,
		      enum evr_split_part part, const struct evr_lat_stats *l)
{
	static const char *const names[EVR_SPLIT_PARTS] = {
		[EVR_SPLIT_NET] = "net",
		[EVR_SPLIT_PEER] = "peer",
		[EVR_SPLIT_LOCAL] = "local",
	};

	if (!l->samples) {
		snprintf(buf, len, "%-10s%-7s%8s%11s\n", name,
			 names[part], "0", "-");
		return;
	}
	snprintf(buf, len,
		 "%-10s%-7s%8llu%11.2f%11.2f%11.2f%11.2f%11.2f%11.2f\n",
		 name, names[part], (unsigned long long)l->samples,
		 l->min_ns / 1e3, l->p50_ns / 1e3, l->p90_ns / 1e3,
		 l->p99_ns / 1e3, l->max_ns / 1e3, l->mean_ns / 1e3);
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

const char *pace_header(void)
{
	static char hdr[128];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr), "%-10s%10s%13s%10s%13s\n", "name",
			 "asked/s", "achieved/s", "late", "max_late_us");
	return hdr;
}

void pace_format_row(char *buf, size_t len, const char *name,
		     const struct pace_figures *p)
{
	snprintf(buf, len, "%-10s%10u%13.1f%10llu%13.2f\n", name, p->mps,
		 p->achieved, (unsigned long long)p->late,
		 p->late_max_ns / 1e3);
}
