/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel TCP transport: non-blocking sockets in the loop.  Its one
 * entry point is the constructor (tcp.h); everything else is reached
 * through the ops tables of transport.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../loop/loop.h"
#include "tcp.h"

/* Connections taken off the listen queue per wakeup: enough to drain a
 * burst (rstream -c N connects up to 256 at a time) in few loop turns,
 * few enough that running connections are not starved meanwhile. */
#define ACCEPT_BATCH 256

/* After an accept error that leaves the listener readable (out of fds
 * with no spare one, out of memory...): how long the listener rests
 * before it tries again, instead of spinning on it. */
#define ACCEPT_RETRY_S 0.25

struct tcp_xport {
	struct evr_xport base;
	int lfd, reserve_fd;
	int starved;            /* refusing since the last good accept */
	ev_io accept_w;
	ev_timer retry_w;
};

struct tcp_conn {
	struct evr_conn base;
	int recv_flags;
	int stamps;             /* rx_stamps: SO_TIMESTAMPNS is on */
	struct tcp_xport *x;
	ev_io connect_w;
};

/* rstream's per-socket options on fd (also on accepted sockets): buffer
 * sizes, TCP_NODELAY, non-blocking, and -k's keepalive, whose effective
 * setting goes to *ka_on and *ka_idle.  0 or a negative errno. */
static int set_options(const struct evr_stream_opts *o, int fd, int *ka_on,
		       int *ka_idle)
{
	int bs = o->buffer_size ? o->buffer_size : EVR_DEFAULT_BUFFER_SIZE;
	int ret;

	/* Like upstream, buffer sizes and NODELAY are best effort. */
	(void)evr__setsockopt_int(fd, SOL_SOCKET, SO_SNDBUF, bs);
	(void)evr__setsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, bs);
	(void)evr__setsockopt_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	ret = evr__fd_set_nonblock(fd, 1);
	if (ret)
		return ret;
	if (o->keepalive) {
		socklen_t len = sizeof(int);

		ret = evr__setsockopt_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
		if (!ret)
			ret = evr__setsockopt_int(fd, IPPROTO_TCP,
						  TCP_KEEPIDLE, o->keepalive);
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

/* A close-on-exec stream socket of family; set_options() does the rest.
 * Returns the fd, or a negative errno with f filled. */
static int tcp_socket(int family, struct evr_failure *f)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		f->err = -errno;
		f->where = "socket";
		return f->err;
	}
	return fd;
}

/* The listening socket for o's address and port: its fd, or a negative
 * errno with f filled. */
/* No -b: every address, IPv6's too (rstream(1): "default: all"), on one
 * dual-stack socket where the host has IPv6; IPv4's alone where it has
 * not.  1 when a became [::]:port. */
static int wildcard_dual(const struct evr_stream_opts *o, struct evr_addr *a)
{
	int fd;

	if (!evr__addr_is_wildcard4(o, a))
		return 0;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	close(fd);
	evr__addr_wildcard6(a);
	return 1;
}

