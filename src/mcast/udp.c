/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel UDP/IP multicast transport: the same lifecycle as mckey's
 * (resolve, join, settle, send or receive, leave) on hosts without RDMA,
 * and a baseline to compare RDMA multicast with.  Each "QP" is a UDP
 * socket; receivers join with IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mc.h"

#define UDP_MAX_PAYLOAD 65507u

struct ueng {
	struct sockaddr_storage src, dst;
	socklen_t dst_len;
	int have_src;
	unsigned ifindex;         /* IPv6: the interface of -b */
	uint32_t sender_base;
};

struct unode {
	int fd;
	int member;
	ev_io io_w;
	ev_idle comp_w;           /* delivers send completions */
	uint64_t pending;         /* sends done, completions not delivered */
	uint8_t *buf;
	size_t buflen;
	struct evr_mc_node *n;
};

static struct ueng *ueng(struct evr_mcast *m)
{
	return m->xp;
}

static struct unode *un(struct evr_mc_node *n)
{
	return n->xp;
}

static int u_engine_init(struct evr_mcast *m)
{
	struct ueng *e = calloc(1, sizeof(*e));

	if (!e) {
		EVR__MC_FAIL(m, .status = 1, .code = -ENOMEM,
			     .msg = "mckey: unable to allocate memory");
		return -1;
	}
	m->xp = e;
	e->sender_base = evr__mc_sender_base();
	return 0;
}

static void u_engine_fini(struct evr_mcast *m)
{
	free(m->xp);
	m->xp = NULL;
}

static void io_cb(struct ev_loop *l, ev_io *w, int revents);
static void comp_cb(struct ev_loop *l, ev_idle *w, int revents);

static int u_node_init(struct evr_mc_node *n)
{
	struct unode *u = calloc(1, sizeof(*u));

	if (!u) {
		EVR__MC_FAIL(n->mc, .qp = n->index, .status = 1,
			     .code = -ENOMEM,
			     .msg = "mckey: unable to allocate memory for test nodes");
		return -1;
	}
	u->fd = -1;
	u->n = n;
	ev_init(&u->io_w, io_cb);
	ev_idle_init(&u->comp_w, comp_cb);
	n->xp = u;
	return 0;
}

/* The interface that carries a local address (IPv6 joins need it). */
static unsigned ifindex_of(const struct sockaddr_storage *ss)
{
	struct ifaddrs *ifa, *i;
	unsigned idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET6 &&
		    !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			    &((const struct sockaddr_in6 *)ss)->sin6_addr, 16))
			idx = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifa);
	return idx;
}

static int u_prepare(struct evr_mcast *m)
{
	struct ueng *e = ueng(m);
	char d[160];

	if (m->o.unmapped) {
		/* evrdma's own checks say so on stderr (a detail), where
		 * upstream's bare lines go to stdout */
		EVR__MC_FAIL(m, .status = -EINVAL, .code = -EVR_E_NOTSUP,
			     .msg = "mckey: invalid options",
			     .detail = "an AF_IB group (opts.unmapped) needs "
				       "the RDMA transport");
		return -1;
	}
	if (m->o.bind_addr) {
		if (evr__mc_get_addr(m, m->o.bind_addr, &e->src, NULL))
			return -1;
		e->have_src = 1;
	}
	if (evr__mc_get_addr(m, m->o.group, &e->dst, &e->dst_len))
		return -1;
	if (e->dst.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&e->dst;

		in->sin_port = htons(m->o.udp_port);
		if (!IN_MULTICAST(ntohl(in->sin_addr.s_addr))) {
			snprintf(d, sizeof(d), "%s is not a multicast "
				 "address", m->o.group);
			EVR__MC_FAIL(m, .status = -EINVAL,
				     .msg = "mckey: invalid group",
				     .detail = d);
			return -1;
		}
	} else if (e->dst.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&e->dst;

		in6->sin6_port = htons(m->o.udp_port);
		if (!IN6_IS_ADDR_MULTICAST(&in6->sin6_addr)) {
			snprintf(d, sizeof(d), "%s is not a multicast "
				 "address", m->o.group);
			EVR__MC_FAIL(m, .status = -EINVAL,
				     .msg = "mckey: invalid group",
				     .detail = d);
			return -1;
		}
		if (e->have_src)
			e->ifindex = ifindex_of(&e->src);
		/* Link- and interface-local groups need their interface named
		 * in the address itself, for bind() and sendto() alike. */
		if ((IN6_IS_ADDR_MC_LINKLOCAL(&in6->sin6_addr) ||
		     IN6_IS_ADDR_MC_NODELOCAL(&in6->sin6_addr)) &&
		    !in6->sin6_scope_id)
			in6->sin6_scope_id = e->ifindex;
	}
	if (e->have_src && e->src.ss_family != e->dst.ss_family) {
		snprintf(d, sizeof(d), "%s (%s) for group %s (%s)",
			 m->o.bind_addr, evr__family_name(e->src.ss_family),
			 m->o.group, evr__family_name(e->dst.ss_family));
		EVR__MC_FAIL(m, .status = -EINVAL,
			     .msg = "mckey: addr bind failure",
			     .sys_errno = EAFNOSUPPORT, .detail = d);
		return -1;
	}
	return 0;
}

