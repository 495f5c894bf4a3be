/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Who may hold a connection to /metrics: the admission and eviction rules
 * of the HTTP side, apart from libmicrohttpd so that a unit test drives
 * them (http.c applies them to real sockets).
 *
 * A connection is IDLE while it owes us a request (just accepted, or
 * kept alive after a response) and BUSY from its complete request to the
 * end of the response.  A scrape sends its request at once, so an IDLE
 * connection that stays IDLE costs a slot and gives nothing.  As nginx
 * reuses its "reusable" connections when it runs out: a new connection
 * is never turned away for want of room while an IDLE one can go; the
 * IDLE connection that has waited longest is closed (evicted) instead.
 *   - a client address at max_per_ip: its own longest-waiting IDLE
 *     connection goes, never another address's;
 *   - max_conns reached: the longest-waiting IDLE connection of any
 *     address goes;
 *   - nothing IDLE to close: the new connection is turned away;
 *   - no descriptor left for accept(): the longest-waiting IDLE
 *     connection of any address goes (hg_victim()).
 * An IDLE connection whose request has come in, not read yet (it will be
 * BUSY at the next MHD_run()), is not one to close: passed over.
 * An IDLE connection past request_timeout_s is closed: reason timeout
 * if it never sent a request, none if it was only kept alive after its
 * answers (HTTP keep-alive's end, as nginx's keepalive_timeout: a scraper
 * that keeps its connection between scrapes is no offender).
 * BUSY connections are never evicted: a scrape being answered finishes;
 * a client that does not read its answer is libmicrohttpd's inactivity
 * timeout's.  The per-address limit bounds how many BUSY connections
 * one address can pin, so that others always find room.
 */
#ifndef EVR_PROBED_HGUARD_H
#define EVR_PROBED_HGUARD_H

#include <stdint.h>
#include <sys/socket.h>

/* the "http" configuration object; defaults and ranges in pconf.c */
struct http_limits {
	unsigned max_conns;     /* connections held at once */
	unsigned max_per_ip;    /* ... from one client address */
	double request_timeout_s;
};

#define HTTP_DEFAULT_MAX_CONNS 64
#define HTTP_DEFAULT_MAX_PER_IP 16
#define HTTP_DEFAULT_REQUEST_TIMEOUT_S 5.0
#define HTTP_MAX_CONNS_MAX 4096

/* why a connection was closed or turned away by us: the reason label of
 * evrdma_http_connections_dropped_total */
#define HTTP_DROP_REASONS(X) \
	X(EVICTED, "evicted") \
	X(TIMEOUT, "timeout") \
	X(PER_IP, "per_ip") \
	X(LIMIT, "limit") \
	X(FDS, "fds") \
	X(ERROR, "error")
enum http_drop {
#define HTTP_DROP_ENUM(e, s) HD_##e,
	HTTP_DROP_REASONS(HTTP_DROP_ENUM)
#undef HTTP_DROP_ENUM
	HD_MAX
};
extern const char *const http_drop_names[HD_MAX];

struct http_stats {
	uint64_t accepted;      /* connections taken in */
	uint64_t requests;      /* complete requests answered */
	unsigned open;          /* held now (IDLE + BUSY) */
	uint64_t dropped[HD_MAX];
};

struct hg_conn {
	struct hg_conn *prev, *next;     /* every held connection */
	struct hg_conn *iprev, *inext;   /* the IDLE ones, longest first */
	struct sockaddr_storage addr;
	socklen_t alen;
	int busy;
	int served;     /* has had an answer: IDLE now is keep-alive */
	int held;       /* counted; 0 once dropped, while its close goes on */
	double since;   /* IDLE since (accepted, or last response sent) */
	void *ud;       /* the owner's (http.c: the socket) */
};

struct hguard {
	struct http_limits lim;
	struct hg_conn *head, *tail;
	struct hg_conn *ihead, *itail;
	unsigned n;     /* held */
};

enum hg_verdict {
	HG_ADMIT,       /* room: take it */
	HG_EVICT,       /* take it after closing *victim (dropped already) */
	HG_REFUSE_PER_IP, /* its address holds max_per_ip, none IDLE */
	HG_REFUSE_LIMIT,  /* max_conns held, none IDLE */
};

void hg_init(struct hguard *g, const struct http_limits *lim);
/* A new connection from addr: what to do.  HG_EVICT: *victim is out of
 * the counts (hg_drop()), for the caller to close.  pending(c), if not
 * NULL, says that an IDLE connection has bytes waiting that the server
 * has not read yet (its request, arrived): such a one is passed over. */
enum hg_verdict hg_admit(struct hguard *g, const struct sockaddr *addr,
			 socklen_t alen, int (*pending)(struct hg_conn *),
			 struct hg_conn **victim);
/* The IDLE connection of any address that has waited longest, passing
 * over the pending ones, or NULL: the one to close when the process has
 * no descriptor left for a new connection.  Not dropped. */
struct hg_conn *hg_victim(struct hguard *g, int (*pending)(struct hg_conn *));
/* c (zeroed by the caller but for ud) is held, IDLE since now */
void hg_add(struct hguard *g, struct hg_conn *c, const struct sockaddr *addr,
	    socklen_t alen, double now);
void hg_busy(struct hguard *g, struct hg_conn *c);
void hg_idle(struct hguard *g, struct hg_conn *c, double now);
/* no longer held or counted (idempotent); its memory stays the caller's */
void hg_drop(struct hguard *g, struct hg_conn *c);
/* The IDLE connection longest past its deadline at now, or NULL. */
struct hg_conn *hg_expired(struct hguard *g, double now);
/* When the next IDLE connection expires (absolute), or -1: none. */
double hg_next_deadline(const struct hguard *g);

#endif