static int tcp_listen(const struct evr_stream_opts *o, struct evr_failure *f,
		      int *ka_on, int *ka_idle)
{
	struct evr_addr a;
	int fd, ret, dual;

	ret = evr__resolve(o, o->bind_addr, o->port, 1, &a, f);
	if (ret)
		return ret;
	dual = wildcard_dual(o, &a);
	if (a.family != AF_INET && a.family != AF_INET6) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_TCP_FAMILY;
		f->where = NULL;
		return f->err;
	}
	fd = tcp_socket(a.family, f);
	if (fd < 0)
		return fd;
	/* IPv4 clients too, whatever net.ipv6.bindv6only says */
	if (dual && evr__setsockopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 0)) {
		ret = -errno;
		f->where = "setsockopt IPV6_V6ONLY";
		goto fail;
	}
	ret = evr__setsockopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (ret) {
		f->where = "setsockopt SO_REUSEADDR";
		goto fail;
	}
	/* Options on the listener are inherited by accepted sockets; the
	 * receive buffer must be set before listen() for window scaling. */
	ret = set_options(o, fd, ka_on, ka_idle);
	if (ret) {
		f->where = "setsockopt";
		goto fail;
	}
	/* Receive timestamps for a client that asks for hold stamps
	 * (wire.h), from its first byte on: Linux turns them on for the
	 * host from a work queue, and what arrives before is not stamped
	 * (best effort: the hold is then timed from the read) */
	(void)evr__setsockopt_int(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1);
	if (bind(fd, (struct sockaddr *)&a.ss, a.len)) {
		ret = -errno;
		evr__bind_failed(f, ret, &a, NULL);
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

/* Start a non-blocking connect: 0 done, -EINPROGRESS, or -errno. */
static int connect_start(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (!connect(fd, sa, len))
		return 0;
	return errno == EINPROGRESS ? -EINPROGRESS : -errno;
}

/* After writability: 0 connected or -errno. */
static int connect_result(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

static ssize_t tcp_send(struct evr_conn *c, const void *buf, size_t len,
			int more)
{
	(void)more; /* the kernel's own coalescing stays as upstream's */
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

/* recv with the kernel's receive timestamp of the last bytes read (TCP
 * gives the one of the last segment it copied from). */
static ssize_t recv_stamped(struct tcp_conn *t, void *buf, size_t len)
{
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.b,
		.msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *cm;
	struct timespec ts;
	ssize_t n = recvmsg(t->base.fd, &m, t->recv_flags);

	if (n <= 0)
		return n;
	t->base.rx_rt_ns = 0;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_TIMESTAMPNS ||
		    cm->cmsg_len < CMSG_LEN(sizeof(ts)))
			continue;
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		if (ts.tv_sec > 0 && ts.tv_nsec >= 0 &&
		    ts.tv_nsec < 1000000000)
			t->base.rx_rt_ns = (uint64_t)ts.tv_sec * 1000000000u +
					   (uint64_t)ts.tv_nsec;
	}
	return n;
}

static ssize_t tcp_recv(struct evr_conn *c, void *buf, size_t len)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);
	ssize_t n = t->stamps ? recv_stamped(t, buf, len) :
				recv(c->fd, buf, len, t->recv_flags);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

/* The kernel stamps what arrives from now on (a software timestamp, at
 * the receive path's entry: before this process runs). */
static int tcp_rx_stamps(struct evr_conn *c)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);
	int ret = evr__setsockopt_int(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, 1);

	if (!ret)
		t->stamps = 1;
	return ret;
}

static void tcp_shutdown(struct evr_conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
}

static void tcp_close(struct evr_conn *c)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);

	if (t->x)
		ev_io_stop(t->x->base.loop->ev, &t->connect_w);
	if (c->fd >= 0)
		close(c->fd);
	free(t);
}

static int getint(int fd, int level, int name, int *val)
{
	socklen_t len = sizeof(*val);

	*val = 0;
	return getsockopt(fd, level, name, val, &len) ? -errno : 0;
}

/* What the kernel made of our requests: Linux doubles SO_SNDBUF and
 * SO_RCVBUF and caps them at wmem_max/rmem_max, so these may differ from
 * -B. */
void evr__tcp_settings_rows(struct evr_conn_settings *s,
			    const struct evr__tcp_settings *v)
{
	evr__setting_add(s, "sndbuf_bytes", "sndbuf", 0, v->sndbuf);
	evr__setting_add(s, "rcvbuf_bytes", "rcvbuf", 0, v->rcvbuf);
	evr__setting_add(s, "nodelay", "nodelay", EVR_SETTING_BOOL,
			 v->nodelay);
	evr__setting_add(s, "mss_bytes", "mss", 0, v->mss);
	if (!s->keepalive_on)
		return;
	evr__setting_add(s, "keepalive_intvl_s", "intvl",
			 EVR_SETTING_KEEPALIVE, v->keepintvl_s);
	evr__setting_add(s, "keepalive_probes", "probes",
			 EVR_SETTING_KEEPALIVE, v->keepcnt);
}

