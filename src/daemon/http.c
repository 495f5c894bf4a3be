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
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "log.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

static void rearm(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	ev_timer_stop(h->evl, &h->tm_w);
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		ev_timer_set(&h->tm_w, ms / 1000.0, 0.);
		ev_timer_start(h->evl, &h->tm_w);
	}
}

static void io_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct http *h = w->data;

	MHD_run(h->mhd);
	rearm(h);
}

static void tm_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct http *h = w->data;

	MHD_run(h->mhd);
	rearm(h);
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

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "only GET and HEAD\n", "GET, HEAD");
	if (*upload_len)
		return text(c, MHD_HTTP_BAD_REQUEST, "no body, please\n",
			    NULL);
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

static int listen_fd(const char *addr, unsigned port, char *err, size_t len)
{
	struct addrinfo hints, *res = NULL, *ai;
	char pbuf[8];
	int fd = -1, e = 0, one = 1, g;

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
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
			    SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				   sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 64))
			break;
		e = errno;
		close(fd);
		fd = -1;
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

int http_open(struct http *h, struct ev_loop *evl, const char *addr,
	      unsigned port, http_page_fn page, void *ud, char *err,
	      size_t len)
{
	const union MHD_DaemonInfo *info;
	int fd;

	memset(h, 0, sizeof(*h));
	h->evl = evl;
	h->page = page;
	h->ud = ud;
	fd = listen_fd(addr, port, err, len);
	if (fd < 0)
		return fd;
	/* No MHD_USE_INTERNAL_POLLING_THREAD: MHD runs only in MHD_run(),
	 * called from this loop.  MHD closes the listening socket on stop. */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL,
				  NULL, on_request, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_END);
	if (!h->mhd) {
		close(fd);
		snprintf(err, len, "cannot start the HTTP server (libmicrohttpd)");
		return -EIO;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		MHD_stop_daemon(h->mhd);
		h->mhd = NULL;
		snprintf(err, len, "libmicrohttpd has no epoll fd");
		return -EIO;
	}
	ev_io_init(&h->io_w, io_cb, info->epoll_fd, EV_READ);
	ev_timer_init(&h->tm_w, tm_cb, 0., 0.);
	h->io_w.data = h;
	h->tm_w.data = h;
	ev_io_start(evl, &h->io_w);
	rearm(h);
	return 0;
}

void http_close(struct http *h)
{
	if (!h->mhd)
		return;
	ev_io_stop(h->evl, &h->io_w);
	ev_timer_stop(h->evl, &h->tm_w);
	MHD_stop_daemon(h->mhd);
	h->mhd = NULL;
}
