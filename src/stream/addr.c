/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "../loop/loop.h"
#include "../loop/resolve.h"

void evr__sockaddr_str(const struct sockaddr *sa, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		char scope[IF_NAMESIZE + 2] = "";

		/* an IPv4 peer of a dual-stack listener, as IPv4 */
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host,
				  sizeof(host));
			snprintf(out, len, "%s:%u", host,
				 ntohs(in6->sin6_port));
			return;
		}
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		/* a scoped address (link-local) keeps its interface, as
		 * the user wrote it: fe80::1%eth0 */
		if (in6->sin6_scope_id) {
			char ifn[IF_NAMESIZE];

			if (if_indextoname(in6->sin6_scope_id, ifn))
				snprintf(scope, sizeof(scope), "%%%s", ifn);
			else
				snprintf(scope, sizeof(scope), "%%%u",
					 (unsigned)in6->sin6_scope_id);
		}
		snprintf(out, len, "[%s%s]:%u", host, scope,
			 ntohs(in6->sin6_port));
	} else if (sa->sa_family == AF_IB) {
		const struct sockaddr_ib *ib = (const void *)sa;

		/* a GID, and the port in the low bits of the service ID */
		inet_ntop(AF_INET6, &ib->sib_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host,
			 (unsigned)(be64toh(ib->sib_sid) & 0xffff));
	} else {
		snprintf(out, len, "(family %d)", sa->sa_family);
	}
}

void evr__bind_failed(struct evr_failure *f, int err,
		      const struct evr_addr *a, const struct evr_addr *dst)
{
	char s[80], d[80];
	size_t n;

	f->err = err;
	f->where = "bind";
	evr__sockaddr_str((const struct sockaddr *)&a->ss, s, sizeof(s));
	n = strlen(s);
	if (n > 2 && !strcmp(s + n - 2, ":0")) {
		/* a source address: no port of its own */
		s[n - 2] = '\0';
		if (s[0] == '[' && s[n - 3] == ']') {
			memmove(s, s + 1, n - 4);
			s[n - 4] = '\0';
		}
	}
	if (dst && dst->family != a->family) {
		evr__sockaddr_str((const struct sockaddr *)&dst->ss, d,
				  sizeof(d));
		/* whatever the kernel said (EINVAL, EAFNOSUPPORT), the
		 * cause is this; a line cut at the end still says it */
		f->err = -EAFNOSUPPORT;
		if (snprintf(f->addr, sizeof(f->addr), "%s (%s) for %s (%s)",
			     s, evr__family_name(a->family), d,
			     evr__family_name(dst->family)) >= (int)sizeof(f->addr))
			f->addr[sizeof(f->addr) - 1] = '\0';
	} else {
		snprintf(f->addr, sizeof(f->addr), "%s", s);
	}
}

static int take(struct evr_addr *out, const struct sockaddr *sa,
		socklen_t len)
{
	if (!sa || !len || len > sizeof(out->ss))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(&out->ss, sa, len);
	out->len = len;
	out->family = sa->sa_family;
	out->valid = 1;
	return 0;
}

static int resolve_fail(struct evr_failure *f, const char *fn,
			const char *host, const char *port, int code, int err)
{
	f->err = -EVR_E_RESOLVE;
	f->phase = EVR_PH_SETUP;
	f->detail = code;
	f->sys_err = code == EAI_SYSTEM ? err : 0;
	f->where = fn;
	snprintf(f->addr, sizeof(f->addr), "%s port %s",
		 host ? host : "(any)", port ? port : "-");
	return f->err;
}

int evr__resolve_failed(struct evr_failure *f,
			const struct evr_stream_opts *o, const char *host,
			const char *port, int code)
{
	return resolve_fail(f, o->resolve_rdma || o->addr_fmt == EVR_ADDR_GID ?
			    "rdma_getaddrinfo" : "getaddrinfo", host, port,
			    code, 0);
}

