/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The close of an RDMA connection as a pure function (rclose.h). */
#include "config.h"

#include "rclose.h"
#include "../../loop/loop.h"

static const char *const state_names[] = EVR__STATE_NAMES(EVR_RC_STATES);

static const char *const disc_names[] = EVR__STATE_NAMES(EVR_RC_DISCS);

const char *evr__rc_state_name(enum evr_rc_state st)
{
	return EVR__NAME_AT(state_names, st);
}

const char *evr__rc_disc_name(enum evr_rc_disc d)
{
	return EVR__NAME_AT(disc_names, d);
}

int evr__rc_setting_up(enum evr_rc_state st)
{
	switch (st) {
	case EVR_RC_NEW:
	case EVR_RC_RESOLVE_ADDR:
	case EVR_RC_RESOLVE_ROUTE:
	case EVR_RC_CONNECTING:
	case EVR_RC_ACCEPTING:
		return 1;
	default:
		return 0;
	}
}

int evr__rc_closing(enum evr_rc_state st)
{
	return st == EVR_RC_CLOSING || st == EVR_RC_PEER_CLOSING;
}

int evr__rc_disconnected(enum evr_rc_state st)
{
	return st == EVR_RC_DISCONNECTING || st == EVR_RC_CLOSED;
}

int evr__rc_established(enum evr_rc_state st)
{
	return st == EVR_RC_OPEN || evr__rc_closing(st) ||
	       st == EVR_RC_DISCONNECTING;
}

static int posted(enum evr_rc_disc d)
{
	return d == EVR_RC_DISC_POSTED || d == EVR_RC_DISC_DONE;
}

/* The peer, the CM, an error or the device's going ended the
 * connection. */
static int ended(unsigned facts)
{
	return !!(facts & (EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC |
			   EVR_RC_F_ERR | EVR_RC_F_DEV_GONE));
}

/* The peer's DISCONNECT came first and we owe it none: an rsocket peer
 * may still post a credit update after its DISCONNECT, and its rclose()
 * blocks until every send it posted has completed.  Moving our QP to
 * error at once leaves that last message unacknowledged, and the peer's
 * close hung (over rxe, for more than 30 s).  So the QP stays up,
 * acknowledging, until the peer's DREQ (its close is done) or a short
 * timer. */
static int peer_closing_first(enum evr_rc_disc d, unsigned facts)
{
	return (facts & EVR_RC_F_PEER_DISC) && !posted(d) &&
	       !(facts & (EVR_RC_F_CM_DISC | EVR_RC_F_ERR));
}

static struct evr_rc_next teardown(struct evr_rc_next n,
					 unsigned facts)
{
	/* established and not yet disconnected: say so to the peer, unless
	 * the device is going (its CM id is gone already) */
	if ((n.state == EVR_RC_OPEN || evr__rc_closing(n.state)) &&
	    !(facts & EVR_RC_F_DEV_GONE))
		n.acts |= EVR_RC_A_DREQ;
	n.state = EVR_RC_CLOSED;
	n.acts |= EVR_RC_A_TEARDOWN;
	return n;
}

/* Step 4 of the close: QP to error and DREQ (or DREP); then wait for CM
 * DISCONNECTED, unless it came already. */
static struct evr_rc_next disconnect(struct evr_rc_next n, unsigned facts)
{
	n.acts |= EVR_RC_A_DISCONNECT;
	if (facts & EVR_RC_F_CM_DISC) {
		n.state = EVR_RC_CLOSED;
		n.acts |= EVR_RC_A_TEARDOWN;
	} else {
		n.state = EVR_RC_DISCONNECTING;
		n.acts |= EVR_RC_A_TIMER_DISC;
	}
	return n;
}

/* A connect (or accept) failed: the owner closes what it holds; what the
 * engine never saw goes at once. */
static struct evr_rc_next conn_fail(struct evr_rc_next n, unsigned facts)
{
	n.acts |= EVR_RC_A_CONN_FAILED;
	if (!(facts & EVR_RC_F_OWNED))
		return teardown(n, facts);
	n.state = EVR_RC_FAILED;
	n.acts |= EVR_RC_A_NOTIFY;
	return n;
}

/* The owner let go of an open connection (its shutdown has decided about
 * our DISCONNECT already). */
