/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream engines: a client that runs its plan's connections one after
 * another, and a server that accepts and serves any number of clients at
 * once, each connection its own session state machine.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "agg.h"
#include "rdma.h"
#include "session.h"
#include "tcp.h"

#define HIST_LEN 64

struct srv_sess {
	struct evr_sess s;
	struct evr_stream *st;
	struct srv_sess *prev, *next;
	struct sockaddr_storage peer;
	unsigned plan_index;      /* which of our own connections it serves */
};

/* A client connection: the k-th (0..N-1) of its series with -c N. */
struct cli_sess {
	struct evr_sess s;
	unsigned k;
	int connecting;           /* counted in cs_connecting */
};

struct peer_hist {
	struct sockaddr_storage addr; /* port zeroed */
	unsigned next_index;
	uint64_t stamp;
};

struct fork_child {
	ev_child w;
	struct evr_stream *st;
	struct sockaddr_storage peer;
	int last;                 /* the last connection of a client's run */
	struct fork_child *next;
};

struct evr_stream {
	struct evr_loop *loop;
	struct evr_stream_opts o;
	char *host, *bind_addr, *port;
	struct evr_stream_cbs cbs;
	void *ud;
	struct evr_plan plan;
	unsigned next_id;
	int finished;             /* done() has been called */
	int in_child;
	struct evr_xport *xp;     /* TCP or RDMA */
	/* done() waits for closed connections the transport still takes
	 * down (an RDMA close is a short exchange, bounded by timers) */
	int finishing;
	int fin_status;
	struct evr_failure fin_fail;
	int fin_has_fail;
	/* client: the N connections of the current series (-c N), started
	 * in order, at most max_connecting of them connecting at a time */
	struct cli_sess **cs;
	unsigned nconn, max_connecting;
	unsigned cs_started, cs_live, cs_connecting;
	unsigned conn_next;       /* the next series of the plan */
	int progressing, progress_again;
	int failing;              /* a connection failed: cancel the rest */
	struct evr_failure first_fail;
	struct evr_agg agg[EVR_PLAN_MAX_TESTS];
	uint8_t *shared_buf;      /* -c N without -T v: one for all */
	size_t shared_size;
	struct evr_addr dst, src;
	struct evr_pattern spat, rpat;
	/* server */
	int listening;
	struct srv_sess *conns;
	unsigned nconns_live;
	/* server limits (SERVER LIMITS in rstream.1) */
	unsigned max_conns;
	int at_max_conns;         /* refusing: said once, until one is served */
	struct evr_membudget budget;
	struct peer_hist hist[HIST_LEN];
	uint64_t hist_clock;
	struct fork_child *children;
	unsigned forked, reaped;
	int once_status;
	struct evr_failure once_fail;
	/* Embedding rules (stream.h): done() comes from done_w, at the top
	 * of a loop callback, so the host may free the engine in it; a
	 * cancel asked for inside one of our callbacks (cb_depth > 0) runs
	 * from cancel_w once the engine is off the stack. */
	ev_timer done_w, cancel_w;
	unsigned cb_depth;
	int cancel_req;           /* no result/info/conn_failed after cancel */
};

static void done_cb(struct ev_loop *l, ev_timer *w, int revents);
static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents);

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int evr_stream_new(struct evr_stream **out, struct evr_loop *loop,
		   const struct evr_stream_opts *opts,
		   const struct evr_stream_cbs *cbs, void *ud)
{
	struct evr_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->loop = loop;
	st->o = *opts;
	st->host = dup_or_null(opts->host);
	st->bind_addr = dup_or_null(opts->bind_addr);
	st->port = strdup(opts->port ? opts->port : EVR_DEFAULT_PORT);
	if ((opts->host && !st->host) ||
	    (opts->bind_addr && !st->bind_addr) || !st->port) {
		evr_stream_free(st);
		return -ENOMEM;
	}
	st->o.host = st->host;
	st->o.bind_addr = st->bind_addr;
	st->o.port = st->port;
	if (!st->o.stall_ms)
		st->o.stall_ms = EVR_DEFAULT_STALL_MS;
	st->nconn = opts->conns ? opts->conns : 1;
	st->max_connecting = opts->max_connecting ? opts->max_connecting :
			     EVR_DEFAULT_MAX_CONNECTING;
	if (st->nconn > EVR_MAX_CONNS) {
		evr_stream_free(st);
		return -EINVAL;
	}
	st->cbs = *cbs;
	st->ud = ud;
	/* connection ids from 1: 0 is "no connection" (a failure before
	 * one existed, a server's listener) */
	st->next_id = 1;
	st->max_conns = opts->max_conns ? opts->max_conns :
			EVR_DEFAULT_MAX_SERVER_CONNS;
	st->budget.max = opts->max_memory ? opts->max_memory :
			 EVR_DEFAULT_MAX_MEMORY;
	if (st->budget.max > SIZE_MAX)
		st->budget.max = SIZE_MAX;
	/* Duration mode needs the plan negotiated, and its iteration mark
	 * overwrites a data byte, which -T v would check. */
	if (st->o.duration_ms && (st->o.server || st->o.no_negotiate ||
				  st->o.verify)) {
		evr_stream_free(st);
		return -EINVAL;
	}
	ev_timer_init(&st->done_w, done_cb, 0, 0);
	ev_timer_init(&st->cancel_w, cancel_cb, 0, 0);
	if (evr__plan_build(&st->plan, &st->o)) {
		evr_stream_free(st);
		return -EINVAL;
	}
	*out = st;
	return 0;
}

