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
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

struct lk_sock {
	ev_io w;
	struct lk_entry *e;
	struct lk_sock *next;
};

/*
 * One name (and family) as the loop knows it: a query under way (pending,
 * its own c-ares channel) or its outcome, kept until expires_ns.  Every
 * lookup of the same name meanwhile waits on it or is answered from it.
 */
struct lk_entry {
	struct evr_loop *loop;
	struct lk_entry *next;
	char *host;
	int family;
	int pending;              /* the query is under way */
	int delivering;           /* its waiters are being told */
	ares_channel ch;
	int have_ch;
	struct lk_sock *socks;
	ev_timer tmo_w;           /* ares_timeout(): the next retry */
	ev_timer deadline_w;      /* evr_lookup_opts.timeout_s */
	int answered;             /* answer() ran: err, addrs hold it */
	int err;
	struct evr__addrs addrs;
	uint64_t expires_ns;
	struct evr_lookup *waiters;
};

/* One caller's lookup: waiting on an entry, or told from the loop. */
struct evr_lookup {
	struct evr_loop *loop;
	struct lk_entry *e;       /* NULL once told (or about to be) */
	struct evr_lookup *next;
	ev_timer deliver_w;       /* an answer known already */
	int err;
	struct evr__addrs addrs;  /* the answer, while cb runs */
	evr_lookup_fn cb;
	void *ud;
};

/* Call lk's cb with err and addrs (its first address: the public
 * callback's; the rest for evr__lookup_addrs() meanwhile). */
static void tell(struct evr_lookup *lk, int err, const struct evr__addrs *a)
{
	lk->err = err;
	if (a != &lk->addrs)
		lk->addrs = *a;
	if (err)
		lk->addrs.n = 0;
	/* last: the callback may free lk */
	lk->cb(lk->ud, err, err ? NULL : (struct sockaddr *)&lk->addrs.ss[0],
	       err ? 0 : lk->addrs.len[0]);
}

/* The loop's table: the options and counters of evr_loop_set_lookups(). */
struct evr__lookups {
	struct evr_lookup_opts o;
	struct evr_lookup_stats st;
	struct lk_entry *entries;
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

static uint64_t secs_ns(double s)
{
	return (uint64_t)(s * 1e9);
}

static void entry_stop(struct lk_entry *e)
{
	struct ev_loop *l = e->loop->ev;
	struct lk_sock *s, *next;

	ev_timer_stop(l, &e->tmo_w);
	ev_timer_stop(l, &e->deadline_w);
	/* answer() is called with ARES_EDESTRUCTION and sock_state() for
	 * each socket closed; never from inside c-ares's own processing */
	if (e->have_ch)
		ares_destroy(e->ch);
	e->have_ch = 0;
	for (s = e->socks; s; s = next) {
		next = s->next;
		ev_io_stop(l, &s->w);
		free(s);
	}
	e->socks = NULL;
	e->pending = 0;
}

static void entry_unlink_free(struct lk_entry *e)
{
	struct lk_entry **pp;

	for (pp = &e->loop->lookups->entries; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	entry_stop(e);
	free(e->host);
	free(e);
}

/* Whether an outcome is kept at all: a query nobody waits for any more
 * runs on only when it is. */
static int keeps(const struct evr__lookups *t)
{
	return t->o.cache_s > 0 || t->o.negative_s > 0;
}

/* The query is over (answer, failure or deadline): keep the outcome for
 * its lifetime and tell every waiter, one at a time (a callback may free
 * any lookup, start new ones, or set the options). */
static void complete(struct lk_entry *e, int err)
{
	struct evr__lookups *t = e->loop->lookups;
	struct evr_lookup *w;

	entry_stop(e);
	e->err = err;
	if (err)
		t->st.failures++;
	e->expires_ns = evr_now_ns() +
			secs_ns(err ? t->o.negative_s : t->o.cache_s);
	e->delivering = 1;
	while ((w = e->waiters)) {
		e->waiters = w->next;
		w->e = NULL;
		tell(w, e->err, &e->addrs);
	}
	e->delivering = 0;
	if (evr_now_ns() >= e->expires_ns)
		entry_unlink_free(e);
}

/* After c-ares ran: the outcome, or the timer for its next retry. */
static void settle(struct lk_entry *e)
{
	struct timeval tv, *t;

	if (e->answered) {
		complete(e, e->err);
		return;
	}
	t = ares_timeout(e->ch, NULL, &tv);
	ev_timer_stop(e->loop->ev, &e->tmo_w);
	if (t) {
		ev_timer_set(&e->tmo_w, t->tv_sec + t->tv_usec / 1e6, 0);
		ev_timer_start(e->loop->ev, &e->tmo_w);
	}
}

static void sock_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct lk_sock *s = evr__container_of(w, struct lk_sock, w);
	struct lk_entry *e = s->e;
	int fd = w->fd;

	(void)l;
	/* s may be freed inside (c-ares closes the socket) */
	ares_process_fd(e->ch, revents & EV_READ ? fd : ARES_SOCKET_BAD,
			revents & EV_WRITE ? fd : ARES_SOCKET_BAD);
	settle(e);
}

static void tmo_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct lk_entry *e = evr__container_of(w, struct lk_entry, tmo_w);