static int tcp_settings(struct evr_conn *c, struct evr_conn_settings *o)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct evr__tcp_settings v;
	int ret;

	memset(o, 0, sizeof(*o));
	o->transport = EVR_TRANSPORT_TCP;
	if (!getsockname(c->fd, (struct sockaddr *)&ss, &sl))
		evr__sockaddr_str((struct sockaddr *)&ss, o->local,
				  sizeof(o->local));
	sl = sizeof(ss);
	if (!getpeername(c->fd, (struct sockaddr *)&ss, &sl))
		evr__sockaddr_str((struct sockaddr *)&ss, o->peer,
				  sizeof(o->peer));
	memset(&v, 0, sizeof(v));
	ret = getint(c->fd, SOL_SOCKET, SO_SNDBUF, &v.sndbuf);
	if (!ret)
		ret = getint(c->fd, SOL_SOCKET, SO_RCVBUF, &v.rcvbuf);
	if (ret)
		return ret;
	getint(c->fd, IPPROTO_TCP, TCP_NODELAY, &v.nodelay);
	getint(c->fd, IPPROTO_TCP, TCP_MAXSEG, &v.mss);
	getint(c->fd, SOL_SOCKET, SO_KEEPALIVE, &o->keepalive_on);
	if (o->keepalive_on) {
		getint(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &o->keepalive_idle_s);
		getint(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &v.keepintvl_s);
		getint(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &v.keepcnt);
	}
	v.nodelay = !!v.nodelay;
	o->keepalive_on = !!o->keepalive_on;
	evr__tcp_settings_rows(o, &v);
	return 0;
}

static const struct evr_conn_ops tcp_ops = {
	.send = tcp_send,
	.recv = tcp_recv,
	.shutdown = tcp_shutdown,
	.close = tcp_close,
	.settings = tcp_settings,
	.rx_stamps = tcp_rx_stamps,
};

/* Wrap a (connecting or connected) non-blocking socket. */
static struct evr_conn *conn_new(int fd)
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

/* Switch to blocking calls (-T b), with the stall timeout as SO_RCVTIMEO
 * and SO_SNDTIMEO so that a blocking call never hangs. */
static int conn_block(struct evr_conn *c, unsigned stall_ms)
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

/* ---- the engine side: listen and accept, open and connect ---- */

static void tcp_connect_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct tcp_conn *t = evr__container_of(w, struct tcp_conn, connect_w);
	struct tcp_xport *x = t->x;
	int err = connect_result(t->base.fd);

	ev_io_stop(l, w);
	if (!err && x->base.o->io == EVR_IO_BLOCK)
		err = conn_block(&t->base, x->base.o->stall_ms);
	x->base.cbs->connected(x->base.ud, &t->base, err);
}

static int x_open(struct evr_xport *xp, const struct evr_addr *dst,
		  int inline_size, struct evr_conn **out,
		  struct evr_failure *f)
{
	struct tcp_xport *x = evr__container_of(xp, struct tcp_xport, base);
	struct tcp_conn *t;
	struct evr_conn *c;
	int fd, ret, ka_on = 0, ka_idle = 0;

	fd = tcp_socket(dst->family, f);
	if (fd < 0)
		return fd;
	/* --split: stamped from the first byte (as the listener's) */
	if (xp->o->lat_split)
		(void)evr__setsockopt_int(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1);
	ret = set_options(xp->o, fd, &ka_on, &ka_idle);
	if (ret) {
		close(fd);
		f->err = ret;
		f->where = "setsockopt";
		return ret;
	}
	c = conn_new(fd);
	if (!c) {
		close(fd);
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	t = evr__container_of(c, struct tcp_conn, base);
	t->x = x;
	ev_io_init(&t->connect_w, tcp_connect_cb, fd, EV_WRITE);
	c->ka_on = ka_on;
	c->ka_idle = ka_idle;
	*out = c;
	return 0;
}

static int x_connect(struct evr_xport *xp, struct evr_conn *c,
		     const struct evr_addr *dst, const struct evr_addr *src,
		     struct evr_failure *f, int *err)
{
	struct tcp_conn *t = evr__container_of(c, struct tcp_conn, base);
	int ret;

