/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A responder's life: an rstream server engine started on the daemon's
 * loop, listening until the responder is removed.  A start that fails
 * (the port taken, the address not yet up) is logged once and tried
 * again every RESPONDER_RETRY_S; an engine that ends by itself is freed
 * from the loop (never from its own callback) and started again the same
 * way.  Its callbacks count what /metrics shows.
 *
 * Its memory is the agent's, not its peers': at most RESPONDER_MAX_MEMORY
 * of connection buffers and RESPONDER_MAX_CONNS connections unless the
 * configuration says otherwise (a plan beyond the budget is refused, the
 * rstream protocol's way, and counted as reason "budget"), and what a
 * burst of clients took goes back to the system once they are gone:
 * buffers of RESPONDER_MMAP_MIN bytes and more are mapped on their own
 * (unmapped when freed, where glibc's adaptive threshold would soon keep
 * them in its heap), and the heap is trimmed when the responder has
 * served many at once and is idle again.
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reason.h"
#include "responder.h"

const char *const resp_reason_names[RR_MAX] = {
#define NAME(e, name, codes) name,
	RESP_REASONS(NAME)
#undef NAME
};

static const int reason_codes[RR_MAX][REASON_MAXCODES] = {
#define CODES(e, name, codes) REASON_CODES(codes),
	RESP_REASONS(CODES)
#undef CODES
};

int resp_reason_of(const struct evr_failure *f)
{
	/* before a session: the listener turned it away */
	if (!f->conn_id) {
		if (f->err == -ECONNREFUSED && f->detail == EVR_REJECT_CONNS)
			return -1;
		if (f->err == -EMFILE || f->err == -ENFILE)
			return RR_FDS;
		return RR_ERROR;
	}
	if (f->detail == EVR_REJECT_BUDGET &&
	    (f->err == -EVR_E_REJECTED || f->err == -ENOBUFS))
		return RR_BUDGET;
	return reason_by_code(reason_codes, RR_MAX, f->err, RR_ERROR);
}

/* A burst over (at most a quarter of its connections left, a peer's
 * long connection may stay): trim once the engine has freed them (from
 * the loop, a moment later). */
static void trim_later(struct responder *r)
{
	if (r->peak_active >= RESPONDER_TRIM_CONNS &&
	    r->st.active <= r->peak_active / 4 &&
	    !ev_is_active(&r->trim_w)) {
		ev_timer_set(&r->trim_w, RESPONDER_TRIM_S, 0.);
		ev_timer_start(r->evl, &r->trim_w);
	}
}

static void conn_gone(struct responder *r)
{
	if (r->st.active)
		r->st.active--;
	trim_later(r);
}

static void trim_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct responder *r = w->data;

	(void)l;
	(void)revents;
	if (r->st.active > r->peak_active / 4)
		return; /* a new burst: its end trims */
	r->peak_active = r->st.active;
	malloc_trim(0);
}

static void on_info(void *ud, const struct evr_info *i)
{
	struct responder *r = ud;

	switch (i->kind) {
	case EVR_INFO_LISTENING:
		r->st.listening = 1;
		if (r->failing)
			plog(PLOG_INFO, "responder %s: listening",
			     r->cfg->label);
		r->failing = 0;
		break;
	case EVR_INFO_ACCEPTED:
		r->st.served++;
		if (++r->st.active > r->peak_active)
			r->peak_active = r->st.active;
		break;
	case EVR_INFO_CONN_DONE:
		r->st.done++;
		conn_gone(r);
		break;
	case EVR_INFO_TURNED_AWAY:
		r->st.dropped[RR_CONNS]++;
		break;
	default:
		break;
	}
}

static void on_conn_failed(void *ud, const struct evr_failure *f)
{
	struct responder *r = ud;
	char why[256];
	int reason = resp_reason_of(f);

	/* a session's end (an accepted connection) */
	if (f->conn_id)
		conn_gone(r);
	if (reason < 0)
		return;
	r->st.dropped[reason]++;
	evr_failure_str(f, why, sizeof(why));
	plog(PLOG_DEBUG, "responder %s: dropped a connection (%s): %s",
	     r->cfg->label, resp_reason_names[reason], why);
}

static void retry_later(struct responder *r)
{
	ev_timer_stop(r->evl, &r->retry_w);
	ev_timer_set(&r->retry_w, RESPONDER_RETRY_S, 0.);
	ev_timer_start(r->evl, &r->retry_w);
}