	(void)l;
	(void)revents;
	ares_process_fd(e->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	settle(e);
}

/* No answer within evr_lookup_opts.timeout_s: what glibc says when its
 * name servers are silent. */
static void deadline_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct lk_entry *e = evr__container_of(w, struct lk_entry,
					       deadline_w);

	(void)l;
	(void)revents;
	e->loop->lookups->st.timeouts++;
	complete(e, EAI_AGAIN);
}

static void deliver_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_lookup *lk = evr__container_of(w, struct evr_lookup,
						  deliver_w);

	(void)revents;
	ev_timer_stop(l, w);
	tell(lk, lk->err, &lk->addrs);
}

/* c-ares opens, changes or closes a socket: watch it as it asks. */
static void sock_state(void *data, ares_socket_t fd, int readable,
		       int writable)
{
	struct lk_entry *e = data;
	struct lk_sock **pp, *s;

	for (pp = &e->socks; *pp && (*pp)->w.fd != fd; pp = &(*pp)->next)
		;
	s = *pp;
	if (s)
		ev_io_stop(e->loop->ev, &s->w);
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
		s->e = e;
		s->next = e->socks;
		e->socks = s;
		ev_init(&s->w, sock_cb);
	}
	ev_io_set(&s->w, fd, (readable ? EV_READ : 0) |
			     (writable ? EV_WRITE : 0));
	ev_io_start(e->loop->ev, &s->w);
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
	struct lk_entry *e = arg;
	struct ares_addrinfo_node *n = res ? res->nodes : NULL;

	(void)timeouts;
	if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
		/* entry_stop(): nobody to tell */
		ares_freeaddrinfo(res);
		return;
	}
	e->answered = 1;
	e->addrs.n = 0;
	for (; status == ARES_SUCCESS && n; n = n->ai_next)
		evr__addrs_add(&e->addrs, n->ai_addr, n->ai_addrlen);
	if (status != ARES_SUCCESS || !e->addrs.n)
		e->err = status == ARES_SUCCESS ? EAI_NONAME :
			 gai_code(status);
	ares_freeaddrinfo(res);
}

/* The loop's table, made at its first use. */
static struct evr__lookups *table(struct evr_loop *loop)
{
	if (!loop->lookups)
		loop->lookups = calloc(1, sizeof(*loop->lookups));
	return loop->lookups;
}

/* Forget the outcomes whose time is up (never one being told). */
static void sweep(struct evr__lookups *t, int all)
{
	struct lk_entry *e, *next;
	uint64_t now = evr_now_ns();

	for (e = t->entries; e; e = next) {
		next = e->next;
		if (!e->pending && !e->delivering &&
		    (all || now >= e->expires_ns))
			entry_unlink_free(e);
	}
}

static int entry_query(struct lk_entry *e)
{
	struct evr__lookups *t = e->loop->lookups;
	struct ares_addrinfo_hints hints = {
		.ai_family = e->family, .ai_socktype = SOCK_STREAM,
	};
	struct ares_options ao = {
		.sock_state_cb = sock_state,
		.sock_state_cb_data = e,
		/* glibc's default attempts (resolv.conf's "attempts:"),
		 * not c-ares's 4, whose doubling timeouts would make a
		 * dead name server cost a minute */
		.tries = 2,
	};

	switch (ares_init_options(&e->ch, &ao,
				  ARES_OPT_SOCK_STATE_CB | ARES_OPT_TRIES)) {
	case ARES_SUCCESS:
		break;
	case ARES_ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
	e->have_ch = 1;
	e->pending = 1;
	t->st.queries++;
	ares_set_socket_configure_callback(e->ch, sock_config, NULL);
	if (t->o.timeout_s > 0) {
		ev_timer_set(&e->deadline_w, t->o.timeout_s, 0);
		ev_now_update(e->loop->ev);
		ev_timer_start(e->loop->ev, &e->deadline_w);
	}
	ares_getaddrinfo(e->ch, e->host, NULL, &hints, answer, e);
	return 0;
}

int evr_lookup_start(struct evr_lookup **out, struct evr_loop *loop,
		     const char *host, int family, evr_lookup_fn cb, void *ud)
{
	struct evr__lookups *t = table(loop);
	struct evr_lookup *lk;
	struct lk_entry *e;
	uint64_t now = evr_now_ns();
	int ret;

	if (!t)
		return -ENOMEM;
	if (!host || !cb || (family != AF_UNSPEC && family != AF_INET &&
			     family != AF_INET6))
		return -EINVAL;
	lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	lk->loop = loop;
	lk->cb = cb;
	lk->ud = ud;
	ev_timer_init(&lk->deliver_w, deliver_cb, 0, 0);
	sweep(t, 0);
	for (e = t->entries; e; e = e->next)
		if (e->family == family && !strcmp(e->host, host) &&
		    (e->pending || now < e->expires_ns))
			break;
	if (e && !e->pending) {
		/* known: told from the loop all the same */
		t->st.hits++;
		lk->err = e->err;
		lk->addrs = e->addrs;
		ev_timer_start(loop->ev, &lk->deliver_w);
		*out = lk;
		return 0;
	}
	if (e) {
		/* asked already: wait for the same answer */
		t->st.hits++;
	} else {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->host = strdup(host))) {
			free(e);
			free(lk);
			return -ENOMEM;
		}
		e->loop = loop;
		e->family = family;
		ev_init(&e->tmo_w, tmo_cb);
		ev_init(&e->deadline_w, deadline_cb);
		ret = entry_query(e);
		if (ret) {
			entry_stop(e);
			free(e->host);
			free(e);
			free(lk);
			return ret;
		}
		e->next = t->entries;
		t->entries = e;
	}
	lk->e = e;
	lk->next = e->waiters;
	e->waiters = lk;
	if (e->answered) {
		/* /etc/hosts or a number: answered inside ares_getaddrinfo;
		 * told from the loop (a zero timer: settle() from tmo_w) */
		ev_timer_stop(loop->ev, &e->tmo_w);
		ev_timer_set(&e->tmo_w, 0, 0);
		ev_timer_start(loop->ev, &e->tmo_w);
	} else {
		settle(e);
	}
	*out = lk;
	return 0;
}