static int u_resolve(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct ueng *e = ueng(m);
	struct unode *u = un(n);
	int v6 = e->dst.ss_family == AF_INET6;

	u->fd = socket(e->dst.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: socket", .sys_errno = errno);
		return -1;
	}
	if (m->o.sender) {
		/* send from the -b address, out of its interface */
		if (e->have_src) {
			if (bind(u->fd, (struct sockaddr *)&e->src,
				 v6 ? sizeof(struct sockaddr_in6) :
				      sizeof(struct sockaddr_in))) {
				EVR__MC_FAIL(m, .qp = n->index, .status = -1,
					     .msg = "mckey: addr bind failure",
					     .sys_errno = errno,
					     .detail = m->o.bind_addr);
				return -1;
			}
			if (!v6)
				setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_IF,
					   &((struct sockaddr_in *)&e->src)->sin_addr,
					   sizeof(struct in_addr));
			else if (e->ifindex)
				(void)evr__setsockopt_int(u->fd, IPPROTO_IPV6,
							  IPV6_MULTICAST_IF,
							  (int)e->ifindex);
		}
		/* best effort, as upstream: a kernel without one still sends */
		(void)evr__setsockopt_int(u->fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
					  v6 ? IPV6_MULTICAST_LOOP :
					       IP_MULTICAST_LOOP,
					  !m->o.no_loopback);
		(void)evr__setsockopt_int(u->fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
					  v6 ? IPV6_MULTICAST_HOPS :
					       IP_MULTICAST_TTL, 1);
	} else {
		/* every receiving socket gets its own copy of each datagram */
		(void)evr__setsockopt_int(u->fd, SOL_SOCKET, SO_REUSEADDR, 1);
		(void)evr__setsockopt_int(u->fd, SOL_SOCKET, SO_REUSEPORT, 1);
		(void)evr__setsockopt_int(u->fd, SOL_SOCKET, SO_RCVBUF,
					  4 << 20);
		if (bind(u->fd, (struct sockaddr *)&e->dst, e->dst_len)) {
			char d[160];
			int err = errno;

			snprintf(d, sizeof(d), "group %s port %u", m->o.group,
				 m->o.udp_port);
			EVR__MC_FAIL(m, .qp = n->index, .status = -1,
				     .msg = "mckey: addr bind failure",
				     .sys_errno = err, .detail = d);
			return -1;
		}
	}
	return 1;
}

static int u_setup(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct unode *u = un(n);
	char d[160];

	if (m->o.count && m->o.size > UDP_MAX_PAYLOAD) {
		snprintf(d, sizeof(d), "message_size %u is larger than "
			 "the UDP maximum %u", m->o.size, UDP_MAX_PAYLOAD);
		EVR__MC_FAIL(m, .qp = n->index, .status = -EINVAL,
			     .msg = "mckey: invalid size", .detail = d);
		return -1;
	}
	u->buflen = m->o.size > EVR_MC_HDR_LEN ? m->o.size : EVR_MC_HDR_LEN;
	if (!m->o.sender)
		u->buflen = UDP_MAX_PAYLOAD;
	u->buf = malloc(u->buflen);
	if (!u->buf) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1, .code = -ENOMEM,
			     .msg = "failed message allocation");
		return -1;
	}
	if (!m->o.sender) {
		ev_io_set(&u->io_w, u->fd, EV_READ);
		ev_io_start(m->loop->ev, &u->io_w);
	}
	return 0;
}

static int membership(struct evr_mc_node *n, int join)
{
	struct ueng *e = ueng(n->mc);
	struct unode *u = un(n);

	if (e->dst.ss_family == AF_INET) {
		struct ip_mreqn mr;

		memset(&mr, 0, sizeof(mr));
		mr.imr_multiaddr = ((struct sockaddr_in *)&e->dst)->sin_addr;
		if (e->have_src)
			mr.imr_address =
				((struct sockaddr_in *)&e->src)->sin_addr;
		return setsockopt(u->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP :
				  IP_DROP_MEMBERSHIP, &mr, sizeof(mr));
	} else {
		struct ipv6_mreq mr;

		memset(&mr, 0, sizeof(mr));
		mr.ipv6mr_multiaddr =
			((struct sockaddr_in6 *)&e->dst)->sin6_addr;
		mr.ipv6mr_interface = e->ifindex;
		return setsockopt(u->fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP :
				  IPV6_LEAVE_GROUP, &mr, sizeof(mr));
	}
}

