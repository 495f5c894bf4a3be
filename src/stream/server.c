/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The server engine: accepts and serves any number of clients at once,
 * each connection its own session, within its limits (--max-conns,
 * --max-memory); remembers per peer address how far an upstream client's
 * run got (peer history); with -T f forks a child per connection; with
 * --once stops after one client's run.  A failed connection is reported
 * (conn_failed) and dropped; the server serves on.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stream_int.h"

#define HIST_LEN 64

struct stream_server;

struct srv_sess {
	struct evr_sess s;
	struct stream_server *sv;
	struct srv_sess *prev, *next;
	struct sockaddr_storage peer;
	unsigned plan_index;      /* which of our own connections it serves */
};

struct peer_hist {
	struct sockaddr_storage addr; /* port zeroed */
	unsigned next_index;
	uint64_t stamp;
};

struct fork_child {
	ev_child w;
	struct stream_server *sv;
	struct sockaddr_storage peer;
	int last;                 /* the last connection of a client's run */
	struct fork_child *next;
};

struct stream_server {
	struct evr_stream st;     /* first: evr_stream_free() frees it */
	int listening;
	struct srv_sess *conns;
	unsigned nconns_live;
	/* limits (SERVER LIMITS in rstream.1) */
	unsigned max_conns;
	int at_max_conns;         /* refusing: said once, until one is served */
	struct evr_membudget budget;
	struct peer_hist hist[HIST_LEN];
	uint64_t hist_clock;
	struct fork_child *children;
	unsigned forked, reaped;
	/* --once: how the run ended (0, or the failure) */
	int once_status;
	struct evr_failure once_fail;
};

_Static_assert(offsetof(struct stream_server, st) == 0,
	       "evr_stream_free() frees the engine through its st");

static struct stream_server *server_of(struct evr_stream *st)
{
	return evr__container_of(st, struct stream_server, st);
}

static struct srv_sess *srv_sess_of(struct evr_sess *s)
{
	return evr__container_of(s, struct srv_sess, s);
}

static void server_result(struct evr_sess *s, const struct evr_test *t,
			  uint64_t ns)
{
	struct evr_stream *st = s->owner_ud;
	struct evr_result r;

	evr__stream_result_init(&r, s, t, ns);
	EVR__STREAM_EMIT(st, result, &r);
}

/* (progress is not counted in cb_depth: the session calls it last, from
 * its own timer, and nothing of ours is below it on the stack) */
static void server_sess_progress(struct evr_sess *s,
				 const struct evr_progress *p)
{
	struct evr_stream *st = s->owner_ud;

	if (st->cbs.progress)
		st->cbs.progress(st->ud, p);
}

/* The transport turned a connection away (out of file descriptors...),
 * reported once per episode as a dropped connection. */
static void server_refused(void *ud, int err, const struct sockaddr *peer)
{
	struct evr_stream *st = ud;
	struct evr_failure f;

	memset(&f, 0, sizeof(f));
	f.err = err;
	f.phase = EVR_PH_SETUP;
	f.where = err == -EMFILE || err == -ENFILE ?
		  "accept (no file descriptor left: new connections are "
		  "turned away until some close)" : "accept";
	if (peer)
		evr__sockaddr_str(peer, f.peer, sizeof(f.peer));
	EVR__STREAM_EMIT(st, conn_failed, &f);
}

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
static struct peer_hist *hist_find(struct stream_server *sv,
				   const struct sockaddr *sa, int create)
{
	struct sockaddr_storage k;
	struct peer_hist *oldest = &sv->hist[0];
	unsigned i;

	hist_key(&k, sa);
	for (i = 0; i < HIST_LEN; i++) {
		if (sv->hist[i].stamp &&
		    !memcmp(&sv->hist[i].addr, &k, sizeof(k)))
			return &sv->hist[i];
		if (sv->hist[i].stamp < oldest->stamp)
			oldest = &sv->hist[i];
	}
	if (!create)
		return NULL;
	oldest->addr = k;
	oldest->next_index = 0;
	oldest->stamp = ++sv->hist_clock;
	return oldest;
}

/* The peer's run failed: its next connection starts our plan over. */
static void hist_restart(struct stream_server *sv, const struct sockaddr *sa)
{
	struct peer_hist *h = hist_find(sv, sa, 0);

	if (h)
		h->next_index = 0;
}

/* The connection is the last of its client's run: by the plan the client
 * sent, or, for an upstream client, by where ours ends. */
static int srv_sess_last(const struct srv_sess *ss)
{
	const struct evr_sess *s = &ss->s;

	return evr__sess_has(s, EVR_SF_NEGOTIATED) ?
		s->conn_index + 1 >= s->conn_total :
			       ss->plan_index + 1 >= ss->sv->st.plan.nconns;
}

