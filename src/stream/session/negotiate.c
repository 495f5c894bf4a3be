/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session machine's negotiation (session.h's HELLO_SEND to
 * REPLY_SEND), a sub-machine: the client's HELLO and plan, the server's
 * ACK, its check of the plan against its limits and its reply (with the
 * features it takes: END marks, --split's hold stamps), and the server's
 * fallback when the first bytes are an upstream client's sync.  It
 * decides, the machine acts: each step returns what comes next (struct
 * evr_nego_next: an operation on the control buffer, a failure, the
 * first test), and session.c carries it out.  It calls nothing of
 * session.c's (scripts/layers.sh).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "negotiate.h"

/* The next step; what the machine takes (take and after) stays as set. */
static void act(struct evr_nego_next *n, enum evr_nego_do what)
{
	memset(n, 0, offsetof(struct evr_nego_next, take));
	n->what = what;
}

static void op(struct evr_nego_next *n, enum evr_sess_state st, int send,
	       size_t off, size_t len)
{
	act(n, EVR_NEGO_OP);
	n->st = st;
	n->send = send;
	n->off = off;
	n->len = len;
}

static void fail(struct evr_nego_next *n, int err, int detail,
		 const char *where)
{
	act(n, EVR_NEGO_FAIL);
	n->err = err;
	n->detail = detail;
	n->where = where;
}

/* A feature the machine takes on (on) or drops. */
static void feat(struct evr_nego_next *n, unsigned f, int on)
{
	if (on) {
		n->feat_set |= f;
		n->feat_clear &= ~f;
	} else {
		n->feat_clear |= f;
		n->feat_set &= ~f;
	}
}

static void encode_plan(struct evr_sess *s, struct evr_nego_next *n)
{
	struct evr_plan_hdr h = {
		.version = evr__sess_has(s, EVR_SF_DURATION) ?
				   EVR_WIRE_VERSION_DURATION :
					 EVR_WIRE_VERSION,
		.flags = (evr__sess_has(s, EVR_SF_VERIFY) ?
				  EVR_PLAN_F_VERIFY : 0) |
			 (evr__sess_has(s, EVR_SF_DURATION) ?
				  EVR_PLAN_F_DURATION : 0),
		.ntests = (uint16_t)s->plan.ntests,
		.conn_index = (uint16_t)s->conn_index,
		.conn_total = (uint16_t)s->conn_total,
		.pat_send = s->spat.next,
		.pat_recv = s->rpat.next,
	};
	unsigned i;

	evr__plan_hdr_encode(s->ctl, &h);
	for (i = 0; i < s->plan.ntests; i++) {
		struct evr_test *t = &s->plan.tests[i];

		if (evr__sess_has(s, EVR_SF_SPLIT) &&
		    !evr__sess_has(s, EVR_SF_VERIFY) && t->size >= EVR_HOLD_LEN)
			t->flags |= EVR_TEST_F_HOLD;
	}
	for (i = 0; i < s->plan.ntests; i++)
		evr__plan_entry_encode(s->ctl + EVR_PLAN_HDR_LEN +
				       i * EVR_PLAN_ENTRY_LEN,
				       &s->plan.tests[i]);
	op(n, EVR_SS_PLAN_SEND, 1, 0,
	   EVR_PLAN_HDR_LEN + s->plan.ntests * EVR_PLAN_ENTRY_LEN);
}

static void reply(struct evr_sess *s, int status, struct evr_nego_next *n)
{
	uint32_t limit = EVR_MAX_XFER_SIZE;

	s->reply_status = status;
	/* what the budget has left for one more buffer */
	if (status == EVR_PLAN_E_BUDGET && s->budget) {
		size_t used = s->budget->used - s->charged;
		size_t left = used < s->budget->max ?
			      s->budget->max - used : 0;

		limit = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	}
	evr__plan_reply_encode(s->ctl, status, limit);
	if (status == EVR_PLAN_OK)
		evr__plan_reply_set_features(s->ctl, EVR_REPLY_F_END |
						      EVR_REPLY_F_HOLD);
	op(n, EVR_SS_REPLY_SEND, 1, 0, EVR_PLAN_REPLY_LEN);
}

/* Server: the plan's entries from ctl into np; 0 or the reply's status */
static int plan_decode(const struct evr_sess *s, struct evr_conn_plan *np)
{
	struct evr_plan_hdr h;
	unsigned i;
	int st;

	evr__plan_hdr_decode(s->ctl, &h); /* checked in PLAN_HDR_RECV */
	memset(np, 0, sizeof(*np));
	np->opt = EVR_OPT_MIXED;
	np->ntests = h.ntests;
	for (i = 0; i < h.ntests; i++) {
		st = evr__plan_entry_decode(s->ctl + EVR_PLAN_HDR_LEN +
					    i * EVR_PLAN_ENTRY_LEN,
					    &np->tests[i], EVR_MAX_XFER_SIZE);
		if (st)
			return st;
	}
	return 0;
}

/* Server: the client's plan entries have arrived: a reply if one is
 * bad, else what its largest transfer needs (EVR_NEGO_PLAN: the machine
 * gets the buffer, then evr__nego_plan_take()).  What the plan can cost
 * us is ours to bound, not the peer's. */
static void plan_received(struct evr_sess *s, struct evr_nego_next *n)
{
	struct evr_conn_plan np;
	int st = plan_decode(s, &np);

	if (st) {
		reply(s, st, n);
		return;
	}
	act(n, EVR_NEGO_PLAN);
	n->need = evr__conn_plan_max_size(&np);
}

void evr__nego_plan_take(struct evr_sess *s, int buf_err,
			 struct evr_nego_next *n)
{
	struct evr_plan_hdr h;
	struct evr_conn_plan np;
	unsigned i;

	memset(n, 0, sizeof(*n));
	if (buf_err) {
		reply(s, buf_err == -ENOBUFS ? EVR_PLAN_E_BUDGET :
					       EVR_PLAN_E_NOMEM, n);
		return;
	}
	evr__plan_hdr_decode(s->ctl, &h);
	(void)plan_decode(s, &np); /* as plan_received() found it */
	n->take |= EVR_NEGO_T_PLAN | EVR_NEGO_T_PLACE;
	n->plan = np;
	/* The server follows the client's plan, verification included; the
	 * client's send counter is where our receive counter starts. */
	feat(n, EVR_SF_VERIFY, h.flags & EVR_PLAN_F_VERIFY);
	feat(n, EVR_SF_DURATION, h.flags & EVR_PLAN_F_DURATION);
	if (h.flags & EVR_PLAN_F_VERIFY) {
		n->take |= EVR_NEGO_T_PATS;
		n->pat_recv = h.pat_send;
		n->pat_send = h.pat_recv;
	}
	n->conn_index = h.conn_index;
	n->conn_total = h.conn_total;
	for (i = 0; i < np.ntests; i++)
		if (np.tests[i].flags & EVR_TEST_F_HOLD)
			break;
	/* the request's arrival, from the kernel's clock where it has one */
	if (i < np.ntests && s->conn && s->conn->ops->rx_stamps)
		(void)s->conn->ops->rx_stamps(s->conn);
	reply(s, EVR_PLAN_OK, n);
}

/* Server: the first 16 bytes of a connection were not a HELLO, so this is
 * an upstream client (or ours in verify mode) and they were the sync of
 * the first test.  A verifying client is known by its pattern, and where
 * its counter stands: the exchange is symmetric, so our send counter
 * starts there too (this is what keeps -T f and reconnections right).
 * The machine takes it from there (EVR_NEGO_FIRST_SYNC). */
static void first_sync(struct evr_sess *s, struct evr_nego_next *n)
{
	uint8_t first;

	n->take |= EVR_NEGO_T_START | EVR_NEGO_T_REWIND;
	if (evr__pattern_detect(s->ctl, EVR_SYNC_LEN, &first)) {
		feat(n, EVR_SF_VERIFY, 1);
		n->take |= EVR_NEGO_T_PATS;
		n->pat_recv = first;
		n->pat_send = first;
	}
	act(n, EVR_NEGO_FIRST_SYNC);
}

void evr__nego_start(struct evr_sess *s, struct evr_nego_next *n)
{
	memset(n, 0, sizeof(*n));
	if (!s->client) {
		op(n, EVR_SS_FIRST_RECV, 0, 0, EVR_SYNC_LEN);
	} else if (evr__sess_has(s, EVR_SF_NEGOTIATE)) {
		memcpy(s->ctl, evr__hello_msg, EVR_SYNC_LEN);
		op(n, EVR_SS_HELLO_SEND, 1, 0, EVR_SYNC_LEN);
	} else {
		act(n, EVR_NEGO_BEGIN);
	}
}

/* Client: the server answered our HELLO: an evrdma server's ACK (the
 * plan follows), busy, or upstream's first sync (upstream serves one
 * connection, and no -D). */
static void hello_answered(struct evr_sess *s, struct evr_nego_next *n)
{
	if (evr__is_busy(s->ctl)) {
		fail(n, -EVR_E_REJECTED, EVR_PLAN_E_CONNS, "server busy");
	} else if (evr__is_ack(s->ctl)) {
		encode_plan(s, n);
	} else if (evr__sess_has(s, EVR_SF_DURATION)) {
		/* An upstream server cannot learn where a test ends: give
		 * up before any data moves. */
		fail(n, -EVR_E_NOTSUP, EVR_NOTSUP_DURATION, NULL);
	} else if (s->side_by_side > 1) {
		/* ... nor serve more than one connection at a time: the
		 * others would wait in its backlog until it closes it (a
		 * reset, or the stall timeout) */
		fail(n, -EVR_E_NOTSUP, EVR_NOTSUP_CONNS, NULL);
	} else {
		/* An upstream server: that exchange was the first test's
		 * sync. */
		act(n, EVR_NEGO_UPSTREAM);
	}
}

/* Client: the server's reply to our plan: what it takes (END marks, hold
 * stamps), or why it refused. */
static void reply_received(struct evr_sess *s, struct evr_nego_next *n)
{
	int st = evr__plan_reply_decode(s->ctl, NULL);
	unsigned rf;
	int hold;

	if (st < 0) {
		fail(n, -EVR_E_PROTO, 0, "plan reply");
		return;
	}
	if (st) {
		fail(n, -EVR_E_REJECTED, st, "plan");
		return;
	}
	rf = evr__plan_reply_features(s->ctl);
	hold = evr__sess_has(s, EVR_SF_SPLIT) && (rf & EVR_REPLY_F_HOLD);
	feat(n, EVR_SF_NEGOTIATED, 1);
	feat(n, EVR_SF_END, rf & EVR_REPLY_F_END);
	feat(n, EVR_SF_HOLD, hold);
	if (hold)
		n->take |= EVR_NEGO_T_SPLIT;
	act(n, EVR_NEGO_BEGIN);
}

void evr__nego_done(struct evr_sess *s, struct evr_nego_next *n)
{
	struct evr_plan_hdr h;
	int st;

	memset(n, 0, sizeof(*n));
	switch (s->state) {
	case EVR_SS_HELLO_SEND:
		op(n, EVR_SS_HELLO_RECV, 0, 0, EVR_SYNC_LEN);
		return;
	case EVR_SS_HELLO_RECV:
		hello_answered(s, n);
		return;
	case EVR_SS_PLAN_SEND:
		op(n, EVR_SS_REPLY_RECV, 0, 0, EVR_PLAN_REPLY_LEN);
		return;
	case EVR_SS_REPLY_RECV:
		reply_received(s, n);
		return;
	case EVR_SS_FIRST_RECV:
		if (evr__is_hello(s->ctl)) {
			memcpy(s->ctl, evr__ack_msg, EVR_SYNC_LEN);
			op(n, EVR_SS_ACK_SEND, 1, 0, EVR_SYNC_LEN);
			return;
		}
		first_sync(s, n);
		return;
	case EVR_SS_ACK_SEND:
		op(n, EVR_SS_PLAN_HDR_RECV, 0, 0, EVR_PLAN_HDR_LEN);
		return;
	case EVR_SS_PLAN_HDR_RECV:
		st = evr__plan_hdr_decode(s->ctl, &h);
		if (st < 0)
			fail(n, -EVR_E_PROTO, 0, "plan header");
		else if (st)
			reply(s, st, n);
		else
			op(n, EVR_SS_PLAN_RECV, 0, EVR_PLAN_HDR_LEN,
			   (size_t)h.ntests * EVR_PLAN_ENTRY_LEN);
		return;
	case EVR_SS_PLAN_RECV:
		plan_received(s, n);
		return;
	case EVR_SS_REPLY_SEND:
		if (s->reply_status) {
			fail(n, -EVR_E_REJECTED, s->reply_status, "plan");
			return;
		}
		feat(n, EVR_SF_NEGOTIATED, 1);
		n->take |= EVR_NEGO_T_START;
		act(n, EVR_NEGO_BEGIN_DECIDED);
		return;
	default:
		fail(n, -EVR_E_PROTO, 0, "state");
		return;
	}
}
