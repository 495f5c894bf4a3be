/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hguard.h"
#include "http.h"
#include "log.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

/* Accepted at a time before libmicrohttpd reads what came (a scrape's
 * request is in its socket by then: it becomes BUSY, out of eviction's
 * reach, before more arrivals could evict it), and at most per wake-up,
 * so that a flood of connections leaves the loop to the probes too. */
#define ACCEPT_BATCH 8
#define HTTP_BACKLOG 4096
#define ACCEPT_MAX 64
/* bind found no such address: tried again after 0.5 s, doubling to 5 s */
#define RETRY_MIN_S 0.5
#define RETRY_MAX_S 5.0
/* accept found no descriptor left: listen again after this */
#define FDS_PAUSE_S 0.25

/* A connection libmicrohttpd holds: its socket context. */
struct hconn {
	struct hg_conn g;
	int fd;
	int gone;               /* shut down by us, its close pending */
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Close c for reason (HD_MAX: no drop, a kept-alive connection's end):
 * shutdown(2) only, as libmicrohttpd owns the socket; it sees the end at
 * its next read and closes and forgets the connection
 * (NOTIFY_CONNECTION CLOSED frees c). */
static void evict(struct http *h, struct hconn *c, enum http_drop why)
{
	if (c->gone)
		return;
	hg_drop(&h->g, &c->g);
	h->st.open = h->g.n;
	c->gone = 1;
	if (why < HD_MAX)
		h->st.dropped[why]++;
	shutdown(c->fd, SHUT_RDWR);
	plog(PLOG_DEBUG, "http: connection closed (%s)", why < HD_MAX ?
	     http_drop_names[why] : "kept alive, idle");
}

static void rearm(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	double d;

	ev_timer_stop(h->evl, &h->tm_w);
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		ev_timer_set(&h->tm_w, ms / 1000.0, 0.);
		ev_timer_start(h->evl, &h->tm_w);
	}
	ev_timer_stop(h->evl, &h->idle_w);
	d = hg_next_deadline(&h->g);
	if (d >= 0) {
		d -= mono_now();
		ev_timer_set(&h->idle_w, d > 0 ? d + 0.001 : 0., 0.);
		ev_timer_start(h->evl, &h->idle_w);
	}
}

static void run(struct http *h)
{
	MHD_run(h->mhd);
	rearm(h);
}

static void io_cb(struct ev_loop *l, ev_io *w, int revents)
{
	run(w->data);
}

static void tm_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	run(w->data);
}

/* The IDLE connections past request_timeout_s. */
static void idle_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct http *h = w->data;
	struct hg_conn *g;
	double now = mono_now();

	while ((g = hg_expired(&h->g, now)))
		evict(h, (struct hconn *)g, g->served ? HD_MAX : HD_TIMEOUT);
	run(h);
}

static void notify_conn(void *cls, struct MHD_Connection *mc, void **ctx,
			enum MHD_ConnectionNotificationCode toe)
{
	struct http *h = cls;
	struct hconn *c;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		/* inside MHD_add_connection(): admit() made it */
		*ctx = h->adding;
		h->adding = NULL;
		return;
	}
	c = *ctx;
	if (!c)
		return;
	*ctx = NULL;
	hg_drop(&h->g, &c->g);
	h->st.open = h->g.n;
	free(c);
}

static struct hconn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *i;

	i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

static void completed(void *cls, struct MHD_Connection *mc, void **req,
		      enum MHD_RequestTerminationCode toe)
{
	struct http *h = cls;
	struct hconn *c = conn_of(mc);

	if (!c || c->gone)
		return;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		/* kept alive: it owes us its next request */
		hg_idle(&h->g, &c->g, mono_now());
		return;
	}
	/* a client that did not take its answer in time; any other end
	 * (the client gone, an error) is closing anyway */
	if (toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
		h->st.dropped[HD_TIMEOUT]++;
	c->gone = 1;
	hg_drop(&h->g, &c->g);
	h->st.open = h->g.n;
}