static void srv_unlink(struct stream_server *sv, struct srv_sess *ss)
{
	if (ss->prev)
		ss->prev->next = ss->next;
	else
		sv->conns = ss->next;
	if (ss->next)
		ss->next->prev = ss->prev;
	sv->nconns_live--;
}

static void srv_sess_free(struct stream_server *sv, struct srv_sess *ss)
{
	srv_unlink(sv, ss);
	evr__sess_fini(&ss->s);
	free(ss);
}

static void server_stop(struct stream_server *sv)
{
	if (sv->listening) {
		sv->listening = 0;
		sv->st.xp->ops->stop_listen(sv->st.xp);
	}
}

/* Finished once nothing is left: no listener, connection or child. */
static void server_maybe_finish(struct stream_server *sv)
{
	if (!sv->listening && !sv->conns && sv->reaped == sv->forked)
		evr__stream_finish(&sv->st, sv->once_status,
				   sv->once_status ? &sv->once_fail : NULL);
}

static void server_finished(struct evr_sess *s)
{
	struct srv_sess *ss = srv_sess_of(s);
	struct stream_server *sv = ss->sv;
	struct evr_stream *st = &sv->st;
	struct evr_failure fl;
	int ok = s->state == EVR_SS_DONE;

	if (!ok && s->fail.err != -EVR_E_CANCELLED)
		EVR__STREAM_EMIT(st, conn_failed, &s->fail);
	if (ok) {
		struct evr_info i = {
			.kind = EVR_INFO_CONN_DONE,
			.conn_id = s->id,
			.peer = s->conn ? s->conn->peer : "",
			.negotiated = evr__sess_has(s, EVR_SF_NEGOTIATED),
		};

		EVR__STREAM_EMIT(st, info, &i);
	}
	if (!evr__sess_has(s, EVR_SF_NEGOTIATED) && !ok)
		hist_restart(sv, (struct sockaddr *)&ss->peer);
	if (st->o.once && !st->in_child && (!ok || srv_sess_last(ss)) &&
	    sv->listening) {
		if (!ok && s->fail.err != -EVR_E_CANCELLED) {
			sv->once_status = s->fail.err;
			sv->once_fail = s->fail;
		}
		server_stop(sv);
	}
	fl = s->fail;
	srv_sess_free(sv, ss);
	if (st->in_child) {
		evr__stream_finish(st, ok ? 0 : fl.err, ok ? NULL : &fl);
		return;
	}
	server_maybe_finish(sv);
}

/* Move the peer's history on as soon as our side of the plan is done: an
 * upstream client reconnects for its next series the moment it has our
 * last bytes, possibly before we see its close. */
static void server_plan_done(struct evr_sess *s)
{
	struct srv_sess *ss = srv_sess_of(s);
	struct stream_server *sv = ss->sv;
	struct peer_hist *h;

	if (evr__sess_has(s, EVR_SF_NEGOTIATED))
		return;
	h = hist_find(sv, (struct sockaddr *)&ss->peer, 1);
	h->next_index = (ss->plan_index + 1) % sv->st.plan.nconns;
	h->stamp = ++sv->hist_clock;
}

static void child_cb(struct ev_loop *l, ev_child *w, int revents)
{
	struct fork_child *fc = evr__container_of(w, struct fork_child, w);
	struct stream_server *sv = fc->sv;
	struct fork_child **pp;

	ev_child_stop(l, w);
	for (pp = &sv->children; *pp; pp = &(*pp)->next) {
		if (*pp == fc) {
			*pp = fc->next;
			break;
		}
	}
	sv->reaped++;
	if (w->rstatus)
		hist_restart(sv, (struct sockaddr *)&fc->peer);
	if (sv->st.o.once && sv->listening && (fc->last || w->rstatus)) {
		if (w->rstatus && !sv->once_status) {
			sv->once_status = -EVR_E_EOF;
			memset(&sv->once_fail, 0, sizeof(sv->once_fail));
			sv->once_fail.err = sv->once_status;
			sv->once_fail.phase = EVR_PH_CLOSE;
			sv->once_fail.where = "fork child";
		}
		server_stop(sv);
	}
	free(fc);
	server_maybe_finish(sv);
}

static void children_forget(struct stream_server *sv)
{
	struct fork_child *fc, *fn;

	for (fc = sv->children; fc; fc = fn) {
		fn = fc->next;
		ev_child_stop(sv->st.loop->ev, &fc->w);
		free(fc);
	}
	sv->children = NULL;
}