	/* the peer is known from here on, for any failure to name */
	evr__sockaddr_str((const struct sockaddr *)&dst->ss, c->peer,
			  sizeof(c->peer));
	if (src && src->valid &&
	    bind(c->fd, (const struct sockaddr *)&src->ss, src->len)) {
		evr__bind_failed(f, -errno, src, dst);
		return f->err;
	}
	ret = connect_start(c->fd, (const struct sockaddr *)&dst->ss,
			    dst->len);
	if (ret && ret != -EINPROGRESS) {
		*err = ret;
		return EVR_XP_FAILED_NOW;
	}
	/* Done or in progress: writability tells either way. */
	ev_io_start(xp->loop->ev, &t->connect_w);
	return EVR_XP_CONNECTING;
}

/* Report the first refusal of an episode (not one line per connection). */
static void accept_refused(struct tcp_xport *x, int err,
			  const struct sockaddr *peer)
{
	if (x->starved)
		return;
	x->starved = 1;
	if (x->base.cbs->refused)
		x->base.cbs->refused(x->base.ud, err, peer);
}

/* The listener stays readable while the error lasts: rest a while. */
static void accept_pause(struct tcp_xport *x)
{
	struct ev_loop *l = x->base.loop->ev;

	ev_io_stop(l, &x->accept_w);
	ev_timer_set(&x->retry_w, ACCEPT_RETRY_S, 0.);
	ev_timer_start(l, &x->retry_w);
}

static void accept_retry_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct tcp_xport *x = evr__container_of(w, struct tcp_xport, retry_w);

	if (x->reserve_fd < 0)
		x->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (x->lfd >= 0)
		ev_io_start(l, &x->accept_w);
}

/*
 * Out of file descriptors (EMFILE, ENFILE), accept() cannot take the
 * pending connection off the queue, and the listener stays readable: the
 * loop would wake for it again and again, and the peer would wait for
 * nothing.  So give up the spare descriptor kept for this moment, accept
 * the connection with it and close it at once (the peer sees the close),
 * then take the spare back.  libuv's uv__emfile_trick() is the model.
 * err is accept's error (-EMFILE or -ENFILE).  Returns 0 when it shed a
 * connection and the listener may be tried again, -EAGAIN when the queue
 * turned out empty (the fd limit is checked before the queue: an empty
 * queue says EMFILE too), or err when the listener must rest: no spare,
 * or none to be had back.
 */
