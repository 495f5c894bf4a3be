/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Internal side of the loop core. */
#ifndef EVR_SRC_LOOP_H
#define EVR_SRC_LOOP_H

#include <ev.h>
#include <stddef.h>
#include <stdarg.h>

#include "evrdma/loop.h"

#define evr__container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define EVR__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct evr_loop {
	struct ev_loop *ev;
	int owned;
	evr_trace_fn trace;
	void *trace_ud;
	unsigned spinning;      /* sessions retrying from an idle watcher */
};

/* fd helpers: return 0 or a negative errno. */
int evr__fd_set_nonblock(int fd, int on);
int evr__fd_set_cloexec(int fd);

/* printf-style trace line; does nothing unless a trace sink is set. */
void evr__trace(struct evr_loop *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int evr__tracing(const struct evr_loop *l)
{
	return l->trace != NULL;
}

#endif