static MHD_RESULT reply(struct MHD_Connection *c, unsigned code,
			const char *type, char *body, size_t len,
			const char *allow)
{
	struct MHD_Response *r;
	MHD_RESULT ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static MHD_RESULT text(struct MHD_Connection *c, unsigned code,
		       const char *msg, const char *allow)
{
	char *b = strdup(msg);

	if (!b)
		return MHD_NO;
	return reply(c, code, "text/plain; charset=utf-8", b, strlen(b),
		     allow);
}

/* A request's first call, its headers complete: refused at once if it
 * is not one we answer, or put off to the request's end. */
static MHD_RESULT on_headers(struct http *h, struct MHD_Connection *c,
			     const char *method, void **req)
{
	struct hconn *hc = conn_of(c);
	const char *cl;

	/* its headers, complete: answered, never evicted */
	if (hc && !hc->gone)
		hg_busy(&h->g, &hc->g);
	h->st.requests++;
	/* refused at once: libmicrohttpd then closes the
	 * connection rather than read a body we do not want */
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "only GET and HEAD\n", "GET, HEAD");
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if ((cl && strcmp(cl, "0")) ||
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return text(c, MHD_HTTP_BAD_REQUEST, "no body, please\n",
			    NULL);
	/* answered at the next call, the request's end: one
	 * queued at this first call makes libmicrohttpd close
	 * the connection after it (0.9.75), and a scraper that
	 * keeps its connection (Prometheus) would connect anew
	 * every time */
	*req = h;
	return MHD_YES;
}

static MHD_RESULT on_request(void *cls, struct MHD_Connection *c,
			     const char *url, const char *method,
			     const char *version, const char *upload,
			     size_t *upload_len, void **req)
{
	struct http *h = cls;
	const char *type = NULL;
	char *body = NULL;
	size_t len = 0;
	int ret;

	if (!*req)
		return on_headers(h, c, method, req);
	if (*upload_len) /* not announced: the headers said no body */
		return MHD_NO;
	ret = h->page(h->ud, url, &body, &len, &type);
	if (ret < 0)
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			    "out of memory\n", NULL);
	if (!ret)
		return text(c, MHD_HTTP_NOT_FOUND, "not found; try /metrics\n",
			    NULL);
	return reply(c, MHD_HTTP_OK, type, body, len, NULL);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	plog(PLOG_DEBUG, "http: %s", msg);
}

/* A socket listening on ai, or -1 with errno saying why not. */
static int listen_on(const struct addrinfo *ai, int defer_s)
{
	int fd, e, one = 1;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A connection reaches accept() with its first bytes, or
	 * after defer_s without: one that connects and sends
	 * nothing waits in the kernel instead of in a slot, and a
	 * scrape's request is there when it is accepted, read
	 * before later arrivals could evict it (nginx's "listen
	 * deferred").  Best effort: without it, eviction alone. */
	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s,
		   sizeof(defer_s));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* a backlog beyond any flood we expect to outlast: a client
	 * holding hundreds of connections must not fill the queue
	 * that a scrape's connection waits in before accept
	 * (net.core.somaxconn caps it) */
	if (!bind(fd, ai->ai_addr, ai->ai_addrlen) &&
	    !listen(fd, HTTP_BACKLOG))
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

static int listen_fd(const char *addr, unsigned port, int defer_s, char *err,
		     size_t len)
{
	struct addrinfo hints, *res = NULL, *ai;
	char pbuf[8];
	int fd = -1, e = 0, g;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(pbuf, sizeof(pbuf), "%u", port);
	g = getaddrinfo(addr, pbuf, &hints, &res);
	if (g) {
		snprintf(err, len, "cannot resolve listen address \"%s\": %s",
			 addr, gai_strerror(g));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = listen_on(ai, defer_s);
		if (fd >= 0)
			break;
		e = errno;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, len, "cannot listen on %s%s%s:%u: %s",
			 strchr(addr, ':') ? "[" : "", addr,
			 strchr(addr, ':') ? "]" : "", port, strerror(e));
		return -(e ? e : EINVAL);
	}
	return fd;
}

/* Bytes in c's socket that libmicrohttpd has not read: its request came
 * in since the last MHD_run(); not a connection to evict. */
static int pending(struct hg_conn *g)
{
	int n = 0;

	return !ioctl(((struct hconn *)g)->fd, FIONREAD, &n) && n > 0;
}

/* A new connection: held, after evicting another if it must, or turned
 * away. */