/* done() goes out from the loop, never from inside a session, a
 * transport or an API call: after it the engine touches nothing of its
 * own, so the callback may free it. */
static void done_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_stream *st = evr__container_of(w, struct evr_stream,
						  done_w);

	ev_timer_stop(l, w);
	if (st->cbs.done)
		st->cbs.done(st->ud, st->fin_status,
			     st->fin_has_fail ? &st->fin_fail : NULL,
			     st->in_child);
}

static void finish_now(struct evr_stream *st)
{
	st->finishing = 0;
	st->finished = 1;
	ev_timer_stop(st->loop->ev, &st->cancel_w);
	ev_timer_start(st->loop->ev, &st->done_w);
}

static void finish(struct evr_stream *st, int status,
		   const struct evr_failure *f)
{
	if (st->finished || st->finishing)
		return;
	st->finishing = 1;
	st->fin_status = status;
	st->fin_has_fail = f != NULL;
	if (f)
		st->fin_fail = *f;
	/* Let the last closes complete (our DISCONNECT reaching the peer)
	 * before the program exits; xport_drained finishes then. */
	if (st->xp && st->xp->ops->lingering(st->xp))
		return;
	finish_now(st);
}

static void xport_drained(void *ud)
{
	struct evr_stream *st = ud;

	if (st->finishing)
		finish_now(st);
}

/* Server: the transport turned a connection away (out of file
 * descriptors...), reported once per episode as a dropped connection. */
static void xport_refused(void *ud, int err, const struct sockaddr *peer)
{
	struct evr_stream *st = ud;
	struct evr_failure f;

	if (!st->cbs.conn_failed || st->cancel_req)
		return;
	memset(&f, 0, sizeof(f));
	f.err = err;
	f.phase = EVR_PH_SETUP;
	f.where = err == -EMFILE || err == -ENFILE ?
		  "accept (no file descriptor left: new connections are "
		  "turned away until some close)" : "accept";
	if (peer)
		evr__sockaddr_str(peer, f.peer, sizeof(f.peer));
	st->cb_depth++;
	st->cbs.conn_failed(st->ud, &f);
	st->cb_depth--;
}

static void info(struct evr_stream *st, enum evr_info_kind kind,
		 unsigned conn_id, const char *peer, int ka_on, int ka_idle,
		 int negotiated)
{
	struct evr_info i = {
		.kind = kind,
		.conn_id = conn_id,
		.peer = peer,
		.keepalive_on = ka_on,
		.keepalive_idle = ka_idle,
		.negotiated = negotiated,
	};

	if (st->cbs.info && !st->cancel_req) {
		st->cb_depth++;
		st->cbs.info(st->ud, &i);
		st->cb_depth--;
	}
}

/* --settings: what a connection got, once it is set up.  A transport
 * without the op, or one that cannot tell, reports nothing. */
static void report_settings(struct evr_stream *st, unsigned conn_id,
			    struct evr_conn *c)
{
	struct evr_conn_settings cs;
	struct evr_info i;

	if (!st->o.report_settings || !st->cbs.info || !c->ops->settings ||
	    c->ops->settings(c, &cs))
		return;
	memset(&i, 0, sizeof(i));
	i.kind = EVR_INFO_SETTINGS;
	i.conn_id = conn_id;
	i.peer = cs.peer[0] ? cs.peer : c->peer;
	i.keepalive_on = cs.keepalive_on;
	i.keepalive_idle = cs.keepalive_idle_s;
	i.settings = &cs;
	if (st->cancel_req)
		return;
	st->cb_depth++;
	st->cbs.info(st->ud, &i);
	st->cb_depth--;
}