static void on_done(void *ud, int status, const struct evr_failure *f,
		    int in_child)
{
	struct responder *r = ud;
	char why[256] = "it stopped";

	(void)in_child;
	if (f)
		evr_failure_str(f, why, sizeof(why));
	if (!r->st.listening) {
		/* its start, which ends here when bind was a name looked
		 * up first: as a start that failed at once */
		if (!r->failing)
			plog(PLOG_WARN, "responder %s: cannot listen: %s; "
			     "trying again every %g s", r->cfg->label, why,
			     RESPONDER_RETRY_S);
	} else {
		plog(PLOG_WARN, "responder %s: stopped (status %d: %s); "
		     "listening again in %g s", r->cfg->label, status, why,
		     RESPONDER_RETRY_S);
	}
	r->st.listening = 0;
	r->st.active = 0;
	trim_later(r);
	r->failing = 1;
	/* not from its own callback: the engine goes from the loop */
	ev_timer_stop(r->evl, &r->reap_w);
	ev_timer_set(&r->reap_w, 0., 0.);
	ev_timer_start(r->evl, &r->reap_w);
	retry_later(r);
}

static void reap_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct responder *r = w->data;

	(void)l;
	(void)revents;
	evr_stream_free(r->srv);
	r->srv = NULL;
}

static void start_now(struct responder *r)
{
	static const struct evr_stream_cbs cbs = {
		.info = on_info,
		.conn_failed = on_conn_failed,
		.done = on_done,
	};
	const struct responder_cfg *c = r->cfg;
	struct evr_stream_opts o;
	struct evr_failure f;
	char port[8], why[256];
	int ret;

	/* its keys (pconf.c), and what every responder is */
	o = c->o;
	o.server = 1;
	o.bind_addr = c->bind;
	snprintf(port, sizeof(port), "%u", c->port);
	o.port = port;
	o.transport = c->transport;
	o.io = EVR_IO_ASYNC;        /* sleep in the loop between messages */
	if (!o.max_conns)
		o.max_conns = RESPONDER_MAX_CONNS;
	if (!o.max_memory)
		o.max_memory = RESPONDER_MAX_MEMORY;
	memset(&f, 0, sizeof(f));
	ret = evr_stream_new(&r->srv, r->loop, &o, &cbs, r);
	if (ret) {
		r->srv = NULL;
		snprintf(why, sizeof(why), "%s", strerror(-ret));
	} else {
		ret = evr_stream_start(r->srv, &f);
		if (ret) {
			evr_failure_str(&f, why, sizeof(why));
			evr_stream_free(r->srv);
			r->srv = NULL;
		}
	}
	if (ret) {
		if (!r->failing)
			plog(PLOG_WARN, "responder %s: cannot listen: %s; "
			     "trying again every %g s", c->label, why,
			     RESPONDER_RETRY_S);
		r->failing = 1;
		retry_later(r);
		return;
	}
	/* "listening" is logged, and failing cleared, by on_info() */
}

static void retry_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct responder *r = w->data;

	(void)l;
	(void)revents;
	if (r->srv) /* an ended engine whose reap has not run yet */
		reap_cb(r->evl, &r->reap_w, 0);
	ev_timer_stop(r->evl, &r->reap_w);
	start_now(r);
}

/* The process's malloc, once: a fixed mmap threshold (glibc's adaptive
 * one rises to the largest block freed, up to 32 MiB, after which
 * connection buffers come from the heap and stay there). */
static void malloc_setup(void)
{
	static int done;

	if (!done)
		(void)mallopt(M_MMAP_THRESHOLD, RESPONDER_MMAP_MIN);
	done = 1;
}

int responder_new(struct responder **out, struct evr_loop *loop,
		  const struct responder_cfg *cfg)
{
	struct responder *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	malloc_setup();
	r->cfg = cfg;
	r->loop = loop;
	r->evl = evr_loop_ev(loop);
	ev_timer_init(&r->retry_w, retry_cb, RESPONDER_RETRY_S, 0.);
	ev_timer_init(&r->reap_w, reap_cb, 0., 0.);
	ev_timer_init(&r->trim_w, trim_cb, RESPONDER_TRIM_S, 0.);
	r->retry_w.data = r;
	r->reap_w.data = r;
	r->trim_w.data = r;
	*out = r;
	return 0;
}

void responder_start(struct responder *r)
{
	start_now(r);
}

void responder_free(struct responder *r)
{
	if (!r)
		return;
	ev_timer_stop(r->evl, &r->retry_w);
	ev_timer_stop(r->evl, &r->reap_w);
	ev_timer_stop(r->evl, &r->trim_w);
	/* at once: its sockets close, the port is free for a successor */
	evr_stream_free(r->srv);
	free(r);
}
