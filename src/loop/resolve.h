/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Host names looked up without blocking the loop: c-ares's resolver
 * (resolv.conf's servers, /etc/hosts), its sockets watched by ev_io and
 * its retransmissions by an ev_timer on the engine's loop.  Both engines
 * resolve a name here first and then hand the numeric address to the
 * calls they always made (getaddrinfo, rdma_getaddrinfo), which cannot
 * block on a numeric host.
 */
#ifndef EVR_SRC_LOOP_RESOLVE_H
#define EVR_SRC_LOOP_RESOLVE_H

#include <sys/socket.h>

#include "loop.h"

struct evr__lookup;

/*
 * The answer, always from the loop (never from inside evr__lookup_start):
 * err 0 and the first address (port 0), or a getaddrinfo(3) code
 * (EAI_NONAME for a name that does not exist, EAI_AGAIN when no server
 * answered, EAI_MEMORY ...), so that a failure reads as getaddrinfo's
 * did.  sa is the lookup's own: copy it before freeing the lookup, which
 * the callback may do.
 */
typedef void evr__lookup_cb(void *ud, int err, const struct sockaddr *sa,
			    socklen_t len);

/* Whether host is a numeric address (getaddrinfo with it cannot block):
 * NULL (the wildcard) counts as numeric. */
int evr__host_numeric(const char *host);
/* Look host up (family AF_UNSPEC, AF_INET or AF_INET6): 0 and *out, or
 * -ENOMEM / -EIO (the resolver could not be set up). */
int evr__lookup_start(struct evr__lookup **out, struct evr_loop *loop,
		      const char *host, int family, evr__lookup_cb *cb,
		      void *ud);
/* Cancel (the callback is not called) and free; NULL is allowed. */
void evr__lookup_free(struct evr__lookup *lk);
/* The numeric text of sa's address (no port), for the calls that take a
 * host string. */
int evr__addr_numeric(const struct sockaddr *sa, char *out, size_t len);

#endif