/* -c N: the connection's own result, then the test's aggregate once all
 * N connections have reported it (they run the same tests in order, so
 * aggregates come out in the plan's order). */
static void client_result_many(struct evr_stream *st, struct evr_sess *s,
			       struct evr_result *r)
{
	struct cli_sess *cs = evr__container_of(s, struct cli_sess, s);
	struct evr_agg *a = &st->agg[s->ti < EVR_PLAN_MAX_TESTS ? s->ti : 0];

	r->conn_index = cs->k + 1;
	if (st->cbs.result)
		st->cbs.result(st->ud, r);
	/* an -ENOMEM leaves the merged percentiles without this
	 * connection's samples, as a lost sample in evr__lat_add() */
	(void)evr__agg_add(a, r, s->lat_valid ? &s->lat : NULL);
	if (a->n < st->nconn)
		return;
	evr__agg_result(a, r);
	r->conn_index = 0;
	r->conn_id = 0;
	if (st->cbs.result && !st->cancel_req)
		st->cbs.result(st->ud, r);
	/* the merged samples go at once: a plan's later tests do not hold
	 * this one's */
	evr__agg_fini(a);
}

static void sess_result(struct evr_sess *s, const struct evr_test *t,
			uint64_t ns)
{
	struct evr_stream *st = s->owner_ud;
	struct evr_result r = {
		.name = t->name,
		.size = t->size,
		.count = t->count,
		.iters = t->iters,
		.bytes = evr__test_bytes(t),
		.elapsed_ns = ns,
		.conn_id = s->id,
		.peer = s->conn ? s->conn->peer : "",
		.lat = s->lat_valid ? &s->lat_res : NULL,
		.start_ns = s->t0,
		.conn_mean_ns = ns,
		.iter_mean_ns = t->iters ? (double)ns / t->iters : 0.0,
	};

	if (st->cancel_req)
		return; /* nothing after a cancel */
	st->cb_depth++;
	if (!st->o.server && st->nconn > 1)
		client_result_many(st, s, &r);
	else if (st->cbs.result)
		st->cbs.result(st->ud, &r);
	st->cb_depth--;
}

static unsigned cli_sess_k(struct evr_sess *s);

static void sess_progress(struct evr_sess *s, const struct evr_progress *p)
{
	struct evr_stream *st = s->owner_ud;
	struct evr_progress q = *p;

	if (!st->cbs.progress)
		return;
	if (!st->o.server && st->nconn > 1) {
		q.conn_index = cli_sess_k(s) + 1;
		q.conn_total = st->nconn;
	}
	st->cbs.progress(st->ud, &q);
}

/* ------------------------------------------------------------------ */
/* client                                                              */

static void client_progress(struct evr_stream *st);

static unsigned cli_sess_k(struct evr_sess *s)
{
	return evr__container_of(s, struct cli_sess, s)->k;
}

static void client_fail(struct evr_stream *st, const struct cli_sess *cs,
			const struct evr_failure *f)
{
	if (st->failing)
		return; /* the first failure is the one reported */
	st->failing = 1;
	st->first_fail = *f;
	if (st->nconn > 1) {
		st->first_fail.conn_index = cs->k + 1;
		st->first_fail.conn_total = st->nconn;
	}
}

static void client_not_connecting(struct evr_stream *st, struct cli_sess *cs)
{
	if (cs->connecting) {
		cs->connecting = 0;
		st->cs_connecting--;
	}
}

static void client_finished(struct evr_sess *s)
{
	struct cli_sess *cs = evr__container_of(s, struct cli_sess, s);
	struct evr_stream *st = s->owner_ud;

	client_not_connecting(st, cs);
	s->fail.conn_id = s->id;
	if (s->state == EVR_SS_FAILED)
		client_fail(st, cs, &s->fail);
	/* verification's counters go on on the next series' connections */
	st->spat = s->spat;
	st->rpat = s->rpat;
	st->cs[cs->k] = NULL;
	st->cs_live--;
	evr__sess_fini(s);
	free(cs);
	client_progress(st);
}

static const struct evr_sess_owner client_owner = {
	.result = sess_result,
	.finished = client_finished,
	.progress = sess_progress,
};