static struct evr_rc_next on_close(struct evr_rc_next n, unsigned facts)
{
	if (n.state != EVR_RC_OPEN)
		return teardown(n, facts); /* never established: nothing to say */
	if (facts & EVR_RC_F_DEV_GONE)
		return teardown(n, facts); /* nothing can be said */
	if (peer_closing_first(n.disc, facts)) {
		n.state = EVR_RC_PEER_CLOSING;
		n.acts |= EVR_RC_A_TIMER_GRACE | EVR_RC_A_WATCH;
		return n;
	}
	/* our DISCONNECT waiting for a control slot: the completions free
	 * one, and the first pass over them decides (E_POLLED) */
	if (n.disc != EVR_RC_DISC_WANTED &&
	    (!posted(n.disc) || ended(facts)))
		return disconnect(n, facts);
	n.state = EVR_RC_CLOSING;
	n.acts |= EVR_RC_A_TIMER_CLOSE | EVR_RC_A_WATCH;
	return n;
}

struct evr_rc_next evr__rc_close_next(enum evr_rc_state st,
				      enum evr_rc_disc disc,
				      enum evr_rc_event ev, unsigned facts)
{
	struct evr_rc_next n = { st, disc, 0 };

	if (st == EVR_RC_CLOSED)
		return n; /* gone: nothing can happen to it any more */
	switch (ev) {
	case EVR_RC_E_SHUT:
		/* upstream's rshutdown(SHUT_RDWR): DISCONNECT, unless the
		 * peer's (or the CM's) came first */
		if (disc != EVR_RC_DISC_NONE)
			break;
		if (st == EVR_RC_OPEN && !ended(facts)) {
			n.disc = EVR_RC_DISC_WANTED;
			n.acts = EVR_RC_A_PROCESS;
		} else {
			n.disc = EVR_RC_DISC_NOT_OWED;
		}
		break;
	case EVR_RC_E_DISC_POSTED:
		if (disc == EVR_RC_DISC_WANTED)
			n.disc = EVR_RC_DISC_POSTED;
		break;
	case EVR_RC_E_DISC_DONE:
		if (disc == EVR_RC_DISC_WANTED || disc == EVR_RC_DISC_POSTED)
			n.disc = EVR_RC_DISC_DONE;
		break;
	case EVR_RC_E_CLOSE:
		return on_close(n, facts);
	case EVR_RC_E_POLLED:
		if (!evr__rc_closing(st) || peer_closing_first(disc, facts))
			break;
		/* a DISCONNECT still waiting for its slot waits no more,
		 * unless it waits behind our last bytes (the close timer
		 * bounds that) */
		if (disc == EVR_RC_DISC_WANTED && (facts & EVR_RC_F_UNSENT) &&
		    !ended(facts))
			break;
		if (disc == EVR_RC_DISC_DONE || !posted(disc) || ended(facts))
			return disconnect(n, facts);
		break;
	case EVR_RC_E_TIMER:
		if (evr__rc_closing(st)) {
			n.acts = EVR_RC_A_TIMEOUT;
			return disconnect(n, facts);
		}
		return teardown(n, facts); /* DISCONNECTING: the CM said nothing */
	case EVR_RC_E_CM_DISC:
		switch (st) {
		case EVR_RC_OPEN:
			n.acts = EVR_RC_A_WAKE;
			break;
		case EVR_RC_ACCEPTING: /* the engine never saw it */
		case EVR_RC_DISCONNECTING:
			return teardown(n, facts);
		case EVR_RC_CLOSING:
		case EVR_RC_PEER_CLOSING:
			return disconnect(n, facts);
		case EVR_RC_CONNECTING:
			return conn_fail(n, facts);
		default:
			break;
		}
		break;
	case EVR_RC_E_CONN_FAIL:
		if (evr__rc_setting_up(st))
			return conn_fail(n, facts);
		break;
	case EVR_RC_E_ABORT:
		return teardown(n, facts);
	case EVR_RC_E_PORT_DOWN:
		/* the work requests come back flushed, then the owner (who
		 * is told) closes it, or the close goes on to disconnect */
		n.acts = EVR_RC_A_FLUSH;
		if (st == EVR_RC_OPEN)
			n.acts |= EVR_RC_A_WAKE;
		else if (evr__rc_setting_up(st))
			return conn_fail(n, facts);
		else if (evr__rc_closing(st))
			return disconnect(n, facts);
		break;
	case EVR_RC_E_DEV_GONE:
		/* everything goes at once, unless the owner holds it: then
		 * it is told, and its close tears it down */
		if (st == EVR_RC_OPEN && (facts & EVR_RC_F_OWNED))
			n.acts = EVR_RC_A_WAKE;
		else if (evr__rc_setting_up(st) && st != EVR_RC_ACCEPTING)
			return conn_fail(n, facts);
		else if (st != EVR_RC_FAILED || !(facts & EVR_RC_F_OWNED))
			return teardown(n, facts);
		break;
	default:
		break;
	}
	return n;
}
