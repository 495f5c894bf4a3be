/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream engine's lifecycle (stream_int.h), below both engines: its
 * state and traced transitions, the run's finish (FINISHING, then done()
 * from the loop once the transport has no close left), and what the
 * engines report of a connection (a test's row, its settings).  client.c
 * and server.c call down into it; stream.c, the API above them, creates
 * the engines and arms done_w with evr__stream_done_cb().
 */
#include "config.h"

#include "stream_int.h"

static const char *const state_names[] = EVR__STATE_NAMES(EVR_STREAM_STATES);

const char *evr__stream_state_name(enum evr_stream_state s)
{
	return EVR__NAME_AT(state_names, s);
}

void evr__stream_set_state(struct evr_stream *st, enum evr_stream_state to)
{
	if (st->state != to && evr__tracing(st->loop))
		evr__trace(st->loop, "%s: %s -> %s", st->eng->name,
			   evr__stream_state_name(st->state),
			   evr__stream_state_name(to));
	st->state = to;
}

/* done() goes out from the loop, never from inside a session, a
 * transport or an API call: after it the engine touches nothing of its
 * own, so the callback may free it. */
void evr__stream_done_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_stream *st = evr__container_of(w, struct evr_stream,
						  done_w);

	ev_timer_stop(l, w);
	if (st->cbs.done)
		st->cbs.done(st->ud, st->fin_status, st->fin_f, st->in_child);
}

static void finish_now(struct evr_stream *st)
{
	evr__stream_set_state(st, EVR_STREAM_FINISHED);
	ev_timer_stop(st->loop->ev, &st->cancel_w);
	ev_timer_start(st->loop->ev, &st->done_w);
}

void evr__stream_finish(struct evr_stream *st, int status,
			const struct evr_failure *f)
{
	if (evr__stream_ending(st))
		return;
	st->fin_status = status;
	st->fin_f = NULL;
	if (f) {
		st->fin_fail = *f;
		st->fin_f = &st->fin_fail;
	}
	evr__stream_set_state(st, EVR_STREAM_FINISHING);
	/* Let the last closes complete (our DISCONNECT reaching the peer)
	 * before the program exits; evr__stream_drained() finishes then. */
	if (st->xp && st->xp->ops->lingering(st->xp))
		return;
	finish_now(st);
}

void evr__stream_drained(void *ud)
{
	struct evr_stream *st = ud;

	if (st->state == EVR_STREAM_FINISHING)
		finish_now(st);
}

void evr__stream_result_init(struct evr_result *r, const struct evr_sess *s,
			     const struct evr_test *t, uint64_t elapsed_ns)
{
	*r = (struct evr_result){
		.name = t->name,
		.size = t->size,
		.count = t->count,
		.iters = t->iters,
		.bytes = evr__test_bytes(t),
		.elapsed_ns = elapsed_ns,
		.conn_id = s->id,
		.peer = s->conn ? s->conn->peer : "",
		.lat = evr__sess_lat_valid(s) ? &s->lat_res : NULL,
		.lat_samples = evr__sess_lat_valid(s) ? &s->lat : NULL,
		.split = evr__sess_split_valid(s) ? &s->split->res : NULL,
		.split_samples = evr__sess_split_valid(s) ? s->split : NULL,
		.start_ns = s->t0,
		.conn_mean_ns = elapsed_ns,
		.iter_mean_ns = t->iters ? (double)elapsed_ns / t->iters : 0.0,
		.mps = s->mps,
		.late = s->late,
		.late_max_ns = s->late_max_ns,
		.spin_sleeps = s->spin_sleeps - s->spin_sleeps0,
	};
}

/* A transport without the op, or one that cannot tell, reports nothing. */
void evr__stream_settings(struct evr_stream *st, unsigned conn_id,
			  struct evr_conn *c)
{
	struct evr_conn_settings cs;
	struct evr_info i;

	if (!st->o.report_settings || !st->cbs.info || !c->ops->settings ||
	    c->ops->settings(c, &cs))
		return;
	i = (struct evr_info){
		.kind = EVR_INFO_SETTINGS,
		.conn_id = conn_id,
		.peer = cs.peer[0] ? cs.peer : c->peer,
		.keepalive_on = cs.keepalive_on,
		.keepalive_idle = cs.keepalive_idle_s,
		.settings = &cs,
	};
	EVR__STREAM_EMIT(st, info, &i);
}