static void xport_connected(void *ud, struct evr_conn *c, int err)
{
	struct evr_stream *st = ud;
	struct evr_sess *s;
	struct cli_sess *cs;

	if (!c->wake)
		return; /* its session has let go of it */
	s = c->wake_ud;
	cs = evr__container_of(s, struct cli_sess, s);
	if (s->conn != c)
		return;
	/* one connect fewer in flight: the next may start */
	client_not_connecting(st, cs);
	if (!err)
		report_settings(st, s->id, c); /* a cancel in it is deferred */
	evr__sess_drive(s, err ? EVR_SE_CONN_ERROR : EVR_SE_CONNECTED, err);
	client_progress(st);
}

/* The rsocket inline size of a connection, as upstream's set_options():
 * the latency series inlines -i bytes, the bandwidth series nothing, and
 * a custom test keeps the transport's default. */
static int conn_inline(const struct evr_stream *st,
		       const struct evr_conn_plan *cp)
{
	switch (cp->opt) {
	case EVR_OPT_LATENCY:
		return st->o.inline_size;
	case EVR_OPT_BANDWIDTH:
		return 0;
	default:
		return -1;
	}
}

/* Open and start connecting the next connection of the series.  Local
 * failures fail the run (client_fail); the machine reports the rest. */
static void client_start_one(struct evr_stream *st)
{
	unsigned idx = st->conn_next - 1;
	unsigned k = st->cs_started++;
	struct evr_failure f;
	struct cli_sess *cs;
	struct evr_sess *s;
	struct evr_conn *c;
	int ret, err = 0;

	memset(&f, 0, sizeof(f));
	cs = malloc(sizeof(*cs));
	if (!cs || evr__sess_init(&cs->s, st->loop, 1, &st->plan.conns[idx],
				  idx, st->plan.nconns, &st->o)) {
		if (cs)
			evr__sess_fini(&cs->s);
		free(cs);
		f.err = -ENOMEM;
		f.where = "malloc";
		cs = NULL;
		goto fail;
	}
	s = &cs->s;
	cs->k = k;
	cs->connecting = 0;
	if (st->shared_buf)
		evr__sess_use_buf(s, st->shared_buf, st->shared_size);
	s->id = st->next_id++;
	s->owner = &client_owner;
	s->owner_ud = st;
	s->spat = st->spat;
	s->rpat = st->rpat;

	ret = st->xp->ops->open(st->xp, &st->dst,
				conn_inline(st, &st->plan.conns[idx]), &c, &f);
	if (ret)
		goto fail_sess;
	if (st->o.keepalive)
		info(st, EVR_INFO_KEEPALIVE, s->id, "", c->ka_on, c->ka_idle,
		     0);
	ret = st->xp->ops->connect(st->xp, c, &st->dst,
				   st->src.valid ? &st->src : NULL, &f, &err);
	if (ret < 0) {
		c->ops->close(c);
		goto fail_sess;
	}
	evr__sess_attach(s, c);
	st->cs[k] = cs;
	st->cs_live++;
	if (ret == EVR_XP_FAILED_NOW) {
		/* Report through the machine, like a late failure. */
		evr__sess_drive(s, EVR_SE_CONN_ERROR, err);
		return;
	}
	cs->connecting = 1;
	st->cs_connecting++;
	evr__sess_drive(s, EVR_SE_READY, 0); /* arms the watchdog */
	return;
fail_sess:
	evr__sess_fini(s);
	free(cs);
	cs = NULL;
fail:
	{
		struct cli_sess dummy = { .k = k };

		client_fail(st, &dummy, &f);
	}
}

static void client_cancel_live(struct evr_stream *st)
{
	unsigned k;

	for (k = 0; k < st->cs_started && st->cs_live; k++)
		if (st->cs[k])
			evr__sess_drive(&st->cs[k]->s, EVR_SE_CANCEL, 0);
}

/* Decide what comes next; safe to call from any callback (a call made
 * while it runs only makes it look again). */
static void client_progress(struct evr_stream *st)
{
	unsigned i;

	if (st->progressing) {
		st->progress_again = 1;
		return;
	}
	st->progressing = 1;
	do {
		st->progress_again = 0;
		if (st->finished || st->finishing)
			break;
		if (st->failing) {
			client_cancel_live(st);
			if (!st->cs_live)
				finish(st, st->first_fail.err,
				       &st->first_fail);
			continue;
		}
		while (!st->failing && st->cs_started < st->nconn &&
		       st->cs_connecting < st->max_connecting)
			client_start_one(st);
		if (st->failing) {
			st->progress_again = 1;
			continue;
		}
		if (st->cs_started < st->nconn || st->cs_live)
			continue;
		if (st->conn_next < st->plan.nconns) {
			/* the next series, N connections again */
			st->conn_next++;
			st->cs_started = 0;
			for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
				evr__agg_fini(&st->agg[i]);
			st->progress_again = 1;
			continue;
		}
		finish(st, 0, NULL);
	} while (st->progress_again);
	st->progressing = 0;
}

