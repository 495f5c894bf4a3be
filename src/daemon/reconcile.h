/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * "Keep the unchanged, add the new, drop the rest": the one way a running
 * set (probes, responders, a mesh's peers) becomes the set a new
 * configuration or peers file wants.  The caller owns both sets; the
 * reconciler sees them by index, through ops:
 *
 *   reconcile_plan()    matches each wanted item i to an unchanged
 *                       running one j (same()), and makes the others
 *                       (make(): allocated, not started).  A failed make
 *                       undoes the plan: nothing changed.
 *   reconcile_commit()  keep() for each match, drop() for each running
 *                       one not kept, then start() for each made one:
 *                       the removed go first (a responder's successor
 *                       finds its port free).
 *   reconcile_abort()   unmake() for each made one: nothing changed.
 *
 * Running items are matched by key first (key(): a name; NULL: none,
 * every running item a candidate), so that a mesh of 100000 peers costs
 * n log n, not n^2; of equal keys, the first not yet kept that same()
 * accepts.  No loop, no I/O: unit-tested by check_probed.
 */
#ifndef EVR_PROBED_RECONCILE_H
#define EVR_PROBED_RECONCILE_H

#include <stddef.h>

/* make()'s "not made, go on": the wanted item stays empty (counted in
 * failed), the rest of the plan goes on */
#define RECONCILE_SKIP 1

struct reconcile_ops {
	/* what running item j (old 1) or wanted item i (old 0) is found
	 * by, a string that stays until the plan is made; NULL: no key */
	const char *(*key)(void *ud, int old, size_t i);
	/* running item j can go on as wanted item i, unchanged */
	int (*same)(void *ud, size_t j, size_t i);
	/* wanted item i made, not started: 0, RECONCILE_SKIP, or a
	 * negative errno (the plan fails) */
	int (*make)(void *ud, size_t i);
	/* a made one freed (the plan undone); NULL: nothing to free */
	void (*unmake)(void *ud, size_t i);
	/* running item j goes on as wanted item i */
	void (*keep)(void *ud, size_t j, size_t i);
	/* running item j is not wanted: stop and free it */
	void (*drop)(void *ud, size_t j);
	/* wanted item i was made: start it; NULL: nothing to do */
	void (*start)(void *ud, size_t i);
};

/* A plan, between reconcile_plan() and its commit or abort. */
struct reconcile {
	const struct reconcile_ops *ops;
	void *ud;
	size_t nold, nnew;
	size_t *from;               /* per wanted item: its running one,
				     * or RECONCILE_MADE, RECONCILE_NONE */
	unsigned char *kept;        /* per running item */
	size_t kept_n, added, removed, failed;
};

#define RECONCILE_MADE ((size_t)-1)
#define RECONCILE_NONE ((size_t)-2)  /* RECONCILE_SKIP */

/* Match and make; 0, or a negative errno with nothing changed (rc
 * empty: no commit or abort to call). */
int reconcile_plan(struct reconcile *rc, size_t nold, size_t nnew,
		   const struct reconcile_ops *ops, void *ud);
void reconcile_commit(struct reconcile *rc);
void reconcile_abort(struct reconcile *rc);

#endif
