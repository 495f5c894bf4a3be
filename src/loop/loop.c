/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

/* The loop's life: made or borrowed, run, broken, freed with what it
 * owns (its device registry, its name lookups).  The helpers every file
 * of the loop layer and above uses are base.c's, which calls nothing of
 * evrdma's: the files below this one (device.c, resolve.c) use those,
 * never this one. */

#include <errno.h>
#include <stdlib.h>

#include "device.h"
#include "loop.h"
#include "resolve.h"

int evr_loop_new(struct evr_loop **out, struct ev_loop *host)
{
	struct evr_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	if (host) {
		l->ev = host;
	} else {
		/* EVFLAG_NOSIGMASK: leave the host's signal mask alone. */
		l->ev = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
		if (!l->ev) {
			free(l);
			return -ENOMEM;
		}
		l->owned = 1;
	}
	*out = l;
	return 0;
}

void evr_loop_free(struct evr_loop *l)
{
	if (!l)
		return;
	evr__lookups_fini(l);
	evr__devreg_free(l);
	if (l->owned)
		ev_loop_destroy(l->ev);
	free(l);
}

struct ev_loop *evr_loop_ev(struct evr_loop *l)
{
	return l->ev;
}

void evr_loop_run(struct evr_loop *l)
{
	ev_run(l->ev, 0);
}

void evr_loop_break(struct evr_loop *l)
{
	ev_break(l->ev, EVBREAK_ALL);
}

void evr_loop_set_trace(struct evr_loop *l, evr_trace_fn fn, void *ud)
{
	l->trace = fn;
	l->trace_ud = ud;
}