static int client_start(struct evr_stream *st, struct evr_failure *f)
{
	unsigned i;
	int ret;

	if (!st->host) {
		f->err = -EINVAL;
		f->where = "no server address";
		return f->err;
	}
	ret = evr__resolve(&st->o, st->host, st->port, 0, &st->dst, f);
	if (ret)
		return ret;
	if (st->bind_addr) {
		/* Upstream binds the source to the server's port, which
		 * clashes on one host; an ephemeral port does not. */
		ret = evr__resolve(&st->o, st->bind_addr, "0", 1, &st->src, f);
		if (ret)
			return ret;
	}
	st->cs = calloc(st->nconn, sizeof(*st->cs));
	if (!st->cs)
		goto nomem;
	if (st->nconn > 1 && !st->o.verify && !st->o.duration_ms) {
		/* Nobody looks at the bytes: one buffer serves all.  Not in
		 * duration mode, whose first byte of an iteration is a mark
		 * that each connection writes for itself. */
		for (i = 0; i < st->plan.nconns; i++)
			if (evr__conn_plan_max_size(&st->plan.conns[i]) >
			    st->shared_size)
				st->shared_size = evr__conn_plan_max_size(
					&st->plan.conns[i]);
		st->shared_buf = calloc(1, st->shared_size);
		if (!st->shared_buf)
			goto nomem;
	}
	for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
		evr__agg_init(&st->agg[i]);
	st->conn_next = 1;
	client_progress(st);
	return 0;
nomem:
	f->err = -ENOMEM;
	f->where = "malloc";
	return f->err;
}

/* ------------------------------------------------------------------ */
/* server                                                              */

static void hist_key(struct sockaddr_storage *k, const struct sockaddr *sa)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (void *)k;

		memcpy(in, sa, sizeof(*in));
		in->sin_port = 0;
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)k;

		memcpy(in6, sa, sizeof(*in6));
		in6->sin6_port = 0;
		in6->sin6_flowinfo = 0;
	}
}

/*
 * An upstream client runs its latency and bandwidth series on two
 * connections and says nothing about which is which.  Remember, per peer
 * address, how far its last run got, so the next connection from it gets
 * the next series of our plan (upstream's server simply counts).
 */
static struct peer_hist *hist_find(struct evr_stream *st,
				   const struct sockaddr *sa, int create)
{
	struct sockaddr_storage k;
	struct peer_hist *oldest = &st->hist[0];
	unsigned i;

	hist_key(&k, sa);
	for (i = 0; i < HIST_LEN; i++) {
		if (st->hist[i].stamp &&
		    !memcmp(&st->hist[i].addr, &k, sizeof(k)))
			return &st->hist[i];
		if (st->hist[i].stamp < oldest->stamp)
			oldest = &st->hist[i];
	}
	if (!create)
		return NULL;
	oldest->addr = k;
	oldest->next_index = 0;
	oldest->stamp = ++st->hist_clock;
	return oldest;
}

static void srv_unlink(struct evr_stream *st, struct srv_sess *ss)
{
	if (ss->prev)
		ss->prev->next = ss->next;
	else
		st->conns = ss->next;
	if (ss->next)
		ss->next->prev = ss->prev;
	st->nconns_live--;
}

static void server_stop(struct evr_stream *st)
{
	if (st->listening) {
		st->listening = 0;
		st->xp->ops->stop_listen(st->xp);
	}
}

static void server_maybe_finish(struct evr_stream *st)
{
	if (!st->listening && !st->conns && st->reaped == st->forked)
		finish(st, st->once_status,
		       st->once_status ? &st->once_fail : NULL);
}

static const struct evr_sess_owner server_owner;

