/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The client engine: runs its plan's series one after another, each as N
 * connections side by side (-c N, at most max_connecting of them
 * connecting at a time), and sums each test up over the N once all have
 * reported it (agg.h).  The first connection to fail ends the run: the
 * client goes FAILING and cancels the others.
 *
 * A server name with several addresses: they are tried in turn (as curl
 * and ssh do).  Until a connection is made, one that fails to connect
 * the way a next address may mend (refused, unreachable, timed out)
 * starts again on the next, and the run fails only on the last, with
 * its error and how many were tried.  Each address has its source with
 * -b: the bind name's first address of its family.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "stream_int.h"

/* A client connection: the k-th (0..N-1) of its series with -c N. */
struct cli_sess {
	struct evr_sess s;
	unsigned k;
	unsigned tgi;             /* its address: tg[tgi] */
	int connecting;           /* counted in cs_connecting */
};

/* An address to try: the server's, and its source (-b) of its family. */
struct cli_target {
	struct evr_addr dst, src;
};

struct stream_client {
	struct evr_stream st;     /* first: evr_stream_free() frees it */
	/* the N connections of the current series, started in order */
	struct cli_sess **cs;
	unsigned nconn, max_connecting;
	unsigned cs_started, cs_live, cs_connecting;
	unsigned cs_up;           /* --all-at-once: at their gate, in this
				   * series */
	unsigned conn_next;       /* the next series of the plan */
	int progressing, progress_again; /* client_progress() re-entered */
	struct evr_failure first_fail; /* FAILING: what the run ends with */
	struct evr_agg agg[EVR_PLAN_MAX_TESTS];
	uint8_t *shared_buf;      /* -c N without -T v: one for all */
	size_t shared_size;
	struct cli_target tg[EVR__LOOKUP_MAX];
	unsigned ntg, tg_cur;     /* the addresses; the one tried now */
	int tg_settled;           /* a connection was made: tg_cur it is */
	uint8_t *redo;            /* connection k starts again on tg_cur */
	unsigned nredo;
	struct evr_pattern spat, rpat;
};

_Static_assert(offsetof(struct stream_client, st) == 0,
	       "evr_stream_free() frees the engine through its st");

static struct stream_client *client_of(struct evr_stream *st)
{
	return evr__container_of(st, struct stream_client, st);
}

static struct cli_sess *cli_sess_of(struct evr_sess *s)
{
	return evr__container_of(s, struct cli_sess, s);
}

static void client_progress(struct stream_client *cl);

/* -c N: the connection's own result, then the test's aggregate once all
 * N connections have reported it (they run the same tests in order, so
 * aggregates come out in the plan's order). */
static void client_result_many(struct stream_client *cl, struct evr_sess *s,
			       struct evr_result *r)
{
	struct evr_agg *a = &cl->agg[s->ti < EVR_PLAN_MAX_TESTS ? s->ti : 0];

	r->conn_index = cli_sess_of(s)->k + 1;
	EVR__STREAM_EMIT(&cl->st, result, r);
	/* an -ENOMEM leaves the merged percentiles without this
	 * connection's samples, as a lost sample in evr__lat_add() */
	(void)evr__agg_add(a, r, evr__sess_lat_valid(s) ? &s->lat : NULL);
	if (a->n < cl->nconn)
		return;
	evr__agg_result(a, r);
	r->conn_index = 0;
	r->conn_id = 0;
	EVR__STREAM_EMIT(&cl->st, result, r); /* not if cancelled in the first */
	/* the merged samples go at once: a plan's later tests do not hold
	 * this one's */
	evr__agg_fini(a);
}

static void client_result(struct evr_sess *s, const struct evr_test *t,
			  uint64_t ns)
{
	struct stream_client *cl = client_of(s->owner_ud);
	struct evr_result r;

	if (!evr__stream_reporting(&cl->st))
		return; /* nothing after a cancel, not even into the sums */
	evr__stream_result_init(&r, s, t, ns);
	if (cl->nconn > 1)
		client_result_many(cl, s, &r);
	else
		EVR__STREAM_EMIT(&cl->st, result, &r);
}

/* (progress is not counted in cb_depth: the session calls it last, from
 * its own timer, and nothing of ours is below it on the stack) */
