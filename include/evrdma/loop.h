/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma loop core: one libev loop that evrdma owns, or borrows from the
 * program that embeds it.  Everything evrdma waits for is a watcher on it.
 *
 * The rules every evrdma object follows (man 3 evrdma):
 *
 *  - The host owns the loop.  evrdma adds its watchers to it and removes
 *    them; it never runs, breaks or destroys a borrowed loop, never
 *    installs signal handlers or signal watchers, never prints and never
 *    exits.  Results, progress and failures leave through callbacks.
 *  - Threads: no locks and no global state.  An evr_loop and every
 *    engine on it belong to the thread that runs that ev_loop; call them
 *    only from there.  Separate loops in separate threads are independent
 *    (libev sets process-wide flags in its first ev_loop_new(): make the
 *    first loop before starting threads).
 *  - Callbacks run on the loop's thread, from inside ev_run().  Pointers
 *    they receive (results, failures, strings) are valid only during the
 *    call.  From any callback the host may create, start and cancel
 *    engines; it may free an engine from that engine's done() callback
 *    (done() is its last act, always delivered from the loop, never from
 *    inside an evr_* call) or from any callback of another engine, but
 *    not from one of the engine's own other callbacks (cancel it there,
 *    and free it in done()).
 *  - Struct growth: option, callback and failure structs are filled by
 *    the caller.  Zero-initialise them (memset or "= {0}") and set fields
 *    by name: a new release only appends fields, whose zero value keeps
 *    the old behaviour, so a rebuild is all it takes; a release that grows
 *    one changes libevrdma's soname, so old binaries keep the old library.
 *    Structs evrdma hands to callbacks are read by field; enums only gain
 *    values at their end (a switch over one wants a default case).
 */
#ifndef EVRDMA_LOOP_H
#define EVRDMA_LOOP_H

#include <stdint.h>
#include <sys/socket.h>

#include "evrdma/version.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;
struct evr_loop;

/* Trace sink: state machines report every transition here when set. */
typedef void (*evr_trace_fn)(void *ud, const char *line);

/*
 * Create a loop context in *out.  host == NULL: evrdma creates and owns a
 * new ev_loop (ev_loop_new(), leaving the signal mask alone).  Otherwise
 * it attaches to the host's loop -- any loop, the default one or not --
 * without blocking, running it or taking anything over.  Returns 0 or
 * -ENOMEM.
 */
int evr_loop_new(struct evr_loop **out, struct ev_loop *host);
/* Free the context; free every engine on it first.  A borrowed loop is
 * left alone, an owned one destroyed.  NULL is allowed. */
void evr_loop_free(struct evr_loop *l);
/* The ev_loop underneath, for the host's own watchers. */
struct ev_loop *evr_loop_ev(struct evr_loop *l);
/* ev_run(): until no active watcher is left or evr_loop_break().  For a
 * program that lets evrdma own the loop; a host runs its loop itself. */
void evr_loop_run(struct evr_loop *l);
/* ev_break(EVBREAK_ALL), for the one who runs the loop. */
void evr_loop_break(struct evr_loop *l);
/* Every state machine transition of every engine on this loop is reported
 * to fn (one line, valid during the call) while it is set; NULL stops. */
void evr_loop_set_trace(struct evr_loop *l, evr_trace_fn fn, void *ud);

/*
 * Name lookups on the loop (c-ares: resolv.conf's name servers and
 * /etc/hosts), never blocking it; the engines look their names up here.
 * The loop keeps a table of names: a lookup of a name whose query is
 * under way waits for the same answer, and an answer is kept (and given
 * at once, from the loop) as evr_loop_set_lookups() says.
 *
 * evr_lookup_start(): look host up (family AF_UNSPEC, AF_INET or
 * AF_INET6).  0 and *out, -EINVAL (no host or cb, another family),
 * -ENOMEM, -EIO (the resolver could not be set up).  cb is called once,
 * always from the loop (never from inside evr_lookup_start()): err 0 and
 * the first address (port 0; the resolver's order, RFC 6724's: an rstream
 * client given the name tries the others in turn), or a getaddrinfo(3) code (EAI_NONAME for a
 * name that does not exist, EAI_AGAIN when no name server answered in
 * time, EAI_MEMORY ...).  sa is valid during the call only.  The lookup
 * may be freed in its callback.
 * evr_lookup_free(): cancel (cb is not called) and free; NULL is allowed.
 * The query itself runs on while others wait for it or while an outcome
 * would be kept.
 */
