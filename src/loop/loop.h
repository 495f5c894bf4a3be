/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Internal side of the loop core. */
#ifndef EVR_SRC_LOOP_H
#define EVR_SRC_LOOP_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#include "evrdma/loop.h"

#define evr__container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define EVR__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Off the hot path: a function only --trace or a failure calls, kept out
 * of line so that its caller can be inlined into the data path. */
#define EVR__COLD __attribute__((cold, noinline))
/* On every transfer's path, called from several places: inlined in each
 * (a call's prologue and epilogue cost more than its body). */
#define EVR__HOT_INLINE inline __attribute__((always_inline))

/* Every state machine lists its states once, as an X-macro of X(NAME):
 * the enum and the names traced come from that list.
 *   static const char *const names[] = EVR__STATE_NAMES(EVR_SESS_STATES);
 *   return EVR__NAME_AT(names, s);     (a name, or "?" outside the list) */
#define EVR__STATE_NAME_X(s) #s,
#define EVR__STATE_NAMES(list) { list(EVR__STATE_NAME_X) }
#define EVR__NAME_AT(names, i) \
	((unsigned)(i) < EVR__ARRAY_SIZE(names) ? (names)[i] : "?")

struct evr_loop {
	struct ev_loop *ev;
	int owned;
	evr_trace_fn trace;
	void *trace_ud;
	/* the stream scheduler's state (src/stream/session/sched.h), while
	 * a connection is in play; the loop only holds it */
	struct evr_sched *sched;
	struct evr__lookups *lookups; /* names (resolve.c), at first use */
	struct evr__devreg *devreg;   /* RDMA devices (device.c), at first
				       * use */
};

/* Call an embedder's callback, if it is set, counted in depth: an engine
 * that knows it is inside one of its callbacks defers what must not
 * happen there (done(), freeing) to the loop. */
#define EVR__UPCALL(depth, cb, ...) \
	do { \
		if (cb) { \
			(depth)++; \
			(cb)(__VA_ARGS__); \
			(depth)--; \
		} \
	} while (0)

/* Small services the engines share.  strdup(s), or NULL for NULL. */
char *evr__strdup_or_null(const char *s);
/* "IPv4", "IPv6", "AF_IB" or "another family", for messages. */
const char *evr__family_name(int family);
/* setsockopt() of an int: 0 or a negative errno. */
int evr__setsockopt_int(int fd, int level, int name, int val);
/* (Re)arm a one-shot timer secs from now; secs <= 0 only stops it. */
void evr__timer_restart(struct ev_loop *l, ev_timer *w, double secs);
/* (Re)start w to fire every secs from now (a pace; secs <= 0 only stops
 * it): its callback stays. */
void evr__timer_every(struct ev_loop *l, ev_timer *w, double secs);

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