static void client_sess_progress(struct evr_sess *s,
				 const struct evr_progress *p)
{
	struct stream_client *cl = client_of(s->owner_ud);
	struct evr_progress q = *p;

	if (!cl->st.cbs.progress)
		return;
	if (cl->nconn > 1) {
		q.conn_index = cli_sess_of(s)->k + 1;
		q.conn_total = cl->nconn;
	}
	cl->st.cbs.progress(cl->st.ud, &q);
}

/* A failure before the connection was made: the connections still
 * connecting then are let finish, and each that fails the same way is
 * counted (conn_same) instead of one named at random by the order of
 * their events. */
static int at_connect(const struct evr_failure *f)
{
	return f->phase == EVR_PH_SETUP || f->phase == EVR_PH_CONNECT;
}

/* A failure to connect before any connection was made, with a name of
 * several addresses: how many were tried (the last failed with f). */
static unsigned addrs_tried(const struct stream_client *cl,
			    const struct evr_failure *f)
{
	if (!at_connect(f) || cl->ntg < 2 || cl->tg_settled)
		return 0;
	return cl->tg_cur + 1;
}

/* Connection k (0-based) failed with f: the first failure is the run's;
 * later ones the same at connect count with it. */
static void client_fail(struct stream_client *cl, unsigned k,
			const struct evr_failure *f)
{
	struct evr_failure *ff = &cl->first_fail;

	if (cl->st.state == EVR_STREAM_FAILING) {
		if (cl->nconn > 1 && at_connect(ff) && f->err == ff->err &&
		    f->phase == ff->phase) {
			ff->conn_same++;
			if (k + 1 < ff->conn_index)
				ff->conn_index = k + 1;
		}
		return;
	}
	if (cl->st.state != EVR_STREAM_RUNNING &&
	    cl->st.state != EVR_STREAM_CANCELLING)
		return;
	*ff = *f;
	ff->conn_same = 1;
	ff->addrs_tried = addrs_tried(cl, f);
	if (cl->nconn > 1) {
		ff->conn_index = k + 1;
		ff->conn_total = cl->nconn;
	}
	evr__stream_set_state(&cl->st, EVR_STREAM_FAILING);
}

static void client_not_connecting(struct stream_client *cl,
				  struct cli_sess *cs)
{
	if (cs->connecting) {
		cs->connecting = 0;
		cl->cs_connecting--;
	}
}

/* Connect failures a next address may mend: refused, unreachable, not
 * from here, timed out (the kernel's, or the connect's stall timeout). */
static int next_worthy(const struct evr_failure *f)
{
	if (f->phase != EVR_PH_CONNECT)
		return 0;
	switch (-f->err) {
	case ECONNREFUSED:
	case ENETUNREACH:
	case ENETDOWN:
	case EHOSTUNREACH:
	case EADDRNOTAVAIL:
	case ETIMEDOUT:
	case EVR_E_STALL:
		return 1;
	default:
		return 0;
	}
}

/* Connection cs failed with f: 1 when it is to start again on the next
 * address (tg_cur moves on once for all that failed on the same one),
 * 0 when f is the run's failure. */
static int try_next(struct stream_client *cl, const struct cli_sess *cs,
		    const struct evr_failure *f)
{
	if (cl->tg_settled || cl->st.state != EVR_STREAM_RUNNING ||
	    !next_worthy(f) || cs->tgi + 1 >= cl->ntg)
		return 0;
	if (cs->tgi == cl->tg_cur)
		cl->tg_cur++;
	cl->redo[cs->k] = 1;
	cl->nredo++;
	return 1;
}

/* Connection k could not be made on the address tried now for its
 * family (a kernel without IPv6, a numeric -b of the other family): 1
 * when it starts again on the next address, as after a refused connect. */
static int skip_family(struct stream_client *cl, unsigned k,
		       const struct evr_failure *f)
{
	if (f->err != -EAFNOSUPPORT || cl->tg_settled ||
	    cl->st.state != EVR_STREAM_RUNNING || cl->tg_cur + 1 >= cl->ntg)
		return 0;
	cl->tg_cur++;
	cl->redo[k] = 1;
	cl->nredo++;
	/* (called from client_progress(): it looks again) */
	cl->progress_again = 1;
	return 1;
}