static int u_join(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct ueng *e = ueng(m);
	struct unode *u = un(n);
	struct evr_mc_joined j;

	/* A sender needs no membership to send (like -o on RDMA). */
	if (!m->o.sender && !m->o.sendonly) {
		if (membership(n, 1)) {
			char d[160];
			int err = errno;

			if (e->have_src)
				snprintf(d, sizeof(d), "%s on the interface of "
					 "%s", m->o.group, m->o.bind_addr);
			else
				snprintf(d, sizeof(d), "%s", m->o.group);
			EVR__MC_FAIL(m, .qp = n->index, .status = -1,
				     .msg = "mckey: failure joining",
				     .sys_errno = err, .detail = d);
			return -1;
		}
		u->member = 1;
	}
	memset(&j, 0, sizeof(j));
	j.qp = n->index;
	if (e->dst.ss_family == AF_INET) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &((struct sockaddr_in *)&e->dst)->sin_addr,
			  a, sizeof(a));
		snprintf(j.dgid, sizeof(j.dgid), "::ffff:%s", a);
	} else {
		inet_ntop(AF_INET6,
			  &((struct sockaddr_in6 *)&e->dst)->sin6_addr, j.dgid,
			  sizeof(j.dgid));
	}
	j.join_ns = evr_now_ns() - n->join_t0;
	evr__mc_joined(m, &j);
	return 1;
}

static void comp_cb(struct ev_loop *l, ev_idle *w, int revents)
{
	struct unode *u = evr__container_of(w, struct unode, comp_w);
	struct evr_mc_node *n = u->n;

	ev_idle_stop(l, w);
	while (n->xp && u->pending && n->state == EVR_MC_RUNNING) {
		u->pending--;
		evr__mc_node_event(n, EVR_MCE_SEND_COMP, 0);
	}
}

static int u_send(struct evr_mc_node *n, uint32_t seq)
{
	struct evr_mcast *m = n->mc;
	struct ueng *e = ueng(m);
	struct unode *u = un(n);
	struct evr_mc_hdr h = {
		.sender = e->sender_base | n->index,
		.seq = seq,
		.count = m->o.count,
	};
	ssize_t r;

	evr__mc_payload_encode(u->buf, m->o.size, &h);
	r = sendto(u->fd, u->buf, m->o.size, 0, (struct sockaddr *)&e->dst,
		   e->dst_len);
	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == ENOBUFS) {
			/* wait until the socket can take more */
			ev_io_stop(m->loop->ev, &u->io_w);
			ev_io_set(&u->io_w, u->fd, EV_WRITE);
			ev_io_start(m->loop->ev, &u->io_w);
			return -EAGAIN;
		}
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: sendto", .sys_errno = errno);
		return -1;
	}
	/* A datagram handed to the kernel is complete; tell the machine
	 * from the loop, not from inside its own send. */
	u->pending++;
	ev_idle_start(m->loop->ev, &u->comp_w);
	return 0;
}

static void io_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct unode *u = evr__container_of(w, struct unode, io_w);
	struct evr_mc_node *n = u->n;
	unsigned budget = 256;

	if (revents & EV_WRITE) {
		ev_io_stop(l, w);
		evr__mc_node_event(n, EVR_MCE_SEND_SLOT, 0);
		return;
	}
	if (n->state == EVR_MC_DONE || n->state == EVR_MC_FAILED) {
		/* Done with this QP: more datagrams may keep coming, and a
		 * readable socket nobody reads would spin the loop. */
		ev_io_stop(l, w);
		return;
	}
	while (budget-- && n->xp && n->state != EVR_MC_DONE &&
	       n->state != EVR_MC_FAILED) {
		ssize_t r = recv(u->fd, u->buf, u->buflen, 0);

		if (r < 0)
			return;
		evr__mc_acct_add(&n->acct, u->buf, (size_t)r);
		evr__mc_node_event(n, EVR_MCE_RECV_COMP, 0);
	}
}

static int u_leave(struct evr_mc_node *n)
{
	struct unode *u = un(n);

	if (u->member) {
		u->member = 0;
		if (membership(n, 0)) {
			EVR__MC_FAIL(n->mc, .qp = n->index, .status = -1,
				     .msg = "mckey: failure leaving",
				     .sys_errno = errno);
			return -1;
		}
	}
	return 0;
}

static void u_node_fini(struct evr_mc_node *n)
{
	struct unode *u = un(n);

	if (!u)
		return;
	ev_io_stop(n->mc->loop->ev, &u->io_w);
	ev_idle_stop(n->mc->loop->ev, &u->comp_w);
	if (u->fd >= 0)
		close(u->fd);
	free(u->buf);
	free(u);
	n->xp = NULL;
}

unsigned evr__mc_udp_settings(const struct evr_mcast_opts *o,
			      struct evr_setting *rows, unsigned max)
{
	if (!max)
		return 0;
	rows[0] = (struct evr_setting){ .key = "udp_port", .word = "udp_port",
					.value = o->udp_port };
	return 1;
}

const struct evr_mc_xport evr__mc_udp_xport = {
	.engine_init = u_engine_init,
	.engine_fini = u_engine_fini,
	.node_init = u_node_init,
	.prepare = u_prepare,
	.resolve = u_resolve,
	.setup = u_setup,
	.join = u_join,
	.send = u_send,
	.leave = u_leave,
	.node_fini = u_node_fini,
};