static void server_finished(struct evr_sess *s)
{
	struct srv_sess *ss = evr__container_of(s, struct srv_sess, s);
	struct evr_stream *st = ss->st;
	struct peer_hist *h;
	struct evr_failure fl;
	int ok = s->state == EVR_SS_DONE;
	int last;

	s->fail.conn_id = s->id;
	if (!ok && s->fail.err != -EVR_E_CANCELLED && st->cbs.conn_failed &&
	    !st->cancel_req) {
		st->cb_depth++;
		st->cbs.conn_failed(st->ud, &s->fail);
		st->cb_depth--;
	}
	if (ok)
		info(st, EVR_INFO_CONN_DONE, s->id, s->conn ? s->conn->peer : "",
		     0, 0, s->negotiated);
	if (!s->negotiated && !ok) {
		h = hist_find(st, (struct sockaddr *)&ss->peer, 0);
		if (h)
			h->next_index = 0;
	}
	last = s->negotiated ? s->conn_index + 1 >= s->conn_total :
			       ss->plan_index + 1 >= st->plan.nconns;
	if (st->o.once && !st->in_child && (!ok || last) && st->listening) {
		if (!ok && s->fail.err != -EVR_E_CANCELLED) {
			st->once_status = s->fail.err;
			st->once_fail = s->fail;
		}
		server_stop(st);
	}
	fl = s->fail;
	srv_unlink(st, ss);
	evr__sess_fini(s);
	free(ss);
	if (st->in_child) {
		finish(st, ok ? 0 : fl.err, ok ? NULL : &fl);
		return;
	}
	server_maybe_finish(st);
}

/* Move the peer's history on as soon as our side of the plan is done: an
 * upstream client reconnects for its next series the moment it has our
 * last bytes, possibly before we see its close. */
static void server_plan_done(struct evr_sess *s)
{
	struct srv_sess *ss = evr__container_of(s, struct srv_sess, s);
	struct evr_stream *st = ss->st;
	struct peer_hist *h;

	if (s->negotiated)
		return;
	h = hist_find(st, (struct sockaddr *)&ss->peer, 1);
	h->next_index = (ss->plan_index + 1) % st->plan.nconns;
	h->stamp = ++st->hist_clock;
}


static void child_cb(struct ev_loop *l, ev_child *w, int revents)
{
	struct fork_child *fc = evr__container_of(w, struct fork_child, w);
	struct evr_stream *st = fc->st;
	struct fork_child **pp;

	ev_child_stop(l, w);
	for (pp = &st->children; *pp; pp = &(*pp)->next) {
		if (*pp == fc) {
			*pp = fc->next;
			break;
		}
	}
	st->reaped++;
	if (w->rstatus) {
		struct peer_hist *h = hist_find(st,
						(struct sockaddr *)&fc->peer, 0);

		if (h)
			h->next_index = 0;
	}
	if (st->o.once && st->listening && (fc->last || w->rstatus)) {
		if (w->rstatus && !st->once_status) {
			st->once_status = -EVR_E_EOF;
			memset(&st->once_fail, 0, sizeof(st->once_fail));
			st->once_fail.err = st->once_status;
			st->once_fail.phase = EVR_PH_CLOSE;
			st->once_fail.where = "fork child";
		}
		server_stop(st);
	}
	free(fc);
	server_maybe_finish(st);
}

/* In a -T f child: drop everything that belongs to the parent. */
static void child_detach(struct evr_stream *st, struct srv_sess *keep)
{
	struct srv_sess *ss, *next;
	struct fork_child *fc, *fn;

	ev_loop_fork(st->loop->ev);
	st->in_child = 1;
	server_stop(st);
	for (ss = st->conns; ss; ss = next) {
		next = ss->next;
		if (ss == keep)
			continue;
		evr__sess_stop_watchers(&ss->s);
		srv_unlink(st, ss);
		evr__sess_fini(&ss->s);
		free(ss);
	}
	for (fc = st->children; fc; fc = fn) {
		fn = fc->next;
		ev_child_stop(st->loop->ev, &fc->w);
		free(fc);
	}
	st->children = NULL;
}

static int server_fork(struct evr_stream *st, struct srv_sess *ss)
{
	struct fork_child *fc = calloc(1, sizeof(*fc));
	pid_t pid;

	if (!fc)
		return -ENOMEM;
	fflush(NULL); /* nothing buffered may be written twice */
	pid = fork();
	if (pid < 0) {
		free(fc);
		return -errno;
	}
	if (pid == 0) {
		free(fc);
		child_detach(st, ss);
		return 1;
	}
	fc->st = st;
	fc->peer = ss->peer;
	fc->last = ss->s.negotiated ?
		   ss->s.conn_index + 1 >= ss->s.conn_total :
		   ss->plan_index + 1 >= st->plan.nconns;
	/* The child runs the plan where we cannot see it: count the
	 * connection now, and start the peer over if the child fails. */
	server_plan_done(&ss->s);
	ev_child_init(&fc->w, child_cb, pid, 0);
	ev_child_start(st->loop->ev, &fc->w);
	fc->next = st->children;
	st->children = fc;
	st->forked++;
	return 0;
}

