/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Address resolution as rstream does it: getaddrinfo(3), or
 * rdma_getaddrinfo(3) with -T r / -f gid.  Shared by the transports. */
#ifndef EVR_SRC_ADDR_H
#define EVR_SRC_ADDR_H

#include <sys/socket.h>

#include "evrdma/stream.h"

struct evr_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	int family;
	int valid;
	/* -T r: the path rdma_getaddrinfo found (struct ibv_path_data),
	 * if any; on RoCE there usually is none */
	unsigned char route[256];
	size_t route_len;
};

/* Resolve host:port (host NULL and passive: the wildcard).  The first
 * result is used, as upstream.  Returns 0, or fills f and returns
 * -EVR_E_RESOLVE (f->detail: getaddrinfo code, or -errno) or
 * -EVR_E_NOTSUP. */
int evr__resolve(const struct evr_stream_opts *o, const char *host,
		 const char *port, int passive, struct evr_addr *out,
		 struct evr_failure *f);
/* f as evr__resolve() fills it when host:port did not resolve with
 * getaddrinfo's code (a name looked up on the loop first: stream.c). */
int evr__resolve_failed(struct evr_failure *f,
			const struct evr_stream_opts *o, const char *host,
			const char *port, int code);
/* The index of the first of a[0..n-1] of family, or -1. */
int evr__addr_pick(const struct evr_addr *a, unsigned n, int family);
void evr__sockaddr_str(const struct sockaddr *sa, char *out, size_t len);
/* A server's address with no -b, resolved to IPv4's wildcard (0.0.0.0),
 * which a dual-stack listener serves as IPv6's ([::], its port kept:
 * evr__addr_wildcard6()) */
int evr__addr_is_wildcard4(const struct evr_stream_opts *o,
			   const struct evr_addr *a);
void evr__addr_wildcard6(struct evr_addr *a);
/* -EVR_E_RESOLVE's detail (a getaddrinfo code, all negative) for a
 * link-local IPv6 address given without its interface */
#define EVR__RESOLVE_NO_SCOPE 1
/* A bind of a that failed with err (-errno): f names the address ("addr:
 * port", or the address alone for a client's source, port 0) and, when
 * dst is of another family, both families. */
void evr__bind_failed(struct evr_failure *f, int err,
		      const struct evr_addr *a, const struct evr_addr *dst);

#endif
