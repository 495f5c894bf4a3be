/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* --fail-if thresholds (threshold.h). */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "threshold.h"

static const char *const names[THR__COUNT] = {
	[THR_MIN] = "min", [THR_P50] = "p50", [THR_P90] = "p90",
	[THR_P99] = "p99", [THR_P999] = "p99.9", [THR_MAX] = "max",
	[THR_MEAN] = "mean", [THR_USEC] = "usec", [THR_GBPS] = "gbps",
	[THR_LOSS] = "loss",
};

/* The latencies' units: a value is given with one, and said back in it. */
static const struct {
	const char *name;
	double ns;
} time_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "usec", 1e3 }, { "ms", 1e6 },
	{ "s", 1e9 },
};

#define LATENCIES ((1u << THR_USEC) - 1)

const char *thr_measure_name(enum thr_measure m)
{
	return (unsigned)m < THR__COUNT ? names[m] : "?";
}

const char *thr_unit(enum thr_measure m)
{
	if ((1u << m) & LATENCIES)
		return "ns";
	return m == THR_USEC ? "usec" : m == THR_GBPS ? "Gb/s" : "%";
}

static const char *skip(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The measure at *p (its name's longest match), or -1. */
static int measure_at(const char **p)
{
	size_t n = 0, best = 0;
	int m, found = -1;

	while (isalnum((unsigned char)(*p)[n]) || (*p)[n] == '.')
		n++;
	for (m = 0; m < THR__COUNT; m++)
		if (strlen(names[m]) == n && !strncasecmp(*p, names[m], n) &&
		    n > best) {
			best = n;
			found = m;
		}
	if (found >= 0)
		*p += best;
	return found;
}

/* The value's unit at p for measure m: its factor into the stored unit
 * (*scale), or -1. */
static int unit_at(const char *p, enum thr_measure m, double *scale,
		   char *err, size_t len)
{
	size_t i, n = strcspn(p, " \t");

	*scale = 1;
	if ((1u << m) & LATENCIES) {
		for (i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
			if (n && strlen(time_units[i].name) == n &&
			    !strncasecmp(p, time_units[i].name, n)) {
				*scale = time_units[i].ns;
				return (int)n;
			}
		snprintf(err, len, "give %s's limit with its unit: ns, us, "
			 "ms or s (for example %s>50us)", names[m], names[m]);
		return -1;
	}
	if (!n)
		return 0;
	if ((m == THR_USEC && (!strncasecmp(p, "us", n) ||
			       !strncasecmp(p, "usec", n))) ||
	    (m == THR_GBPS && !strncasecmp(p, "gbps", n)) ||
	    (m == THR_LOSS && n == 1 && *p == '%'))
		return (int)n;
	snprintf(err, len, "%s takes %s", names[m],
		 m == THR_USEC ? "microseconds (a number, or with us)" :
		 m == THR_GBPS ? "Gb/s (a number)" : "a percentage (0 to 100, "
		 "or with %)");
	return -1;
}

int thr_add(struct thr_set *set, const char *expr, unsigned allowed,
	    char *err, size_t len)
{
	struct threshold t;
	const char *p = skip(expr);
	char *end;
	double v, scale;
	int m, u;

	memset(&t, 0, sizeof(t));
	if (set->n >= THR_MAX_EXPRS) {
		snprintf(err, len, "at most %d thresholds", THR_MAX_EXPRS);
		return -1;
	}
	if (strlen(expr) >= sizeof(t.expr)) {
		snprintf(err, len, "too long (at most %zu characters)",
			 sizeof(t.expr) - 1);
		return -1;
	}
	m = measure_at(&p);
	if (m < 0 || !((1u << m) & allowed)) {
		snprintf(err, len, "the measure must be %s",
			 allowed == THR_MCKEY ? "loss" :
			 "one of min, p50, p90, p99, p99.9, max, mean, usec, "
			 "gbps");
		return -1;
	}
	p = skip(p);
	if (*p != '<' && *p != '>') {
		snprintf(err, len, "%s must be followed by > or <",
			 names[m]);
		return -1;
	}
	t.below = *p == '<';
	p = skip(p + 1);
	if (*p == '<' || *p == '>' || *p == '=') {
		/* ">=", ">>": the operator is one character, and what
		 * follows it is the limit */
		snprintf(err, len, "%s must be followed by one > or <, then "
			 "the limit", names[m]);
		return -1;
	}
	v = strtod(p, &end);
	if (end == p || !isfinite(v) || v < 0 || *p == '+' || *p == '-') {
		snprintf(err, len, "the limit must be a number of 0 or "
			 "more");
		return -1;
	}
	p = skip(end);
	u = unit_at(p, (enum thr_measure)m, &scale, err, len);
	if (u < 0)
		return -1;
	p = skip(p + u);
	if (*p) {
		snprintf(err, len, "'%s' after the limit", p);
		return -1;
	}
	if (m == THR_LOSS && v > 100) {
		snprintf(err, len, "a loss is 0 to 100 %%");
		return -1;
	}
	t.m = (enum thr_measure)m;
	t.limit = v * scale;
	snprintf(t.expr, sizeof(t.expr), "%s", expr);
	set->t[set->n++] = t;
	return 0;
}

int thr_need_lat(const struct thr_set *set)
{
	unsigned i;

	for (i = 0; i < set->n; i++)
		if ((1u << set->t[i].m) & LATENCIES)
			return 1;
	return 0;
}

void thr_observe(struct thr_set *set, const double values[THR__COUNT],
		 unsigned have, const char *where)
{
	struct threshold *t;
	double v;
	unsigned i;
	int worse;

	for (i = 0; i < set->n; i++) {
		t = &set->t[i];
		if (!(have & (1u << t->m)))
			continue;
		v = values[t->m];
		worse = !t->checked || (t->below ? v < t->worst : v > t->worst);
		t->checked++;
		if (worse) {
			t->worst = v;
			snprintf(t->where, sizeof(t->where), "%s", where);
		}
		if (t->below ? v < t->limit : v > t->limit)
			t->failed = 1;
	}
}

unsigned thr_failed(const struct thr_set *set)
{
	unsigned i, n = 0;

	for (i = 0; i < set->n; i++)
		n += set->t[i].failed || !set->t[i].checked;
	return n;
}

/* A value as said back: a latency in the unit that suits its size. */
static double shown(const struct threshold *t, double v, const char **unit)
{
	*unit = thr_unit(t->m);
	if (!((1u << t->m) & LATENCIES) || v < 1e3)
		return v;
	if (v < 1e6) {
		*unit = "us";
		return v / 1e3;
	}
	if (v < 1e9) {
		*unit = "ms";
		return v / 1e6;
	}
	*unit = "s";
	return v / 1e9;
}

/* How far past the limit, in plain digits at every size: "1.46 x",
 * "600 x", "under 0.01 x" (a bandwidth of 94 kb/s against 10 Gb/s is not
 * "9.38e-05 x"). */
static void ratio(double r, char *buf, size_t len)
{
	if (r >= 100)
		snprintf(buf, len, "%.0f x", r);
	else if (r >= 0.01)
		snprintf(buf, len, "%.2f x", r);
	else
		snprintf(buf, len, "under 0.01 x");
}

void thr_line(const struct threshold *t, char *buf, size_t len)
{
	const char *unit;
	double w = shown(t, t->worst, &unit);
	char r[32];

	if (!t->checked) {
		snprintf(buf, len, "--fail-if '%s': failed: no result had %s",
			 t->expr, names[t->m]);
	} else if (t->failed) {
		if (t->limit > 0) {
			ratio(t->worst / t->limit, r, sizeof(r));
			snprintf(buf, len, "--fail-if '%s': failed: %s %s %.2f "
				 "%s, %s the limit", t->expr, t->where,
				 names[t->m], w, unit, r);
		} else
			snprintf(buf, len, "--fail-if '%s': failed: %s %s "
				 "%.2f %s", t->expr, t->where, names[t->m],
				 w, unit);
	} else {
		snprintf(buf, len, "--fail-if '%s': passed (worst: %s %s %.2f "
			 "%s)", t->expr, t->where, names[t->m], w, unit);
	}
}