/* In a -T f child: drop everything that belongs to the parent. */
static void child_detach(struct stream_server *sv, struct srv_sess *keep)
{
	struct srv_sess *ss, *next;

	ev_loop_fork(sv->st.loop->ev);
	sv->st.in_child = 1;
	server_stop(sv);
	for (ss = sv->conns; ss; ss = next) {
		next = ss->next;
		if (ss == keep)
			continue;
		evr__sess_stop_watchers(&ss->s);
		srv_sess_free(sv, ss);
	}
	children_forget(sv);
}

static int server_fork(struct stream_server *sv, struct srv_sess *ss)
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
		child_detach(sv, ss);
		return 1;
	}
	fc->sv = sv;
	fc->peer = ss->peer;
	fc->last = srv_sess_last(ss);
	/* The child runs the plan where we cannot see it: count the
	 * connection now, and start the peer over if the child fails. */
	server_plan_done(&ss->s);
	ev_child_init(&fc->w, child_cb, pid, 0);
	ev_child_start(sv->st.loop->ev, &fc->w);
	fc->next = sv->children;
	sv->children = fc;
	sv->forked++;
	return 0;
}

/* -T f: fork once the client is known, so the parent can keep track of
 * which series an upstream client is on. */
static int server_decided(struct evr_sess *s)
{
	struct srv_sess *ss = srv_sess_of(s);
	struct stream_server *sv = ss->sv;

	if (!sv->st.o.fork || sv->st.in_child)
		return 0;
	/* On fork failure, serve the connection here rather than drop it. */
	return server_fork(sv, ss) == 0;
}

static void server_detached(struct evr_sess *s)
{
	struct srv_sess *ss = srv_sess_of(s);
	struct stream_server *sv = ss->sv;

	srv_sess_free(sv, ss);
	server_maybe_finish(sv);
}

static const struct evr_sess_owner server_owner = {
	.result = server_result,
	.plan_done = server_plan_done,
	.decided = server_decided,
	.detached = server_detached,
	.finished = server_finished,
	.progress = server_sess_progress,
};

/* At --max-conns: tell the peer (an evrdma client prints why; any other
 * sees the close), close at once, and say so once per episode, as the
 * transport does when out of descriptors. */
static void server_turn_away(struct stream_server *sv, struct evr_conn *c,
			     const struct sockaddr *sa)
{
	struct evr_stream *st = &sv->st;
	uint8_t hello[EVR_SYNC_LEN];
	struct evr_failure f;
	struct evr_info i = { .kind = EVR_INFO_TURNED_AWAY };

	/* Read what the client sent first, so that the close is a FIN
	 * behind our message rather than a reset that may overtake it;
	 * both calls are best effort on a fresh connection. */
	(void)c->ops->recv(c, hello, sizeof(hello));
	(void)c->ops->send(c, evr__busy_msg, EVR_SYNC_LEN, 0);
	c->ops->close(c);
	if (!evr__stream_reporting(st))
		return;
	/* every one, for a host that counts them (evrdma-probed's dropped
	 * connections); the conn_failed below stays once per episode, the
	 * line rstream prints */
	memset(&f, 0, sizeof(f));
	evr__sockaddr_str(sa, f.peer, sizeof(f.peer));
	i.peer = f.peer;
	EVR__STREAM_EMIT(st, info, &i);
	if (sv->at_max_conns || !st->cbs.conn_failed ||
	    !evr__stream_reporting(st))
		return;
	sv->at_max_conns = 1;
	memset(&f, 0, sizeof(f));
	f.err = -ECONNREFUSED;
	f.phase = EVR_PH_SETUP;
	f.where = "accept";
	f.detail = EVR_REJECT_CONNS;    /* the limit it met, a fact */
	evr__sockaddr_str(sa, f.peer, sizeof(f.peer));
	EVR__STREAM_EMIT(st, conn_failed, &f);
}

/* A session for connection c from sa, on the series of our plan the
 * peer's history says, linked in; NULL when out of memory. */