static void admit(struct http *h, int fd, const struct sockaddr *sa,
		  socklen_t sl)
{
	struct hg_conn *victim;
	struct hconn *c;

	h->st.accepted++;
	switch (hg_admit(&h->g, sa, sl, pending, &victim)) {
	case HG_REFUSE_PER_IP:
		h->st.dropped[HD_PER_IP]++;
		close(fd);
		return;
	case HG_REFUSE_LIMIT:
		h->st.dropped[HD_LIMIT]++;
		close(fd);
		return;
	case HG_EVICT:
		evict(h, (struct hconn *)victim, HD_EVICTED);
		break;
	case HG_ADMIT:
		break;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		h->st.dropped[HD_ERROR]++;
		close(fd);
		return;
	}
	c->fd = fd;
	hg_add(&h->g, &c->g, sa, sl, mono_now());
	h->st.open = h->g.n;
	h->adding = c;
	/* notify_conn() takes c over (STARTED), and frees it (CLOSED),
	 * which a failure after STARTED calls too; the socket is closed
	 * either way */
	if (MHD_add_connection(h->mhd, fd, sa, sl) != MHD_YES)
		h->st.dropped[HD_ERROR]++;
	if (h->adding) {
		hg_drop(&h->g, &c->g);
		h->st.open = h->g.n;
		free(c);
		h->adding = NULL;
	}
}

static void fds_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct http *h = w->data;

	if (h->lfd >= 0)
		ev_io_start(h->evl, &h->lis_w);
}

/* accept() failed for want of a descriptor (or of memory). */
static int short_of_fds(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/* No descriptor for a new connection: an idle one's is taken (1: accept
 * again), or with none to take, the listening socket rests (0). */
static int make_room(struct http *h)
{
	struct hg_conn *v;

	/* counted once until one is accepted again */
	if (!h->fds_full)
		h->st.dropped[HD_FDS]++;
	h->fds_full = 1;
	/* an idle connection's descriptor for the new one, as when
	 * max_connections is reached (libmicrohttpd closes it at its
	 * run) */
	v = hg_victim(&h->g, pending);
	if (v) {
		evict(h, (struct hconn *)v, HD_EVICTED);
		MHD_run(h->mhd);
		return 1;
	}
	/* none: the listening socket stays readable, so rest it, or
	 * this callback would spin */
	ev_io_stop(h->evl, &h->lis_w);
	ev_timer_set(&h->fds_w, FDS_PAUSE_S, 0.);
	ev_timer_start(h->evl, &h->fds_w);
	return 0;
}

static void accept_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct http *h = w->data;
	struct sockaddr_storage ss;
	socklen_t sl;
	int i, fd;

	for (i = 0; i < ACCEPT_MAX; i++) {
		if (i && !(i % ACCEPT_BATCH))
			MHD_run(h->mhd);
		sl = sizeof(ss);
		fd = accept4(h->lfd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (short_of_fds(errno) && make_room(h))
				continue;
			break; /* EAGAIN: all taken */
		}
		h->fds_full = 0;
		admit(h, fd, (struct sockaddr *)&ss, sl);
	}
	run(h);
}

static void start_accepting(struct http *h, int fd)
{
	h->lfd = fd;
	ev_io_init(&h->lis_w, accept_cb, fd, EV_READ);
	h->lis_w.data = h;
	ev_io_start(h->evl, &h->lis_w);
}

static void retry_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct http *h = w->data;
	char err[300];
	int fd;

	fd = listen_fd(h->addr, h->port, h->defer_s, err, sizeof(err));
	if (fd >= 0) {
		plog(PLOG_INFO, "serving /metrics on %s port %u (its address "
		     "is up)", h->addr, h->port);
		start_accepting(h, fd);
		return;
	}
	if (fd != h->last_err) {
		/* another reason than the one logged (the port taken,
		 * now that the address is up): said once too */
		plog(PLOG_WARN, "%s; trying again", err);
		h->last_err = fd;
	} else {
		plog(PLOG_DEBUG, "%s; trying again", err);
	}
	h->retry_s = h->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S :
						    h->retry_s * 2;
	ev_timer_set(&h->retry_w, h->retry_s, 0.);
	ev_timer_start(h->evl, &h->retry_w);
}

