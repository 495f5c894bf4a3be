/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Host names looked up without blocking the loop: c-ares's resolver
 * (resolv.conf's servers, /etc/hosts), its sockets watched by ev_io and
 * its retransmissions by an ev_timer on the engine's loop.  Both engines
 * resolve a name here first (evr_lookup_start(), include/evrdma/loop.h)
 * and then hand the numeric address to the calls they always made
 * (getaddrinfo, rdma_getaddrinfo), which cannot block on a numeric host.
 * The loop keeps a table of names: one query per name at a time, shared
 * by every lookup of it, and its outcome kept as evr_loop_set_lookups()
 * says (by default not at all).
 */
#ifndef EVR_SRC_LOOP_RESOLVE_H
#define EVR_SRC_LOOP_RESOLVE_H

#include <sys/socket.h>

#include "loop.h"

/*
 * A name's addresses, in the resolver's order (c-ares's: RFC 6724 for
 * DNS, the file's for /etc/hosts), each once, IPv4 and IPv6 only, at
 * most EVR__LOOKUP_MAX of them.  A client tries them in turn.
 */
#define EVR__LOOKUP_MAX 8
struct evr__addrs {
	unsigned n;
	struct sockaddr_storage ss[EVR__LOOKUP_MAX];
	socklen_t len[EVR__LOOKUP_MAX];
};

/* Append sa to a unless a has it already, it is of another family or a
 * is full: 1 when appended, else 0. */
int evr__addrs_add(struct evr__addrs *a, const struct sockaddr *sa,
		   socklen_t len);
/* The index of a's first address of family, or -1. */
int evr__addrs_pick(const struct evr__addrs *a, int family);
/* During a lookup's callback (evr_lookup_fn, whose sa is the first):
 * every address of the answer (none when it failed); their count. */
struct evr_lookup;
unsigned evr__lookup_addrs(const struct evr_lookup *lk,
			   const struct evr__addrs **out);

/* Whether host is a numeric address (getaddrinfo with it cannot block):
 * NULL (the wildcard) counts as numeric. */
int evr__host_numeric(const char *host);
/* evr_loop_free(): every entry of the loop's table goes (the lookups on
 * it are gone with their engines). */
void evr__lookups_fini(struct evr_loop *l);
/* The numeric text of sa's address (no port), for the calls that take a
 * host string. */
int evr__addr_numeric(const struct sockaddr *sa, char *out, size_t len);
/* Is sa an IPv6 link-local unicast address (fe80::/10) without its
 * interface (scope id 0)?  The kernel refuses it (EINVAL) in bind and
 * connect: both engines say so instead, naming the address. */
int evr__addr_scope_missing(const struct sockaddr *sa);

#endif