static struct srv_sess *srv_sess_new(struct stream_server *sv,
				     struct evr_conn *c,
				     const struct sockaddr *sa)
{
	struct evr_stream *st = &sv->st;
	struct srv_sess *ss = calloc(1, sizeof(*ss));
	struct peer_hist *h;
	unsigned idx = 0;

	if (!ss)
		return NULL;
	ss->sv = sv;
	memcpy(&ss->peer, sa, sa->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	h = hist_find(sv, sa, 0);
	if (h)
		idx = h->next_index % st->plan.nconns;
	ss->plan_index = idx;
	if (evr__sess_init(&ss->s, st->loop, 0, &st->plan.conns[idx], idx,
			   st->plan.nconns, &st->o)) {
		evr__sess_fini(&ss->s);
		free(ss);
		return NULL;
	}
	evr__sess_set_budget(&ss->s, &sv->budget);
	ss->s.id = st->next_id++;
	ss->s.owner = &server_owner;
	ss->s.owner_ud = st;
	evr__sess_attach(&ss->s, c);
	ss->next = sv->conns;
	if (sv->conns)
		sv->conns->prev = ss;
	sv->conns = ss;
	sv->nconns_live++;
	return ss;
}

static void server_accepted(void *ud, struct evr_conn *c,
			    const struct sockaddr *sa)
{
	struct stream_server *sv = server_of(ud);
	struct evr_stream *st = &sv->st;
	struct srv_sess *ss;
	struct evr_info i;

	if (!sv->listening || st->in_child) {
		c->ops->close(c);
		return;
	}
	/* -T f children serve a connection each: they count too */
	if (sv->nconns_live + (sv->forked - sv->reaped) >= sv->max_conns) {
		server_turn_away(sv, c, sa);
		return;
	}
	sv->at_max_conns = 0;
	ss = srv_sess_new(sv, c, sa);
	if (!ss) {
		c->ops->close(c);
		return;
	}
	if (st->o.keepalive) {
		i = (struct evr_info){
			.kind = EVR_INFO_KEEPALIVE,
			.conn_id = ss->s.id,
			.peer = c->peer,
			.keepalive_on = c->ka_on,
			.keepalive_idle = c->ka_idle,
		};
		EVR__STREAM_EMIT(st, info, &i);
	}
	i = (struct evr_info){
		.kind = EVR_INFO_ACCEPTED,
		.conn_id = ss->s.id,
		.peer = c->peer,
	};
	EVR__STREAM_EMIT(st, info, &i);
	evr__stream_settings(st, ss->s.id, c);
	evr__sess_drive(&ss->s, EVR_SE_CONNECTED, 0);
}

static int server_start(struct evr_stream *st, struct evr_failure *f)
{
	struct stream_server *sv = server_of(st);
	struct evr_info i;
	char local[128] = "";
	int ka_on = 0, ka_idle = 0;

	if (st->o.fork && !ev_is_default_loop(st->loop->ev)) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_FORK;
		return f->err;
	}
	if (st->xp->ops->listen(st->xp, f, &ka_on, &ka_idle))
		return f->err;
	sv->listening = 1;
	/* before the first info(): a cancel from it finds a server to stop */
	evr__stream_set_state(st, EVR_STREAM_RUNNING);
	if (st->o.keepalive) {
		i = (struct evr_info){
			.kind = EVR_INFO_KEEPALIVE,
			.peer = "",
			.keepalive_on = ka_on,
			.keepalive_idle = ka_idle,
		};
		EVR__STREAM_EMIT(st, info, &i);
	}
	if (st->xp->ops->listen_addr)
		st->xp->ops->listen_addr(st->xp, local, sizeof(local));
	i = (struct evr_info){ .kind = EVR_INFO_LISTENING, .peer = "",
			       .local = local };
	EVR__STREAM_EMIT(st, info, &i);
	return 0;
}

/* Stop listening, tell the -T f children, cancel every connection; the
 * server finishes when the last child is reaped. */
static void server_cancel(struct evr_stream *st)
{
	struct stream_server *sv = server_of(st);
	struct fork_child *fc;

	server_stop(sv);
	for (fc = sv->children; fc; fc = fc->next)
		kill(fc->w.pid, SIGTERM);
	while (sv->conns)
		evr__sess_drive(&sv->conns->s, EVR_SE_CANCEL, 0);
	server_maybe_finish(sv);
}

static void server_release(struct evr_stream *st)
{
	struct stream_server *sv = server_of(st);

	while (sv->conns) {
		evr__sess_stop_watchers(&sv->conns->s);
		srv_sess_free(sv, sv->conns);
	}
	children_forget(sv);
	server_stop(sv);
}

static const struct evr_xport_cbs server_xport_cbs = {
	.accepted = server_accepted,
	.drained = evr__stream_drained,
	.refused = server_refused,
};

static const struct evr__stream_engine server_engine = {
	.name = "server",
	.xcbs = &server_xport_cbs,
	.start = server_start,
	.cancel = server_cancel,
	.release = server_release,
};

struct evr_stream *evr__server_new(const struct evr_stream_opts *o)
{
	struct stream_server *sv = calloc(1, sizeof(*sv));

	if (!sv)
		return NULL;
	sv->st.eng = &server_engine;
	sv->max_conns = o->max_conns ? o->max_conns :
			EVR_DEFAULT_MAX_SERVER_CONNS;
	sv->budget.max = o->max_memory ? o->max_memory :
			 EVR_DEFAULT_MAX_MEMORY;
	if (sv->budget.max > SIZE_MAX)
		sv->budget.max = SIZE_MAX;
	return &sv->st;
}