static int accept_shed_load(struct tcp_xport *x, int err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, aerr;

	if (x->reserve_fd < 0) {
		accept_refused(x, err, NULL);
		return err;
	}
	close(x->reserve_fd);
	fd = accept4(x->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	aerr = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	x->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (aerr == EAGAIN || aerr == EWOULDBLOCK)
		return -EAGAIN;
	accept_refused(x, err, fd >= 0 ? (struct sockaddr *)&ss : NULL);
	return fd >= 0 && x->reserve_fd >= 0 ? 0 : err;
}

/* A connection off the queue: set it up as ours and hand it on. */
static void accept_one(struct tcp_xport *x, int fd,
		       const struct sockaddr_storage *ss)
{
	const struct evr_stream_opts *o = x->base.o;
	int ka_on = 0, ka_idle = 0;
	struct evr_conn *c;

	x->starved = 0;
	set_options(o, fd, &ka_on, &ka_idle);
	c = conn_new(fd);
	if (!c) {
		close(fd);
		return;
	}
	if (o->io == EVR_IO_BLOCK && conn_block(c, o->stall_ms)) {
		c->ops->close(c);
		return;
	}
	/* A peer that reset at once is gone before getpeername():
	 * accept's own address still names it in the drop line. */
	if (!c->peer[0])
		evr__sockaddr_str((const struct sockaddr *)ss, c->peer,
				  sizeof(c->peer));
	c->ka_on = ka_on;
	c->ka_idle = ka_idle;
	x->base.cbs->accepted(x->base.ud, c, (const struct sockaddr *)ss);
}

static void tcp_accept_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct tcp_xport *x = evr__container_of(w, struct tcp_xport, accept_w);
	unsigned n;

	/* (accepted() may stop the listener: a -T f child, --once) */
	for (n = 0; n < ACCEPT_BATCH && x->lfd >= 0; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int err, fd = accept4(x->lfd, (struct sockaddr *)&ss, &sl,
				      SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			accept_one(x, fd, &ss);
			continue;
		}
		err = -errno;
		if (err == -EINTR || err == -ECONNABORTED)
			continue;
		if (err == -EAGAIN || err == -EWOULDBLOCK)
			return;
		if (err == -EMFILE || err == -ENFILE)
			err = accept_shed_load(x, err);
		else
			accept_refused(x, err, NULL);
		if (err == -EAGAIN)
			return;
		if (err) {
			/* the listener would wake the loop at once, again
			 * and again: rest a while */
			accept_pause(x);
			return;
		}
	}
}

static int x_listen(struct evr_xport *xp, struct evr_failure *f, int *ka_on,
		    int *ka_idle)
{
	struct tcp_xport *x = evr__container_of(xp, struct tcp_xport, base);

	x->lfd = tcp_listen(xp->o, f, ka_on, ka_idle);
	if (x->lfd < 0)
		return f->err;
	x->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ev_io_init(&x->accept_w, tcp_accept_cb, x->lfd, EV_READ);
	ev_timer_init(&x->retry_w, accept_retry_cb, ACCEPT_RETRY_S, 0.);
	ev_io_start(xp->loop->ev, &x->accept_w);
	return 0;
}

static void x_listen_addr(struct evr_xport *xp, char *buf, size_t len)
{
	struct tcp_xport *x = evr__container_of(xp, struct tcp_xport, base);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	buf[0] = '\0';
	if (x->lfd >= 0 && !getsockname(x->lfd, (struct sockaddr *)&ss, &sl))
		evr__sockaddr_str((struct sockaddr *)&ss, buf, len);
}

static void x_stop_listen(struct evr_xport *xp)
{
	struct tcp_xport *x = evr__container_of(xp, struct tcp_xport, base);

	if (x->lfd >= 0) {
		ev_io_stop(xp->loop->ev, &x->accept_w);
		ev_timer_stop(xp->loop->ev, &x->retry_w);
		close(x->lfd);
		x->lfd = -1;
	}
	if (x->reserve_fd >= 0) {
		close(x->reserve_fd);
		x->reserve_fd = -1;
	}
}

static unsigned x_lingering(struct evr_xport *xp)
{
	return 0; /* the kernel finishes a TCP close on its own */
}

static void x_free(struct evr_xport *xp)
{
	struct tcp_xport *x = evr__container_of(xp, struct tcp_xport, base);

	x_stop_listen(xp);
	free(x);
}

static const struct evr_xport_ops tcp_xport_ops = {
	.listen = x_listen,
	.listen_addr = x_listen_addr,
	.stop_listen = x_stop_listen,
	.open = x_open,
	.connect = x_connect,
	.lingering = x_lingering,
	.free = x_free,
};

int evr__tcp_xport_new(struct evr_xport **out, const struct evr_xport *base,
		       struct evr_failure *f)
{
	struct tcp_xport *x = calloc(1, sizeof(*x));

	if (!x) {
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	x->base = *base;
	x->base.ops = &tcp_xport_ops;
	x->lfd = -1;
	x->reserve_fd = -1;
	*out = &x->base;
	return 0;
}