/* -T f: fork once the client is known, so the parent can keep track of
 * which series an upstream client is on. */
static int server_decided(struct evr_sess *s)
{
	struct srv_sess *ss = evr__container_of(s, struct srv_sess, s);
	struct evr_stream *st = ss->st;

	if (!st->o.fork || st->in_child)
		return 0;
	/* On fork failure, serve the connection here rather than drop it. */
	return server_fork(st, ss) == 0;
}

static void server_detached(struct evr_sess *s)
{
	struct srv_sess *ss = evr__container_of(s, struct srv_sess, s);
	struct evr_stream *st = ss->st;

	srv_unlink(st, ss);
	evr__sess_fini(s);
	free(ss);
	server_maybe_finish(st);
}

static const struct evr_sess_owner server_owner = {
	.result = sess_result,
	.plan_done = server_plan_done,
	.decided = server_decided,
	.detached = server_detached,
	.finished = server_finished,
	.progress = sess_progress,
};

/* At --max-conns: tell the peer (an evrdma client prints why; any other
 * sees the close), close at once, and say so once per episode, as the
 * transport does when out of descriptors. */
static void server_turn_away(struct evr_stream *st, struct evr_conn *c,
			     const struct sockaddr *sa)
{
	uint8_t hello[EVR_SYNC_LEN];
	struct evr_failure f;
	char where[160];

	/* Read what the client sent first, so that the close is a FIN
	 * behind our message rather than a reset that may overtake it;
	 * both calls are best effort on a fresh connection. */
	(void)c->ops->recv(c, hello, sizeof(hello));
	(void)c->ops->send(c, evr__busy_msg, EVR_SYNC_LEN);
	c->ops->close(c);
	if (st->at_max_conns || !st->cbs.conn_failed || st->cancel_req)
		return;
	st->at_max_conns = 1;
	memset(&f, 0, sizeof(f));
	f.err = -ECONNREFUSED;
	f.phase = EVR_PH_SETUP;
	snprintf(where, sizeof(where), "accept (at the --max-conns limit "
		 "of %u connections: new ones are turned away until some "
		 "close)", st->max_conns);
	f.where = where;
	evr__sockaddr_str(sa, f.peer, sizeof(f.peer));
	st->cb_depth++;
	st->cbs.conn_failed(st->ud, &f);
	st->cb_depth--;
}

static void server_accept_one(void *ud, struct evr_conn *c,
			      const struct sockaddr *sa)
{
	struct evr_stream *st = ud;
	struct srv_sess *ss;
	struct peer_hist *h;
	unsigned idx = 0;

	if (!st->listening || st->in_child) {
		c->ops->close(c);
		return;
	}
	/* -T f children serve a connection each: they count too */
	if (st->nconns_live + (st->forked - st->reaped) >= st->max_conns) {
		server_turn_away(st, c, sa);
		return;
	}
	st->at_max_conns = 0;
	ss = calloc(1, sizeof(*ss));
	if (!ss) {
		c->ops->close(c);
		return;
	}
	ss->st = st;
	memcpy(&ss->peer, sa, sa->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	h = hist_find(st, sa, 0);
	if (h)
		idx = h->next_index % st->plan.nconns;
	ss->plan_index = idx;
	if (evr__sess_init(&ss->s, st->loop, 0, &st->plan.conns[idx], idx,
			   st->plan.nconns, &st->o)) {
		evr__sess_fini(&ss->s);
		free(ss);
		c->ops->close(c);
		return;
	}
	evr__sess_set_budget(&ss->s, &st->budget);
	ss->s.id = st->next_id++;
	ss->s.owner = &server_owner;
	ss->s.owner_ud = st;
	evr__sess_attach(&ss->s, c);
	ss->next = st->conns;
	if (st->conns)
		st->conns->prev = ss;
	st->conns = ss;
	st->nconns_live++;
	if (st->o.keepalive)
		info(st, EVR_INFO_KEEPALIVE, ss->s.id, c->peer, c->ka_on,
		     c->ka_idle, 0);
	info(st, EVR_INFO_ACCEPTED, ss->s.id, c->peer, 0, 0, 0);
	report_settings(st, ss->s.id, c);
	evr__sess_drive(&ss->s, EVR_SE_CONNECTED, 0);
}

static int server_start(struct evr_stream *st, struct evr_failure *f)
{
	int ka_on = 0, ka_idle = 0;

	if (st->o.fork && !ev_is_default_loop(st->loop->ev)) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_FORK;
		return f->err;
	}
	if (st->xp->ops->listen(st->xp, f, &ka_on, &ka_idle))
		return f->err;
	st->listening = 1;
	if (st->o.keepalive)
		info(st, EVR_INFO_KEEPALIVE, 0, "", ka_on, ka_idle, 0);
	info(st, EVR_INFO_LISTENING, 0, "", 0, 0, 0);
	return 0;
}

