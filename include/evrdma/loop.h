/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma loop core: one libev loop that evrdma owns, or borrows from the
 * program that embeds it.  Everything evrdma waits for is a watcher on it.
 */
#ifndef EVRDMA_LOOP_H
#define EVRDMA_LOOP_H

#include <stdint.h>

#include "evrdma/version.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;
struct evr_loop;

/* Trace sink: state machines report every transition here when set. */
typedef void (*evr_trace_fn)(void *ud, const char *line);

/*
 * Create a loop context.  host == NULL: evrdma creates and owns a new
 * ev_loop.  Otherwise it attaches to the caller's loop and never destroys it.
 * Returns 0 or a negative errno.
 */
int evr_loop_new(struct evr_loop **out, struct ev_loop *host);
void evr_loop_free(struct evr_loop *l);
struct ev_loop *evr_loop_ev(struct evr_loop *l);
/* Run until no active watcher is left or evr_loop_break() is called. */
void evr_loop_run(struct evr_loop *l);
void evr_loop_break(struct evr_loop *l);
void evr_loop_set_trace(struct evr_loop *l, evr_trace_fn fn, void *ud);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t evr_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