int http_open(struct http *h, struct ev_loop *evl, const char *addr,
	      unsigned port, const struct http_limits *lim, http_page_fn page,
	      void *ud, char *err, size_t len)
{
	const union MHD_DaemonInfo *info;
	unsigned mhd_timeout;
	int fd;

	memset(h, 0, sizeof(*h));
	h->evl = evl;
	h->page = page;
	h->ud = ud;
	h->lfd = -1;
	hg_init(&h->g, lim);
	ev_io_init(&h->lis_w, accept_cb, -1, EV_READ);
	ev_timer_init(&h->tm_w, tm_cb, 0., 0.);
	ev_timer_init(&h->idle_w, idle_cb, 0., 0.);
	ev_timer_init(&h->retry_w, retry_cb, 0., 0.);
	ev_timer_init(&h->fds_w, fds_cb, 0., 0.);
	h->tm_w.data = h->idle_w.data = h->retry_w.data = h->fds_w.data = h;
	h->port = port;
	if (!(h->addr = strdup(addr))) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	h->defer_s = (int)lim->request_timeout_s +
		     (lim->request_timeout_s > (int)lim->request_timeout_s);
	fd = listen_fd(addr, port, h->defer_s, err, len);
	if (fd < 0 && fd != -EADDRNOTAVAIL) {
		http_close(h);
		return fd;
	}
	/* We accept, libmicrohttpd serves what we hand it
	 * (MHD_add_connection), so that admit() can evict.  No
	 * MHD_USE_INTERNAL_POLLING_THREAD: MHD runs only in MHD_run(),
	 * called from this loop.  Its own limit is a backstop: evicted
	 * connections count there until it has closed them.  Its
	 * inactivity timeout closes what ours does not see: a client that
	 * does not read its answer; ours (request_timeout_s, the IDLE
	 * ones) comes first. */
	mhd_timeout = (unsigned)lim->request_timeout_s + 2; /* > ours */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
				  MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
				  on_request, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_NOTIFY_CONNECTION, notify_conn, h,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, h,
				  MHD_OPTION_CONNECTION_LIMIT,
				  lim->max_conns + 2 * ACCEPT_MAX,
				  MHD_OPTION_CONNECTION_TIMEOUT, mhd_timeout,
				  MHD_OPTION_END);
	if (!h->mhd) {
		if (fd >= 0)
			close(fd);
		http_close(h);
		snprintf(err, len, "cannot start the HTTP server (libmicrohttpd)");
		return -EIO;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		if (fd >= 0)
			close(fd);
		http_close(h);
		snprintf(err, len, "libmicrohttpd has no epoll fd");
		return -EIO;
	}
	ev_io_init(&h->io_w, io_cb, info->epoll_fd, EV_READ);
	h->io_w.data = h;
	ev_io_start(evl, &h->io_w);
	rearm(h);
	if (fd < 0) {
		/* the daemon started before its address (an interface not
		 * up yet, an IPv6 address still tentative): not fatal, the
		 * probes run and /metrics comes when the address does */
		plog(PLOG_WARN, "%s: not on this host (yet?); trying again, "
		     "every %g s at most, meanwhile the probes run", err,
		     RETRY_MAX_S);
		h->last_err = fd;
		h->retry_s = RETRY_MIN_S;
		ev_timer_set(&h->retry_w, h->retry_s, 0.);
		ev_timer_start(evl, &h->retry_w);
		return 1;
	}
	start_accepting(h, fd);
	return 0;
}

void http_close(struct http *h)
{
	if (!h->evl) /* never opened, or closed */
		return;
	ev_io_stop(h->evl, &h->io_w);
	ev_io_stop(h->evl, &h->lis_w);
	ev_timer_stop(h->evl, &h->tm_w);
	ev_timer_stop(h->evl, &h->idle_w);
	ev_timer_stop(h->evl, &h->retry_w);
	ev_timer_stop(h->evl, &h->fds_w);
	if (h->lfd >= 0)
		close(h->lfd);
	h->lfd = -1;
	/* its connections' CLOSED notifications free them */
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	h->mhd = NULL;
	free(h->addr);
	h->addr = NULL;
	h->evl = NULL;
}
