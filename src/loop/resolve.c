/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Name lookups on the loop with c-ares.  One channel per lookup: c-ares
 * 1.18 cancels only a whole channel, and an engine must be able to drop
 * its lookup (cancel, free) without touching anyone else's.  The channel
 * tells us which sockets to watch (ARES_OPT_SOCK_STATE_CB); each gets an
 * ev_io, and one ev_timer follows ares_timeout() for the retransmissions.
 */
#include "config.h"

#include <ares.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

struct lk_sock {
	ev_io w;
	struct evr__lookup *lk;
	struct lk_sock *next;
};

struct evr__lookup {
	struct evr_loop *loop;
	ares_channel ch;
	int have_ch;
	struct lk_sock *socks;
	ev_timer tmo_w;           /* ares_timeout(): the next retry */
	ev_timer deliver_w;       /* an answer found without the network */
	int done, err;
	struct sockaddr_storage ss;
	socklen_t len;
	evr__lookup_cb *cb;
	void *ud;
};

int evr__host_numeric(const char *host)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *res;

	if (!host)
		return 1;
	if (getaddrinfo(host, NULL, &hints, &res))
		return 0;
	freeaddrinfo(res);
	return 1;
}

int evr__addr_numeric(const struct sockaddr *sa, char *out, size_t len)
{
	socklen_t sl = sa->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	/* NUMERICHOST: no lookup; keeps an IPv6 scope ("fe80::1%eth0") */
	return getnameinfo(sa, sl, out, len, NULL, 0, NI_NUMERICHOST) ?
	       -EINVAL : 0;
}

/* getaddrinfo's words for c-ares's codes, so that a failure reads the
 * same whichever resolver found it. */
static int gai_code(int status)
{
	switch (status) {
	case ARES_ENOTFOUND:
	case ARES_EBADNAME:
		return EAI_NONAME;
	case ARES_ENODATA:
		return EAI_NODATA;
	case ARES_ENOMEM:
		return EAI_MEMORY;
	case ARES_EBADFAMILY:
		return EAI_FAMILY;
	case ARES_ESERVICE:
		return EAI_SERVICE;
	default:
		/* no server answered, or not usefully (timeout, refused,
		 * SERVFAIL): glibc says "temporary failure" */
		return EAI_AGAIN;
	}
}

static void deliver(struct evr__lookup *lk)
{
	struct ev_loop *l = lk->loop->ev;

	ev_timer_stop(l, &lk->tmo_w);
	ev_timer_stop(l, &lk->deliver_w);
	/* last: the callback may free lk */
	lk->cb(lk->ud, lk->err, lk->err ? NULL : (struct sockaddr *)&lk->ss,
	       lk->err ? 0 : lk->len);
}

/* After c-ares ran: the answer, or the timer for its next retry. */
static void settle(struct evr__lookup *lk)
{
	struct timeval tv, *t;

	if (lk->done) {
		deliver(lk);
		return;
	}
	t = ares_timeout(lk->ch, NULL, &tv);
	ev_timer_stop(lk->loop->ev, &lk->tmo_w);
	if (t) {
		ev_timer_set(&lk->tmo_w, t->tv_sec + t->tv_usec / 1e6, 0);
		ev_timer_start(lk->loop->ev, &lk->tmo_w);
	}
}

static void sock_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct lk_sock *s = evr__container_of(w, struct lk_sock, w);
	struct evr__lookup *lk = s->lk;
	int fd = w->fd;

	(void)l;
	/* s may be freed inside (c-ares closes the socket) */
	ares_process_fd(lk->ch, revents & EV_READ ? fd : ARES_SOCKET_BAD,
			revents & EV_WRITE ? fd : ARES_SOCKET_BAD);
	settle(lk);
}

static void tmo_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr__lookup *lk = evr__container_of(w, struct evr__lookup,
						   tmo_w);

	(void)l;
	(void)revents;
	ares_process_fd(lk->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	settle(lk);
}

static void deliver_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)revents;
	deliver(evr__container_of(w, struct evr__lookup, deliver_w));
}

