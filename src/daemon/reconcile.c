/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The reconciler (reconcile.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"

struct keyed {
	const char *key;
	size_t j;
};

static int by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->j > y->j) - (x->j < y->j);
}

static const char *key_of(const struct reconcile *rc, int old, size_t i)
{
	const char *k = rc->ops->key ? rc->ops->key(rc->ud, old, i) : NULL;

	return k ? k : "";
}

static void plan_free(struct reconcile *rc)
{
	free(rc->from);
	free(rc->kept);
	memset(rc, 0, sizeof(*rc));
}

/* The first running item of key k not kept yet that can be wanted item
 * i, or nold: the sorted run of k in s[n]. */
static size_t match(struct reconcile *rc, const struct keyed *s, size_t n,
		    const char *k, size_t i)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first of s >= k */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(s[mid].key, k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !strcmp(s[lo].key, k); lo++)
		if (!rc->kept[s[lo].j] && rc->ops->same(rc->ud, s[lo].j, i))
			return s[lo].j;
	return rc->nold;
}

int reconcile_plan(struct reconcile *rc, size_t nold, size_t nnew,
		   const struct reconcile_ops *ops, void *ud)
{
	struct keyed *s;
	size_t i, j;
	int r = 0;

	memset(rc, 0, sizeof(*rc));
	rc->ops = ops;
	rc->ud = ud;
	rc->nold = nold;
	rc->nnew = nnew;
	rc->from = calloc(nnew + 1, sizeof(*rc->from));
	rc->kept = calloc(nold + 1, 1);
	s = malloc((nold + 1) * sizeof(*s));
	if (!rc->from || !rc->kept || !s) {
		free(s);
		plan_free(rc);
		return -ENOMEM;
	}
	for (j = 0; j < nold; j++) {
		s[j].key = key_of(rc, 1, j);
		s[j].j = j;
	}
	qsort(s, nold, sizeof(*s), by_key);
	for (i = 0; i < nnew; i++) {
		j = match(rc, s, nold, key_of(rc, 0, i), i);
		if (j < nold) {
			rc->kept[j] = 1;
			rc->from[i] = j;
			rc->kept_n++;
			continue;
		}
		rc->from[i] = RECONCILE_NONE;
		r = ops->make(ud, i);
		if (r < 0)
			break;
		if (r == RECONCILE_SKIP) {
			rc->failed++;
			r = 0;
			continue;
		}
		rc->from[i] = RECONCILE_MADE;
		rc->added++;
	}
	free(s);
	if (r < 0) {
		rc->nnew = i; /* the made ones, before the failed one */
		reconcile_abort(rc);
		return r;
	}
	rc->removed = nold - rc->kept_n;
	return 0;
}

void reconcile_commit(struct reconcile *rc)
{
	const struct reconcile_ops *ops = rc->ops;
	size_t i, j;

	for (i = 0; i < rc->nnew; i++)
		if (rc->from[i] < rc->nold)
			ops->keep(rc->ud, rc->from[i], i);
	for (j = 0; j < rc->nold; j++)
		if (!rc->kept[j])
			ops->drop(rc->ud, j);
	for (i = 0; ops->start && i < rc->nnew; i++)
		if (rc->from[i] == RECONCILE_MADE)
			ops->start(rc->ud, i);
	/* the counts stay for the caller's log */
	free(rc->from);
	free(rc->kept);
	rc->from = NULL;
	rc->kept = NULL;
}

void reconcile_abort(struct reconcile *rc)
{
	size_t i;

	for (i = 0; rc->ops && rc->ops->unmake && i < rc->nnew; i++)
		if (rc->from[i] == RECONCILE_MADE)
			rc->ops->unmake(rc->ud, i);
	plan_free(rc);
}