int evr__addr_pick(const struct evr_addr *a, unsigned n, int family)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (a[i].family == family)
			return (int)i;
	return -1;
}

int evr__addr_is_wildcard4(const struct evr_stream_opts *o,
			   const struct evr_addr *a)
{
	const struct sockaddr_in *in = (const void *)&a->ss;

	return !o->bind_addr && a->family == AF_INET &&
	       in->sin_addr.s_addr == htonl(INADDR_ANY);
}

void evr__addr_wildcard6(struct evr_addr *a)
{
	struct sockaddr_in6 s6;

	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = ((const struct sockaddr_in *)&a->ss)->sin_port;
	s6.sin6_addr = in6addr_any;
	memset(&a->ss, 0, sizeof(a->ss));
	memcpy(&a->ss, &s6, sizeof(s6));
	a->len = sizeof(s6);
	a->family = AF_INET6;
}

/* A link-local IPv6 address without its interface, which bind and
 * connect refuse with a bare EINVAL: said as such (failure.c). */
static int scope_check(const struct evr_addr *a, const char *host,
		       const char *port, struct evr_failure *f)
{
	if (!evr__addr_scope_missing((const struct sockaddr *)&a->ss))
		return 0;
	resolve_fail(f, "scope", host, port, 0, 0);
	f->detail = EVR__RESOLVE_NO_SCOPE;
	snprintf(f->addr, sizeof(f->addr), "%s", host ? host : "");
	return f->err;
}

static int resolve_rdma(const struct evr_stream_opts *o, const char *host,
			const char *port, int passive, struct evr_addr *out,
			struct evr_failure *f)
{
	struct rdma_addrinfo hints, *res = NULL;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags |= RAI_PASSIVE;
	if (o->addr_fmt == EVR_ADDR_GID) {
		hints.ai_flags |= RAI_NUMERICHOST | RAI_FAMILY;
		hints.ai_family = AF_IB;
	} else if (o->addr_fmt == EVR_ADDR_IPV6) {
		hints.ai_flags |= RAI_FAMILY;
		hints.ai_family = AF_INET6;
	}
	/* -f ip (and ipv6) do not make -T r numeric: upstream sets its
	 * numeric flag on getaddrinfo's hints only, so names resolve. */
	errno = 0;
	ret = rdma_getaddrinfo(host, port, &hints, &res);
	if (ret) {
		/* librdmacm returns -1 and sets errno, or a getaddrinfo code */
		return resolve_fail(f, "rdma_getaddrinfo", host, port,
				    ret == -1 ? EAI_SYSTEM : ret,
				    errno ? errno : ENODEV);
	}
	ret = passive ? take(out, res->ai_src_addr, res->ai_src_len) :
			take(out, res->ai_dst_addr, res->ai_dst_len);
	if (!ret && !passive && res->ai_route && res->ai_route_len &&
	    res->ai_route_len <= sizeof(out->route)) {
		memcpy(out->route, res->ai_route, res->ai_route_len);
		out->route_len = res->ai_route_len;
	}
	rdma_freeaddrinfo(res);
	if (ret)
		return resolve_fail(f, "rdma_getaddrinfo", host, port,
				    EAI_NONAME, 0);
	return scope_check(out, host, port, f);
}

int evr__resolve(const struct evr_stream_opts *o, const char *host,
		 const char *port, int passive, struct evr_addr *out,
		 struct evr_failure *f)
{
	struct addrinfo hints, *res;
	int ret;

	if (o->resolve_rdma || o->addr_fmt == EVR_ADDR_GID)
		return resolve_rdma(o, host, port, passive, out, f);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	if (o->addr_fmt == EVR_ADDR_IP || o->addr_fmt == EVR_ADDR_IPV6)
		hints.ai_flags |= AI_NUMERICHOST;
	if (o->addr_fmt == EVR_ADDR_IPV6)
		hints.ai_family = AF_INET6;
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret)
		return resolve_fail(f, "getaddrinfo", host, port, ret, errno);
	take(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return scope_check(out, host, port, f);
}
