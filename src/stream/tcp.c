/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../loop/loop.h"
#include "tcp.h"

struct tcp_conn {
	struct evr_conn base;
	int recv_flags;
};

static int setint(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

int evr__tcp_set_options(const struct evr_stream_opts *o, int fd,
			 int *ka_on, int *ka_idle)
{
	int bs = o->buffer_size ? o->buffer_size : 1 << 19;
	int ret;

	/* Like upstream, buffer sizes and NODELAY are best effort. */
	setint(fd, SOL_SOCKET, SO_SNDBUF, bs);
	setint(fd, SOL_SOCKET, SO_RCVBUF, bs);
	setint(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	ret = evr__fd_set_nonblock(fd, 1);
	if (ret)
		return ret;
	if (o->keepalive) {
		socklen_t len = sizeof(int);

		ret = setint(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
		if (!ret)
			ret = setint(fd, IPPROTO_TCP, TCP_KEEPIDLE, o->keepalive);
		if (ret)
			return ret;
		if (ka_on && getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, ka_on, &len))
			*ka_on = 0;
		len = sizeof(int);
		if (ka_idle &&
		    getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, ka_idle, &len))
			*ka_idle = 0;
	}
	return 0;
}

int evr__tcp_socket(const struct evr_stream_opts *o, int family,
		    struct evr_failure *f)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		f->err = -errno;
		f->where = "socket";
		return f->err;
	}
	return fd;
}

int evr__tcp_listen(const struct evr_stream_opts *o, struct evr_failure *f,
		    int *ka_on, int *ka_idle)
{
	struct evr_addr a;
	int fd, ret;

	ret = evr__resolve(o, o->bind_addr, o->port, 1, &a, f);
	if (ret)
		return ret;
	if (a.family != AF_INET && a.family != AF_INET6) {
		f->err = -EVR_E_NOTSUP;
		f->where = "this address family over TCP";
		return f->err;
	}
	fd = evr__tcp_socket(o, a.family, f);
	if (fd < 0)
		return fd;
	ret = setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (ret) {
		f->where = "setsockopt SO_REUSEADDR";
		goto fail;
	}
	/* Options on the listener are inherited by accepted sockets; the
	 * receive buffer must be set before listen() for window scaling. */
	ret = evr__tcp_set_options(o, fd, ka_on, ka_idle);
	if (ret) {
		f->where = "setsockopt";
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&a.ss, a.len)) {
		ret = -errno;
		f->where = "bind";
		goto fail;
	}
	/* Upstream listens with a backlog of 1; a server for many clients
	 * wants the kernel's maximum. */
	if (listen(fd, SOMAXCONN)) {
		ret = -errno;
		f->where = "listen";
		goto fail;
	}
	return fd;
fail:
	f->err = ret;
	close(fd);
	return ret;
}

int evr__tcp_connect_start(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (!connect(fd, sa, len))
		return 0;
	return errno == EINPROGRESS ? -EINPROGRESS : -errno;
}

int evr__tcp_connect_result(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

static ssize_t tcp_send(struct evr_conn *c, const void *buf, size_t len)
{
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static ssize_t tcp_recv(struct evr_conn *c, void *buf, size_t len)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);
	ssize_t n = recv(c->fd, buf, len, t->recv_flags);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static void tcp_shutdown(struct evr_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
}

static void tcp_close(struct evr_conn *c)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);

	if (c->fd >= 0)
		close(c->fd);
	free(t);
}

static const struct evr_conn_ops tcp_ops = {
	.send = tcp_send,
	.recv = tcp_recv,
	.shutdown = tcp_shutdown,
	.close = tcp_close,
};

struct evr_conn *evr__tcp_conn_new(int fd)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!t)
		return NULL;
	t->base.ops = &tcp_ops;
	t->base.fd = fd;
	t->recv_flags = MSG_DONTWAIT;
	if (!getpeername(fd, (struct sockaddr *)&ss, &sl))
		evr__sockaddr_str((struct sockaddr *)&ss, t->base.peer,
				  sizeof(t->base.peer));
	return &t->base;
}

int evr__tcp_conn_block(struct evr_conn *c, unsigned stall_ms)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);
	struct timeval tv = {
		.tv_sec = stall_ms / 1000,
		.tv_usec = (stall_ms % 1000) * 1000,
	};
	int ret = evr__fd_set_nonblock(c->fd, 0);

	if (ret)
		return ret;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	/* upstream's blocking mode: MSG_WAITALL */
	t->recv_flags = MSG_WAITALL;
	return 0;
}
