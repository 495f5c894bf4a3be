/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The negotiation (negotiate.c), a sub-machine of the session's: it reads
 * the control buffer (ctl), fills it and its own reply status, and says
 * what the machine takes from it (the plan, features, the pattern
 * counters, the connection's place in its series) and what comes next;
 * session.c does both.  It calls nothing of session.c's, and changes no
 * field of the machine's but its own (tests/e2e/owners.sh).
 */
#ifndef EVR_SRC_NEGOTIATE_H
#define EVR_SRC_NEGOTIATE_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

enum evr_nego_do {
	EVR_NEGO_OP,            /* the next operation: state st, send (or
				 * receive) len bytes of ctl from off */
	EVR_NEGO_FAIL,          /* FAILED: err, detail, where */
	EVR_NEGO_UPSTREAM,      /* client: an upstream server; that exchange
				 * was the first test's sync: its data */
	EVR_NEGO_BEGIN,         /* the first test's sync (negotiated, or a
				 * client that does not negotiate) */
	EVR_NEGO_BEGIN_DECIDED, /* server: negotiated: the first test's
				 * sync, then the owner decides */
	EVR_NEGO_FIRST_SYNC,    /* server: ctl holds an upstream client's
				 * first sync: check it, answer it, then the
				 * owner decides */
	EVR_NEGO_PLAN,          /* server: the plan is good: a buffer for
				 * transfers of need bytes, then
				 * evr__nego_plan_take() */
};

/* What the machine takes from the negotiation, before it acts. */
enum evr_nego_take {
	EVR_NEGO_T_PLAN = 1u << 0,   /* server: the client's plan (plan) */
	EVR_NEGO_T_PATS = 1u << 1,   /* verification's next counters */
	EVR_NEGO_T_PLACE = 1u << 2,  /* its place in the client's series */
	EVR_NEGO_T_START = 1u << 3,  /* at the first test (ti = 0) */
	EVR_NEGO_T_REWIND = 1u << 4, /* ... and its first iteration and
				      * transfer */
	EVR_NEGO_T_SPLIT = 1u << 5,  /* client: the server stamps: the
				      * parts' samples, and the kernel's
				      * arrival stamps */
};

struct evr_nego_next {
	enum evr_nego_do what;
	enum evr_sess_state st;
	int send;
	size_t off, len;
	int err, detail;
	const char *where;
	size_t need;
	/* taken first (negotiate.c's act() clears the step, above, and
	 * keeps these): EVR_NEGO_T_*, and the features set, then cleared */
	unsigned take;
	unsigned feat_set, feat_clear;
	struct evr_conn_plan plan;
	uint8_t pat_send, pat_recv;  /* the next send and receive counters */
	unsigned conn_index, conn_total;
};

/* Connected: the first step (HELLO, or the server's first receive). */
void evr__nego_start(struct evr_sess *s, struct evr_nego_next *n);
/* A step of the negotiation (HELLO_SEND to REPLY_SEND) has moved all its
 * bytes: what comes next. */
void evr__nego_done(struct evr_sess *s, struct evr_nego_next *n);
/* After EVR_NEGO_PLAN: buf_err is 0 (the buffer is had), -ENOBUFS (the
 * budget) or -ENOMEM; the reply to send. */
void evr__nego_plan_take(struct evr_sess *s, int buf_err,
			 struct evr_nego_next *n);

#endif
