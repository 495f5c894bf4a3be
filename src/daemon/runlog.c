/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The runs' logs and their ring (runlog.h).  A log is a fixed buffer: a
 * run writes at most RUNLOG_MAX bytes however chatty or hostile what it
 * reports (a peer's words, a name) is, so that N runs cost at most N x
 * RUNLOG_MAX.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runlog.h"

struct runlog *runlog_new(uint64_t t0_ns)
{
	struct runlog *l = malloc(sizeof(*l));

	if (!l)
		return NULL;
	l->t0_ns = t0_ns;
	l->len = 0;
	l->truncated = 0;
	l->buf[0] = '\0';
	return l;
}

/* The line s (len bytes, no newline) and a newline, if the log has room
 * for it and the marker after it; else the marker. */
static void put_line(struct runlog *l, const char *s, size_t len)
{
	size_t room = RUNLOG_MAX - 1 - l->len;
	size_t mark = sizeof(RUNLOG_TRUNCATED) - 1;

	if (len + 1 + mark <= room) {
		memcpy(l->buf + l->len, s, len);
		l->buf[l->len + len] = '\n';
		l->len += len + 1;
	} else {
		memcpy(l->buf + l->len, RUNLOG_TRUNCATED, mark);
		l->len += mark;
		l->truncated = 1;
	}
	l->buf[l->len] = '\0';
}

void runlog_add(struct runlog *l, uint64_t now_ns, const char *fmt, ...)
{
	char line[RUNLOG_LINE_MAX];
	uint64_t dt;
	va_list ap;
	int n, m;
	size_t len, i;

	if (!l || l->truncated)
		return;
	dt = now_ns > l->t0_ns ? now_ns - l->t0_ns : 0;
	n = snprintf(line, sizeof(line), "+%llu.%06llu ",
		     (unsigned long long)(dt / 1000000000u),
		     (unsigned long long)(dt % 1000000000u / 1000u));
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
	if (len >= sizeof(line)) { /* cut: its end says so */
		len = sizeof(line) - 1;
		memcpy(line + len - 3, "...", 3);
	}
	for (i = 0; i < len; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	put_line(l, line, len);
}

int runring_init(struct runring *r, unsigned cap)
{
	memset(r, 0, sizeof(*r));
	r->next_id = 1;
	if (cap > RUNRING_MAX)
		return -EINVAL;
	r->cap = cap;
	if (cap && !(r->recs = calloc(cap, sizeof(*r->recs))))
		return -ENOMEM;
	return 0;
}

const struct runrec *runring_nth(const struct runring *r, unsigned i)
{
	if (i >= r->n)
		return NULL;
	return &r->recs[(r->head + r->cap - 1 - i) % r->cap];
}

int runring_resize(struct runring *r, unsigned cap)
{
	struct runrec *recs = NULL;
	unsigned i, keep;

	if (cap == r->cap)
		return 0;
	if (cap > RUNRING_MAX)
		return -EINVAL;
	if (cap && !(recs = calloc(cap, sizeof(*recs))))
		return -ENOMEM;
	keep = r->n < cap ? r->n : cap;
	/* the newest keep runs, oldest first, at 0 .. keep */
	for (i = 0; i < keep; i++)
		recs[keep - 1 - i] = *runring_nth(r, i);
	for (i = keep; i < r->n; i++)
		free(runring_nth(r, i)->log);
	free(r->recs);
	r->recs = recs;
	r->cap = cap;
	r->n = keep;
	r->head = cap ? keep % cap : 0;
	return 0;
}

uint64_t runring_add(struct runring *r, struct runrec *rec)
{
	struct runrec *slot;

	rec->id = r->next_id++;
	if (!r->cap) {
		free(rec->log);
		rec->log = NULL;
		return rec->id;
	}
	slot = &r->recs[r->head];
	if (r->n == r->cap)
		free(slot->log);
	else
		r->n++;
	*slot = *rec;
	rec->log = NULL; /* the ring's now */
	r->head = (r->head + 1) % r->cap;
	return slot->id;
}

const struct runrec *runring_find(const struct runring *r, uint64_t id)
{
	const struct runrec *o = runring_nth(r, 0);

	/* ids are consecutive in the ring: the newest is o->id */
	if (!o || id > o->id || o->id - id >= r->n)
		return NULL;
	return runring_nth(r, (unsigned)(o->id - id));
}

void runring_fini(struct runring *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++)
		free(runring_nth(r, i)->log);
	free(r->recs);
	memset(r, 0, sizeof(*r));
}
