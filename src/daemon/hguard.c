/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The HTTP side's admission and eviction rules: see hguard.h. */
#include "config.h"

#include <netinet/in.h>
#include <string.h>

#include "hguard.h"

const char *const http_drop_names[HD_MAX] = {
#define HTTP_DROP_NAME(e, s) s,
	HTTP_DROP_REASONS(HTTP_DROP_NAME)
#undef HTTP_DROP_NAME
};

void hg_init(struct hguard *g, const struct http_limits *lim)
{
	memset(g, 0, sizeof(*g));
	g->lim = *lim;
}

/* the same client address (the port aside) */
static int same_ip(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return 0;
	if (b->sa_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			       &((const struct sockaddr_in *)b)->sin_addr,
			       sizeof(struct in_addr));
	if (b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return 1; /* no address to tell apart (AF_UNIX): one client */
}

static void idle_unlink(struct hguard *g, struct hg_conn *c)
{
	if (c->iprev)
		c->iprev->inext = c->inext;
	else if (g->ihead == c)
		g->ihead = c->inext;
	else
		return; /* not in the list */
	if (c->inext)
		c->inext->iprev = c->iprev;
	else
		g->itail = c->iprev;
	c->iprev = c->inext = NULL;
}

static void idle_append(struct hguard *g, struct hg_conn *c)
{
	c->inext = NULL;
	c->iprev = g->itail;
	if (g->itail)
		g->itail->inext = c;
	else
		g->ihead = c;
	g->itail = c;
}

struct hg_conn *hg_victim(struct hguard *g, int (*pending)(struct hg_conn *))
{
	struct hg_conn *c;

	for (c = g->ihead; c; c = c->inext)
		if (!(pending && pending(c)))
			return c;
	return NULL;
}

enum hg_verdict hg_admit(struct hguard *g, const struct sockaddr *addr,
			 socklen_t alen, int (*pending)(struct hg_conn *),
			 struct hg_conn **victim)
{
	struct hg_conn *c;
	unsigned mine = 0;

	(void)alen;
	*victim = NULL;
	for (c = g->head; c; c = c->next)
		mine += same_ip(&c->addr, addr);
	if (mine >= g->lim.max_per_ip) {
		for (c = g->ihead; c; c = c->inext)
			if (same_ip(&c->addr, addr) && !(pending && pending(c)))
				break;
		if (!c)
			return HG_REFUSE_PER_IP;
	} else if (g->n >= g->lim.max_conns) {
		c = hg_victim(g, pending);
		if (!c)
			return HG_REFUSE_LIMIT;
	} else {
		return HG_ADMIT;
	}
	hg_drop(g, c);
	*victim = c;
	return HG_EVICT;
}

void hg_add(struct hguard *g, struct hg_conn *c, const struct sockaddr *addr,
	    socklen_t alen, double now)
{
	if (alen > sizeof(c->addr))
		alen = sizeof(c->addr);
	memcpy(&c->addr, addr, alen);
	c->alen = alen;
	c->held = 1;
	c->busy = 0;
	c->served = 0;
	c->since = now;
	c->prev = g->tail;
	c->next = NULL;
	if (g->tail)
		g->tail->next = c;
	else
		g->head = c;
	g->tail = c;
	g->n++;
	idle_append(g, c);
}

void hg_busy(struct hguard *g, struct hg_conn *c)
{
	if (!c->held || c->busy)
		return;
	idle_unlink(g, c);
	c->busy = 1;
}

void hg_idle(struct hguard *g, struct hg_conn *c, double now)
{
	if (!c->held || !c->busy)
		return;
	c->busy = 0;
	c->served = 1;
	c->since = now;
	idle_append(g, c);
}

void hg_drop(struct hguard *g, struct hg_conn *c)
{
	if (!c->held)
		return;
	idle_unlink(g, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		g->tail = c->prev;
	c->prev = c->next = NULL;
	c->held = 0;
	g->n--;
}

struct hg_conn *hg_expired(struct hguard *g, double now)
{
	/* the IDLE list is in the order they became IDLE: the head is the
	 * first to expire */
	if (g->ihead && now >= g->ihead->since + g->lim.request_timeout_s)
		return g->ihead;
	return NULL;
}

double hg_next_deadline(const struct hguard *g)
{
	return g->ihead ? g->ihead->since + g->lim.request_timeout_s : -1;
}