static void client_finished(struct evr_sess *s)
{
	struct cli_sess *cs = cli_sess_of(s);
	struct stream_client *cl = client_of(s->owner_ud);

	client_not_connecting(cl, cs);
	if (s->state == EVR_SS_FAILED && !try_next(cl, cs, &s->fail))
		client_fail(cl, cs->k, &s->fail);
	/* verification's counters go on on the next series' connections */
	cl->spat = s->spat;
	cl->rpat = s->rpat;
	cl->cs[cs->k] = NULL;
	cl->cs_live--;
	evr__sess_fini(s);
	free(cs);
	client_progress(cl);
}

/* --all-at-once: every connection of the series is at its gate (the
 * server has accepted it and its plan); each one waiting there starts
 * (a session may end in its start, so one at a time by index). */
static void open_gates(struct stream_client *cl)
{
	unsigned k;

	for (k = 0; k < cl->cs_started; k++) {
		struct cli_sess *cs = cl->cs[k];

		if (cs && cs->s.state == EVR_SS_GATED)
			evr__sess_drive(&cs->s, EVR_SE_OPEN, 0);
	}
}

/* --all-at-once: a connection is at its gate (evr_sess_owner.at_gate).
 * A connection that fails first fails the run, whose cancel ends the
 * ones waiting: the count never has to go back. */
static void client_at_gate(struct evr_sess *s)
{
	struct stream_client *cl = client_of(s->owner_ud);

	if (++cl->cs_up < cl->nconn || evr__stream_ending(&cl->st) ||
	    cl->st.state == EVR_STREAM_FAILING)
		return;
	open_gates(cl);
	client_progress(cl);
}

static const struct evr_sess_owner client_owner = {
	.result = client_result,
	.finished = client_finished,
	.progress = client_sess_progress,
	.at_gate = client_at_gate,
};