struct evr_lookup;
typedef void (*evr_lookup_fn)(void *ud, int err, const struct sockaddr *sa,
			      socklen_t len);
int evr_lookup_start(struct evr_lookup **out, struct evr_loop *l,
		     const char *host, int family, evr_lookup_fn cb, void *ud);
void evr_lookup_free(struct evr_lookup *lk);

/* How long the loop keeps what a name's query found, and how long the
 * query may take.  All zero (the default) keeps nothing and leaves the
 * time to the resolver (resolv.conf's timeout, two tries). */
struct evr_lookup_opts {
	double cache_s;      /* an address, 0 to EVR_LOOKUP_CACHE_MAX_S */
	double negative_s;   /* a failure (no such name, no answer), the same */
	double timeout_s;    /* no answer by then: EAI_AGAIN; 0: the
			      * resolver's own; at most
			      * EVR_LOOKUP_TIMEOUT_MAX_S */
};
#define EVR_LOOKUP_CACHE_MAX_S 86400.0
#define EVR_LOOKUP_TIMEOUT_MAX_S 600.0
/* Set the options (what was kept is forgotten): 0 or -EINVAL (a value
 * out of its range), -ENOMEM. */
int evr_loop_set_lookups(struct evr_loop *l, const struct evr_lookup_opts *o);

/* The table's counters since the loop was made. */
struct evr_lookup_stats {
	uint64_t queries;    /* queries started (one per name and period) */
	uint64_t hits;       /* lookups answered by a kept outcome or by a
			      * query under way */
	uint64_t failures;   /* queries that found no address */
	uint64_t timeouts;   /* ... of them, no answer by timeout_s */
	unsigned cached;     /* outcomes kept now */
	unsigned pending;    /* queries under way now */
};
void evr_loop_lookup_stats(struct evr_loop *l, struct evr_lookup_stats *st);

/*
 * The RDMA devices this loop's engines have used, as the loop's device
 * registry last saw them: every open device's asynchronous events are
 * read from the loop, each port's state kept, a device that goes away
 * released by every engine on it (and remembered as GONE), and one that
 * comes back noticed (man 3 evr_loop_devices).  The strings are the
 * library's own names, valid as long as the program runs.
 */
#define EVR_DEV_PORTS_MAX 4
#define EVR_DEV_EVENTS_MAX 16
struct evr_dev_info {
	char name[64];              /* "rxe0" */
	char netdev[64];            /* "veth0", or "" (InfiniBand) */
	const char *state;          /* "ACTIVE", "PORT_DOWN" (a port down,
				     * or without a GID yet), "GONE" */
	int in_use;                 /* an engine holds it now */
	unsigned nports;
	struct {
		const char *state;  /* "DOWN", "NO_GID", "ACTIVE" */
		int gids;           /* usable GIDs at the last read */
	} ports[EVR_DEV_PORTS_MAX];
	unsigned nevents;           /* the kinds below, always all */
	struct {
		const char *kind;   /* "port_err", "port_active",
				     * "gid_change", "device_fatal",
				     * "port_other", "async_error",
				     * "removal", "return" */
		uint64_t count;
	} events[EVR_DEV_EVENTS_MAX];
};
/* Fill out[0 .. max) with the loop's devices, in the order they were
 * first seen; returns how many there are (possibly more than max). */
unsigned evr_loop_devices(struct evr_loop *l, struct evr_dev_info *out,
			  unsigned max);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t evr_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