/* c-ares opens, changes or closes a socket: watch it as it asks. */
static void sock_state(void *data, ares_socket_t fd, int readable,
		       int writable)
{
	struct evr__lookup *lk = data;
	struct lk_sock **pp, *s;

	for (pp = &lk->socks; *pp && (*pp)->w.fd != fd; pp = &(*pp)->next)
		;
	s = *pp;
	if (s)
		ev_io_stop(lk->loop->ev, &s->w);
	if (!readable && !writable) {
		if (s) {
			*pp = s->next;
			free(s);
		}
		return;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			/* unwatched, the query times out (tmo_w) */
			return;
		}
		s->lk = lk;
		s->next = lk->socks;
		lk->socks = s;
		ev_init(&s->w, sock_cb);
	}
	ev_io_set(&s->w, fd, (readable ? EV_READ : 0) |
			     (writable ? EV_WRITE : 0));
	ev_io_start(lk->loop->ev, &s->w);
}

/* The convention for every fd of ours; c-ares makes them non-blocking. */
static int sock_config(ares_socket_t fd, int type, void *data)
{
	(void)type;
	(void)data;
	return fcntl(fd, F_SETFD, FD_CLOEXEC) ? -1 : 0;
}

static void answer(void *arg, int status, int timeouts,
		   struct ares_addrinfo *res)
{
	struct evr__lookup *lk = arg;
	struct ares_addrinfo_node *n = res ? res->nodes : NULL;

	(void)timeouts;
	if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
		/* evr__lookup_free(): nobody to tell */
		ares_freeaddrinfo(res);
		return;
	}
	lk->done = 1;
	if (status != ARES_SUCCESS || !n || !n->ai_addr ||
	    n->ai_addrlen > sizeof(lk->ss)) {
		lk->err = status == ARES_SUCCESS ? EAI_NONAME :
			  gai_code(status);
	} else {
		memcpy(&lk->ss, n->ai_addr, n->ai_addrlen);
		lk->len = n->ai_addrlen;
	}
	ares_freeaddrinfo(res);
}

int evr__lookup_start(struct evr__lookup **out, struct evr_loop *loop,
		      const char *host, int family, evr__lookup_cb *cb,
		      void *ud)
{
	struct evr__lookup *lk = calloc(1, sizeof(*lk));
	struct ares_addrinfo_hints hints = {
		.ai_family = family, .ai_socktype = SOCK_STREAM,
	};
	struct ares_options ao = {
		.sock_state_cb = sock_state,
		/* glibc's default attempts (resolv.conf's "attempts:"),
		 * not c-ares's 4, whose doubling timeouts would make a
		 * dead name server cost a minute */
		.tries = 2,
	};

	if (!lk)
		return -ENOMEM;
	lk->loop = loop;
	lk->cb = cb;
	lk->ud = ud;
	ao.sock_state_cb_data = lk;
	ev_init(&lk->tmo_w, tmo_cb);
	ev_timer_init(&lk->deliver_w, deliver_cb, 0, 0);
	switch (ares_init_options(&lk->ch, &ao,
				  ARES_OPT_SOCK_STATE_CB | ARES_OPT_TRIES)) {
	case ARES_SUCCESS:
		break;
	case ARES_ENOMEM:
		free(lk);
		return -ENOMEM;
	default:
		free(lk);
		return -EIO;
	}
	lk->have_ch = 1;
	ares_set_socket_configure_callback(lk->ch, sock_config, NULL);
	ares_getaddrinfo(lk->ch, host, NULL, &hints, answer, lk);
	*out = lk;
	if (lk->done) /* /etc/hosts: from the loop all the same */
		ev_timer_start(loop->ev, &lk->deliver_w);
	else
		settle(lk);
	return 0;
}

void evr__lookup_free(struct evr__lookup *lk)
{
	struct lk_sock *s, *next;

	if (!lk)
		return;
	ev_timer_stop(lk->loop->ev, &lk->tmo_w);
	ev_timer_stop(lk->loop->ev, &lk->deliver_w);
	/* answer() is called with ARES_EDESTRUCTION and sock_state()
	 * for each socket closed */
	if (lk->have_ch)
		ares_destroy(lk->ch);
	for (s = lk->socks; s; s = next) {
		next = s->next;
		ev_io_stop(lk->loop->ev, &s->w);
		free(s);
	}
	free(lk);
}
