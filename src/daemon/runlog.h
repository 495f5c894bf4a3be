/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the status page shows of the probes' runs: each run's log, one
 * line an event (what was resolved, connected, negotiated, measured, and
 * where it failed), written as the run goes and bounded (RUNLOG_MAX
 * bytes, a line RUNLOG_LINE_MAX: past it, a marker and nothing more);
 * and the ring of the last N runs (the configuration's "status":
 * {"runs": N}), each with its outcome and its log, found by its id for
 * /run/ID.  No I/O: the daemon's probes write, its pages read.
 */
#ifndef EVR_PROBED_RUNLOG_H
#define EVR_PROBED_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

/* a run's log, at most, with the marker */
#define RUNLOG_MAX 4096
/* one line, at most (longer: cut, with "...") */
#define RUNLOG_LINE_MAX 512
#define RUNLOG_TRUNCATED "[log truncated]\n"
/* the ring's runs, at most ("status": {"runs"}) */
#define RUNRING_MAX 10000
#define RUNRING_DEFAULT 100

struct runlog {
	uint64_t t0_ns;         /* the run's start: lines say "+S.SSSSSS" */
	size_t len;             /* bytes in buf, not counting the NUL */
	int truncated;          /* the marker was written: nothing more */
	char buf[RUNLOG_MAX];
};

/* A new log (t0_ns: the run's start), or NULL out of memory. */
struct runlog *runlog_new(uint64_t t0_ns);
/* One line, "+S.SSSSSS text\n", at now_ns; a newline inside text is
 * made a space.  Past RUNLOG_MAX: the marker, once, and nothing more. */
void runlog_add(struct runlog *l, uint64_t now_ns, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One finished run. */
struct runrec {
	uint64_t id;            /* 1, 2, ...: the agent's runs in order */
	char probe[80];         /* its probe's name */
	char peer[72];          /* a mesh peer's name, or "" */
	double start_ts;        /* wall clock, s */
	double duration_s;
	int ok;
	const char *reason;     /* a failure's (static), or NULL */
	uint64_t p50_ns, p99_ns;/* a latency run's, else 0 */
	struct runlog *log;     /* owned; NULL: none was kept */
};

struct runring {
	unsigned cap;           /* N: 0 keeps none */
	unsigned n;             /* held, at most cap */
	unsigned head;          /* the next slot written */
	uint64_t next_id;
	struct runrec *recs;
};

/* A ring of cap runs (0 to RUNRING_MAX): 0 or -ENOMEM. */
int runring_init(struct runring *r, unsigned cap);
/* A new capacity, keeping the newest runs that fit: 0 or -ENOMEM (the
 * ring is then as it was). */
int runring_resize(struct runring *r, unsigned cap);
/* rec (its log taken over: freed now if the ring keeps nothing) as the
 * newest run, the oldest dropped if full; its id, assigned here. */
uint64_t runring_add(struct runring *r, struct runrec *rec);
/* The i-th newest run (0: the newest), or NULL past the last held. */
const struct runrec *runring_nth(const struct runring *r, unsigned i);
/* The run of that id, if the ring still holds it. */
const struct runrec *runring_find(const struct runring *r, uint64_t id);
void runring_fini(struct runring *r);

#endif