/* ------------------------------------------------------------------ */

static const struct evr_xport_cbs xport_cbs = {
	.connected = xport_connected,
	.accepted = server_accept_one,
	.drained = xport_drained,
	.refused = xport_refused,
};

int evr_stream_start(struct evr_stream *st, struct evr_failure *f)
{
	struct evr_failure dummy;
	int ret;

	if (!f)
		f = &dummy;
	memset(f, 0, sizeof(*f));
	f->phase = EVR_PH_SETUP;
	if (st->o.xport == EVR_XPORT_TCP && st->o.addr_fmt == EVR_ADDR_GID) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_GID_TCP;
		return f->err;
	}
	if (!st->xp) {
		ret = st->o.xport == EVR_XPORT_RDMA ?
		      evr__rdma_xport_new(&st->xp, st->loop, &st->o,
					  &xport_cbs, st, f) :
		      evr__tcp_xport_new(&st->xp, st->loop, &st->o,
					 &xport_cbs, st);
		if (ret) {
			if (!f->err)
				f->err = ret;
			if (!f->where)
				f->where = "transport";
			return f->err;
		}
	}
	ret = st->o.server ? server_start(st, f) : client_start(st, f);
	if (ret && !f->err)
		f->err = ret;
	return ret;
}

static void cancel_now(struct evr_stream *st)
{
	struct fork_child *fc;

	if (st->finished || st->finishing)
		return;
	if (!st->o.server) {
		unsigned k;

		/* The first connection cancelled is the failure reported;
		 * the rest follow it. */
		for (k = 0; st->cs && k < st->cs_started; k++) {
			if (st->cs[k]) {
				evr__sess_drive(&st->cs[k]->s, EVR_SE_CANCEL,
						0);
				return;
			}
		}
		finish(st, -EVR_E_CANCELLED, NULL);
		return;
	}
	server_stop(st);
	for (fc = st->children; fc; fc = fc->next)
		kill(fc->w.pid, SIGTERM);
	while (st->conns)
		evr__sess_drive(&st->conns->s, EVR_SE_CANCEL, 0);
	server_maybe_finish(st);
}

static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_stream *st = evr__container_of(w, struct evr_stream,
						  cancel_w);

	ev_timer_stop(l, w);
	cancel_now(st);
}

void evr_stream_cancel(struct evr_stream *st)
{
	if (st->finished || st->finishing)
		return;
	st->cancel_req = 1;
	if (st->cb_depth) {
		/* Called from our own callback: a session or the transport
		 * is below us on the stack; tear down from the loop. */
		ev_timer_start(st->loop->ev, &st->cancel_w);
		return;
	}
	cancel_now(st);
}

void evr_stream_free(struct evr_stream *st)
{
	struct fork_child *fc, *fn;
	unsigned i;

	if (!st)
		return;
	ev_timer_stop(st->loop->ev, &st->done_w);
	ev_timer_stop(st->loop->ev, &st->cancel_w);
	if (st->cs) {
		unsigned k;

		for (k = 0; k < st->nconn; k++) {
			struct cli_sess *cs = st->cs[k];

			if (!cs)
				continue;
			evr__sess_stop_watchers(&cs->s);
			evr__sess_fini(&cs->s);
			free(cs);
		}
		free(st->cs);
	}
	while (st->conns) {
		struct srv_sess *ss = st->conns;

		evr__sess_stop_watchers(&ss->s);
		srv_unlink(st, ss);
		evr__sess_fini(&ss->s);
		free(ss);
	}
	for (fc = st->children; fc; fc = fn) {
		fn = fc->next;
		ev_child_stop(st->loop->ev, &fc->w);
		free(fc);
	}
	if (st->xp) {
		server_stop(st);
		/* after the sessions: their closes may linger in it */
		st->xp->ops->free(st->xp);
	}
	for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
		evr__agg_fini(&st->agg[i]);
	free(st->shared_buf);
	free(st->host);
	free(st->bind_addr);
	free(st->port);
	free(st);
}
