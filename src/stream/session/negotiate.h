/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The negotiation (negotiate.c), a sub-machine of the session's: it reads
 * and fills the machine's negotiation fields (ctl, the plan, reply
 * status, features) and says what comes next; session.c does it.  It
 * calls nothing of session.c's.
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

struct evr_nego_next {
	enum evr_nego_do what;
	enum evr_sess_state st;
	int send;
	size_t off, len;
	int err, detail;
	const char *where;
	size_t need;
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