static void client_connected(void *ud, struct evr_conn *c, int err)
{
	struct stream_client *cl = client_of(ud);
	struct evr_sess *s;
	struct cli_sess *cs;

	if (!c->wake)
		return; /* its session has let go of it */
	s = c->wake_ud;
	cs = cli_sess_of(s);
	if (s->conn != c)
		return;
	/* one connect fewer in flight: the next may start */
	client_not_connecting(cl, cs);
	if (!err) {
		/* the address that works: every connection uses it */
		cl->tg_settled = 1;
		/* (a cancel in its info() is deferred) */
		evr__stream_settings(&cl->st, s->id, c);
	}
	evr__sess_drive(s, err ? EVR_SE_CONN_ERROR : EVR_SE_CONNECTED, err);
	client_progress(cl);
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

/* Connection k of the series, on the plan's connection idx, not yet
 * open; NULL when out of memory. */
static struct cli_sess *cli_sess_new(struct stream_client *cl, unsigned idx,
				     unsigned k)
{
	struct evr_stream *st = &cl->st;
	struct cli_sess *cs = malloc(sizeof(*cs));

	if (!cs)
		return NULL;
	if (evr__sess_init(&cs->s, st->loop, 1, &st->plan.conns[idx], idx,
			   st->plan.nconns, &st->o)) {
		evr__sess_fini(&cs->s);
		free(cs);
		return NULL;
	}
	cs->k = k;
	cs->connecting = 0;
	/* --all-at-once: its tests wait until all N are at their gate */
	evr__sess_set(&cs->s, EVR_SF_GATE, st->o.all_at_once && cl->nconn > 1);
	if (cl->shared_buf)
		evr__sess_use_buf(&cs->s, cl->shared_buf, cl->shared_size);
	cs->s.id = st->next_id++;
	cs->s.owner = &client_owner;
	cs->s.owner_ud = st;
	cs->s.spat = cl->spat;
	cs->s.rpat = cl->rpat;
	return cs;
}

/* Open and start connecting connection k of the series, to the address
 * tried now.  Local failures fail the run (client_fail); the machine
 * reports the rest. */
static void client_start_k(struct stream_client *cl, unsigned k)
{
	struct evr_stream *st = &cl->st;
	unsigned idx = cl->conn_next - 1;
	struct cli_target *tg = &cl->tg[cl->tg_cur];
	struct evr_failure f;
	struct cli_sess *cs;
	struct evr_conn *c;
	int ret, err = 0;

	memset(&f, 0, sizeof(f));
	cs = cli_sess_new(cl, idx, k);
	if (!cs) {
		f.err = -ENOMEM;
		f.where = "malloc";
		goto fail;
	}
	cs->tgi = cl->tg_cur;
	ret = st->xp->ops->open(st->xp, &tg->dst,
				conn_inline(st, &st->plan.conns[idx]), &c, &f);
	if (ret)
		goto fail_sess;
	if (st->o.keepalive) {
		struct evr_info i = {
			.kind = EVR_INFO_KEEPALIVE,
			.conn_id = cs->s.id,
			.peer = "",
			.keepalive_on = c->ka_on,
			.keepalive_idle = c->ka_idle,
		};

		EVR__STREAM_EMIT(st, info, &i);
	}
	ret = st->xp->ops->connect(st->xp, c, &tg->dst,
				   tg->src.valid ? &tg->src : NULL, &f, &err);
	if (ret < 0) {
		c->ops->close(c);
		goto fail_sess;
	}
	evr__sess_attach(&cs->s, c);
	cl->cs[k] = cs;
	cl->cs_live++;
	if (ret == EVR_XP_FAILED_NOW) {
		/* Report through the machine, like a late failure. */
		evr__sess_drive(&cs->s, EVR_SE_CONN_ERROR, err);
		return;
	}
	cs->connecting = 1;
	cl->cs_connecting++;
	evr__sess_drive(&cs->s, EVR_SE_READY, 0); /* arms the watchdog */
	return;
fail_sess:
	evr__sess_fini(&cs->s);
	free(cs);
fail:
	if (!skip_family(cl, k, &f))
		client_fail(cl, k, &f);
}

/* The connections that failed on an address before the one tried now
 * start again, as many as may connect at a time. */
static void client_redo(struct stream_client *cl)
{
	unsigned k;

	for (k = 0; cl->nredo && k < cl->cs_started; k++) {
		if (cl->st.state == EVR_STREAM_FAILING ||
		    cl->cs_connecting >= cl->max_connecting)
			return;
		if (cl->redo[k]) {
			cl->redo[k] = 0;
			cl->nredo--;
			client_start_k(cl, k);
		}
	}
}

static void client_cancel_live(struct stream_client *cl)
{
	int keep = at_connect(&cl->first_fail);
	unsigned k;

	/* a connect that failed: the others still connecting finish (each
	 * bounded by its own connect timeout) and are counted */
	for (k = 0; k < cl->cs_started && cl->cs_live; k++)
		if (cl->cs[k] && !(keep && cl->cs[k]->connecting))
			evr__sess_drive(&cl->cs[k]->s, EVR_SE_CANCEL, 0);
}

/* Connections of the series still to start, running, or to start again
 * on the next address. */
static int series_busy(const struct stream_client *cl)
{
	return cl->cs_started < cl->nconn || cl->cs_live || cl->nredo;
}

/* Decide what comes next; safe to call from any callback (a call made
 * while it runs only makes it look again).  A client that is CANCELLING
 * goes on as RUNNING until a connection fails (the one its cancel hits
 * first, from the loop): a run may still end well meanwhile. */
static void client_progress(struct stream_client *cl)
{
	struct evr_stream *st = &cl->st;
	unsigned i;

	if (cl->progressing) {
		cl->progress_again = 1;
		return;
	}
	cl->progressing = 1;
	do {
		cl->progress_again = 0;
		if (evr__stream_ending(st))
			break;
		if (st->state == EVR_STREAM_FAILING) {
			client_cancel_live(cl);
			if (!cl->cs_live)
				evr__stream_finish(st, cl->first_fail.err,
						   &cl->first_fail);
			continue;
		}
		client_redo(cl);
		while (st->state != EVR_STREAM_FAILING &&
		       cl->cs_started < cl->nconn &&
		       cl->cs_connecting < cl->max_connecting)
			client_start_k(cl, cl->cs_started++);
		if (st->state == EVR_STREAM_FAILING) {
			cl->progress_again = 1;
			continue;
		}
		if (series_busy(cl))
			continue;
		if (cl->conn_next < st->plan.nconns) {
			/* the next series, N connections again */
			cl->conn_next++;
			cl->cs_started = 0;
			cl->cs_up = 0;
			for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
				evr__agg_fini(&cl->agg[i]);
			cl->progress_again = 1;
			continue;
		}
		evr__stream_finish(st, 0, NULL);
	} while (cl->progress_again);
	cl->progressing = 0;
}

/* Address j of name i (0: the server's, 1: -b's) as rstream resolves
 * it: o's (the number given, or the name's first address), or the j-th
 * the name's lookup found. */
static int resolve_nth(struct evr_stream *st, unsigned i, unsigned j,
		       struct evr_addr *out, struct evr_failure *f)
{
	char num[sizeof(st->num[0])];
	const char *host = i ? st->o.bind_addr : st->o.host;

	memset(f, 0, sizeof(*f));
	if (j && evr__addr_numeric((const struct sockaddr *)
				   &st->found[i].ss[j], num, sizeof(num)))
		return evr__resolve_failed(f, &st->o, host, "0", EAI_NONAME);
	/* Upstream binds the source to the server's port, which clashes
	 * on one host; an ephemeral port does not. */
	return evr__resolve(&st->o, j ? num : host, i ? "0" : st->port, i,
			    out, f);
}

/* How many addresses name i has: the lookup's count, or one. */
static unsigned addr_count(const struct evr_stream *st, unsigned i)
{
	return st->found[i].n ? st->found[i].n : 1;
}

/* -b's addresses (none without -b): the first that does not resolve
 * fails the start when none does. */
static int client_sources(struct stream_client *cl, struct evr_addr *src,
			  unsigned *n, struct evr_failure *f)
{
	struct evr_stream *st = &cl->st;
	struct evr_failure fj;
	unsigned j;
	int ret, first = 0;

	*n = 0;
	if (!st->o.bind_addr)
		return 0;
	for (j = 0; j < addr_count(st, 1); j++) {
		ret = resolve_nth(st, 1, j, &src[*n], &fj);
		if (!ret) {
			++*n;
		} else if (!first) {
			first = ret;
			*f = fj;
		}
	}
	return *n ? 0 : first;
}

/* -b NAME has no address of the server's family: the line says so. */
static int no_source(struct stream_client *cl, const struct evr_addr *dst,
		     struct evr_failure *f)
{
	char d[80];

	memset(f, 0, sizeof(*f));
	f->phase = EVR_PH_SETUP;
	f->err = -EAFNOSUPPORT;
	f->where = "bind";
	evr__sockaddr_str((const struct sockaddr *)&dst->ss, d, sizeof(d));
	if (snprintf(f->addr, sizeof(f->addr), "%s (no %s address) for %s",
		     cl->st.bind_addr, evr__family_name(dst->family),
		     d) >= (int)sizeof(f->addr))
		f->addr[sizeof(f->addr) - 1] = '\0';
	return f->err;
}

/* Target t's source: -b's first address of its family.  A number of
 * another family is kept (its bind fails naming both families); a name
 * without one leaves the address out. */
static int pick_source(struct stream_client *cl, struct cli_target *t,
		       const struct evr_addr *src, unsigned nsrc)
{
	int k = evr__addr_pick(src, nsrc, t->dst.family);

	if (k < 0 && cl->st.found[1].n)
		return 0;
	t->src = src[k < 0 ? 0 : k];
	return 1;
}

/* Server address j, with its source when -b has one of its family:
 * appended to tg[] (1) or left out (0), its address in *dst either way;
 * or a failure to resolve it (< 0, fj says it). */
static int target_add(struct stream_client *cl, unsigned j,
		      const struct evr_addr *src, unsigned nsrc,
		      struct evr_addr *dst, struct evr_failure *fj)
{
	struct cli_target *t = &cl->tg[cl->ntg];
	int ret;

	memset(t, 0, sizeof(*t));
	ret = resolve_nth(&cl->st, 0, j, &t->dst, fj);
	if (ret)
		return ret;
	*dst = t->dst;
	if (nsrc && !pick_source(cl, t, src, nsrc))
		return 0;
	cl->ntg++;
	return 1;
}

/* Every address of the server to try, in order, each with its source:
 * tg[0..ntg-1].  With none, the start fails: -b's name has no address of
 * any that resolved (dst0, the first), or the first failure. */
static int client_targets(struct stream_client *cl, struct evr_failure *f)
{
	struct evr_stream *st = &cl->st;
	struct evr_addr src[EVR__LOOKUP_MAX], dst0, d;
	struct evr_failure fj;
	unsigned j, nsrc;
	int ret, first = 0;

	memset(&dst0, 0, sizeof(dst0));
	ret = client_sources(cl, src, &nsrc, f);
	if (ret)
		return ret;
	cl->ntg = cl->tg_cur = 0;
	cl->tg_settled = 0;
	for (j = 0; j < addr_count(st, 0); j++) {
		ret = target_add(cl, j, src, nsrc, &d, &fj);
		if (ret < 0 && !first) {
			first = ret;
			*f = fj;
		}
		if (ret >= 0 && !dst0.valid)
			dst0 = d;
	}
	if (cl->ntg)
		return 0;
	return dst0.valid ? no_source(cl, &dst0, f) : first;
}

static int client_start(struct evr_stream *st, struct evr_failure *f)
{
	struct stream_client *cl = client_of(st);
	unsigned i;
	int ret;

	if (!st->o.host) {
		f->err = -EINVAL;
		f->where = "no server address";
		return f->err;
	}
	ret = client_targets(cl, f);
	if (ret)
		return ret;
	if (!cl->cs) /* (kept from a failed start) */
		cl->cs = calloc(cl->nconn, sizeof(*cl->cs));
	if (!cl->redo)
		cl->redo = calloc(cl->nconn, sizeof(*cl->redo));
	if (!cl->cs || !cl->redo)
		goto nomem;
	memset(cl->redo, 0, cl->nconn * sizeof(*cl->redo));
	cl->nredo = 0;
	if (cl->nconn > 1 && !st->o.verify && !st->o.duration_ms &&
	    !cl->shared_buf) {
		/* Nobody looks at the bytes: one buffer serves all.  Not in
		 * duration mode, whose first byte of an iteration is a mark
		 * that each connection writes for itself. */
		for (i = 0; i < st->plan.nconns; i++)
			if (evr__conn_plan_max_size(&st->plan.conns[i]) >
			    cl->shared_size)
				cl->shared_size = evr__conn_plan_max_size(
					&st->plan.conns[i]);
		cl->shared_buf = calloc(1, cl->shared_size);
		if (!cl->shared_buf)
			goto nomem;
	}
	for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
		evr__agg_init(&cl->agg[i]);
	cl->conn_next = 1;
	evr__stream_set_state(st, EVR_STREAM_RUNNING);
	client_progress(cl);
	return 0;
nomem:
	f->err = -ENOMEM;
	f->where = "malloc";
	return f->err;
}

/* The first connection cancelled is the failure reported (FAILING); the
 * rest follow it.  With none, the run ends here. */
static void client_cancel(struct evr_stream *st)
{
	struct stream_client *cl = client_of(st);
	unsigned k;

	for (k = 0; cl->cs && k < cl->cs_started; k++) {
		if (cl->cs[k]) {
			evr__sess_drive(&cl->cs[k]->s, EVR_SE_CANCEL, 0);
			return;
		}
	}
	evr__stream_finish(st, -EVR_E_CANCELLED, NULL);
}

static void client_release(struct evr_stream *st)
{
	struct stream_client *cl = client_of(st);
	unsigned i, k;

	if (cl->cs) {
		for (k = 0; k < cl->nconn; k++) {
			struct cli_sess *cs = cl->cs[k];

			if (!cs)
				continue;
			evr__sess_stop_watchers(&cs->s);
			evr__sess_fini(&cs->s);
			free(cs);
		}
		free(cl->cs);
	}
	free(cl->redo);
	for (i = 0; i < EVR_PLAN_MAX_TESTS; i++)
		evr__agg_fini(&cl->agg[i]);
	free(cl->shared_buf);
}

static const struct evr_xport_cbs client_xport_cbs = {
	.connected = client_connected,
	.drained = evr__stream_drained,
};

static const struct evr__stream_engine client_engine = {
	.name = "client",
	.xcbs = &client_xport_cbs,
	.start = client_start,
	.cancel = client_cancel,
	.release = client_release,
};

struct evr_stream *evr__client_new(const struct evr_stream_opts *o)
{
	struct stream_client *cl = calloc(1, sizeof(*cl));

	if (!cl)
		return NULL;
	cl->st.eng = &client_engine;
	cl->nconn = o->conns ? o->conns : 1;
	cl->max_connecting = o->max_connecting ? o->max_connecting :
			     EVR_DEFAULT_MAX_CONNECTING;
	return &cl->st;
}