void evr_lookup_free(struct evr_lookup *lk)
{
	struct evr_lookup **pp;
	struct lk_entry *e;

	if (!lk)
		return;
	ev_timer_stop(lk->loop->ev, &lk->deliver_w);
	e = lk->e;
	if (e) {
		for (pp = &e->waiters; *pp; pp = &(*pp)->next)
			if (*pp == lk) {
				*pp = lk->next;
				break;
			}
		/* the last one waiting, and an outcome nobody would keep:
		 * the query goes too */
		if (!e->waiters && e->pending && !keeps(lk->loop->lookups))
			entry_unlink_free(e);
	}
	free(lk);
}

int evr_loop_set_lookups(struct evr_loop *l, const struct evr_lookup_opts *o)
{
	struct evr__lookups *t;

	/* (written so that a NaN fails too) */
	if (!o || !(o->cache_s >= 0 && o->cache_s <= EVR_LOOKUP_CACHE_MAX_S) ||
	    !(o->negative_s >= 0 && o->negative_s <= EVR_LOOKUP_CACHE_MAX_S) ||
	    !(o->timeout_s >= 0 && o->timeout_s <= EVR_LOOKUP_TIMEOUT_MAX_S))
		return -EINVAL;
	t = table(l);
	if (!t)
		return -ENOMEM;
	t->o = *o;
	/* what was kept under the old options is looked up again */
	sweep(t, 1);
	return 0;
}

void evr_loop_lookup_stats(struct evr_loop *l, struct evr_lookup_stats *st)
{
	const struct lk_entry *e;

	memset(st, 0, sizeof(*st));
	if (!l->lookups)
		return;
	*st = l->lookups->st;
	st->pending = st->cached = 0;
	for (e = l->lookups->entries; e; e = e->next) {
		if (e->pending)
			st->pending++;
		else
			st->cached++;
	}
}

void evr__lookups_fini(struct evr_loop *l)
{
	struct evr__lookups *t = l->lookups;

	if (!t)
		return;
	while (t->entries)
		entry_unlink_free(t->entries);
	free(t);
	l->lookups = NULL;
}

int evr__addrs_add(struct evr__addrs *a, const struct sockaddr *sa,
		   socklen_t len)
{
	unsigned i;

	if (!sa || !len || len > sizeof(a->ss[0]) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->len[i] == len && !memcmp(&a->ss[i], sa, len))
			return 0;
	if (a->n >= EVR__LOOKUP_MAX)
		return 0;
	memset(&a->ss[a->n], 0, sizeof(a->ss[a->n]));
	memcpy(&a->ss[a->n], sa, len);
	a->len[a->n++] = len;
	return 1;
}

int evr__addrs_pick(const struct evr__addrs *a, int family)
{
	unsigned i;

	for (i = 0; i < a->n; i++)
		if (a->ss[i].ss_family == family)
			return (int)i;
	return -1;
}

unsigned evr__lookup_addrs(const struct evr_lookup *lk,
			   const struct evr__addrs **out)
{
	*out = &lk->addrs;
	return lk->addrs.n;
}

int evr__addr_scope_missing(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const void *)sa;

	return sa && sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !s6->sin6_scope_id;
}
