/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * embed: a host program that owns its libev loop and embeds evrdma in it.
 *
 * The host creates its own ev_loop and its own periodic timer, attaches
 * evrdma to the loop, and runs several engines side by side: an rstream
 * server on TCP, four clients with different plans (one of them spinning
 * in EVR_IO_NONBLOCK), and optionally an mckey receiver and sender on the
 * kernel UDP transport.  From its own timer it cancels the third client
 * midway; the fourth cancels itself from inside its own callback.
 * Everything it learns comes from callbacks.
 *
 * It checks, and exits 1 if any check fails:
 *   - its timer kept firing throughout: no gap between ticks beyond
 *     -G ms of wall time (3000), nor beyond -B ms (200) of this process's
 *     CPU time, which tells a callback holding the loop from a host too
 *     loaded to schedule us;
 *   - the cancelled clients reported -EVR_E_CANCELLED through done();
 *   - the other engines finished with the right results;
 *   - once every engine is freed, ev_run() returns by itself: evrdma left
 *     no active watcher on the host's loop.
 * Memory is checked by running it under valgrind (tests/e2e/embed.sh).
 *
 *   embed [-p PORT] [-g GROUP -b ADDR] [-t TICK_MS] [-G MAX_GAP_MS]
 *         [-B MAX_BUSY_MS] [-j THREADS] [-q]
 *
 * With -j N, N such hosts run at once, each in a thread of its own with
 * its own loop and engines (ports PORT, PORT+1, ...): one loop per
 * thread, no locking.
 *
 * Build against an installed evrdma:
 *   cc -pthread embed.c $(pkg-config --cflags --libs evrdma) -lev
 */
#include <errno.h>
#include <ev.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <evrdma/loop.h>
#include <evrdma/mcast.h>
#include <evrdma/stream.h>

#define NCLIENTS 4
#define CANCELLED_CLIENT 2   /* by the host's timer */
#define SELF_CANCELLED 3     /* from inside its own callback */

struct client {
	struct host *h;
	const char *name;
	struct evr_stream *st;
	uint32_t size, count, iters;
	enum evr_io_mode io;
	int keepalive;
	unsigned results, infos;
	uint64_t bytes;
	int done, status;
};

struct mc {
	struct host *h;
	const char *name;
	struct evr_mcast *m;
	int done, status;
	uint64_t received, expected, sent;
};

struct host {
	struct ev_loop *loop;
	struct evr_loop *el;
	ev_timer tick_w;          /* the host's own periodic work */
	ev_timer guard_w;         /* unref'd: must not keep the loop alive */
	double tick_s, max_gap_s, t_start, t_last, t_end, worst_gap;
	/* CPU time this process spent between two ticks: a busy gap means
	 * a callback held the loop; a wall gap with little CPU in it is the
	 * scheduler's doing on a loaded host. */
	double max_busy_s, cpu_last, worst_busy;
	unsigned ticks;
	double cancel_at;
	int quiet;
	const char *group, *bind_addr;
	char tag[16];             /* "thread N: " with -j */
	char portbuf[8];
	pthread_t thread;
	/* rstream */
	const char *port;
	struct evr_stream *srv;
	int srv_done, srv_status, srv_stopping;
	unsigned srv_accepted, srv_conn_done, srv_conn_failed;
	struct client c[NCLIENTS];
	int cancel_sent;
	/* mckey */
	struct mc recv, send;
	int use_mcast;
	unsigned live;            /* engines not yet freed */
	int failed;
};

static void say(struct host *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct host *h, const char *fmt, ...)
{
	va_list ap;

	if (h->quiet)
		return;
	flockfile(stdout);
	fputs(h->tag, stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	funlockfile(stdout);
}

static void check(struct host *h, int ok, const char *what)
{
	printf("%s - %s%s\n", ok ? "ok" : "FAIL", h->tag, what);
	if (!ok)
		h->failed = 1;
}

static double cpu_s(void)
{
	struct rusage ru;

	/* this thread's: the one running this host's loop */
#ifdef RUSAGE_THREAD
	getrusage(RUSAGE_THREAD, &ru);
#else
	getrusage(RUSAGE_SELF, &ru);
#endif
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The last engine gone: stop the host's own watchers.  If evrdma had left
 * one active, ev_run() would not return now (and guard_w would say so). */
static void engine_gone(struct host *h)
{
	if (--h->live)
		return;
	ev_timer_stop(h->loop, &h->tick_w);
	h->t_end = ev_time();
	if (h->ticks && cpu_s() - h->cpu_last > h->worst_busy)
		h->worst_busy = cpu_s() - h->cpu_last;
	say(h, "host: all engines freed after %.3f s\n",
	    ev_now(h->loop) - h->t_start);
}

/* ---- rstream ----------------------------------------------------- */

/* Every client is through and the server has closed its side of each:
 * stop the server.  This runs from a client's done() (another engine's
 * callback) or from the server's own info/conn_failed callback, where
 * evr_stream_cancel() is allowed too: it then takes effect from the loop,
 * once the server's code is off the stack. */
static void maybe_stop_server(struct host *h)
{
	for (int i = 0; i < NCLIENTS; i++)
		if (!h->c[i].done)
			return;
	if (!h->srv || h->srv_stopping ||
	    h->srv_conn_done + h->srv_conn_failed < h->srv_accepted)
		return;
	h->srv_stopping = 1;
	evr_stream_cancel(h->srv);
}

static void c_result(void *ud, const struct evr_result *r)
{
	struct client *c = ud;

	c->results++;
	c->bytes += r->bytes;
	say(c->h, "%s: %s %llu bytes in %.3f ms\n", c->name, r->name,
	    (unsigned long long)r->bytes, r->elapsed_ns / 1e6);
}

/* client-d cancels itself from its first callback (the keepalive info,
 * which evr_stream_start() itself delivers): the engine is on the stack
 * then, so the cancel takes effect from the loop, and no result follows. */
static void c_info(void *ud, const struct evr_info *i)
{
	struct client *c = ud;

	c->infos++;
	if (i->kind == EVR_INFO_KEEPALIVE && c == &c->h->c[SELF_CANCELLED]) {
		say(c->h, "%s: cancelling itself from its info callback\n",
		    c->name);
		evr_stream_cancel(c->st);
	}
}

static void c_done(void *ud, int status, const struct evr_failure *f,
		   int in_child)
{
	struct client *c = ud;
	struct host *h = c->h;
	char line[256] = "";

	if (f)
		evr_failure_str(f, line, sizeof(line));
	say(h, "%s: done, status %d%s%s\n", c->name, status,
	    f ? ": " : "", line);
	c->done = 1;
	c->status = status;
	/* done() is the engine's last act: freeing it here is allowed. */
	evr_stream_free(c->st);
	c->st = NULL;
	engine_gone(h);
	maybe_stop_server(h);
}

static void s_info(void *ud, const struct evr_info *i)
{
	struct host *h = ud;

	switch (i->kind) {
	case EVR_INFO_LISTENING:
		say(h, "server: listening on port %s\n", h->port);
		break;
	case EVR_INFO_ACCEPTED:
		h->srv_accepted++;
		break;
	case EVR_INFO_CONN_DONE:
		h->srv_conn_done++;
		maybe_stop_server(h);
		break;
	default:
		break;
	}
}

static void s_conn_failed(void *ud, const struct evr_failure *f)
{
	struct host *h = ud;
	char line[256];

	evr_failure_str(f, line, sizeof(line));
	say(h, "server: connection dropped: %s\n", line);
	h->srv_conn_failed++;
	maybe_stop_server(h);
}

static void s_done(void *ud, int status, const struct evr_failure *f,
		   int in_child)
{
	struct host *h = ud;

	say(h, "server: done, status %d\n", status);
	h->srv_done = 1;
	h->srv_status = status;
	evr_stream_free(h->srv);
	h->srv = NULL;
	engine_gone(h);
}

static int start_stream(struct host *h, struct evr_stream **out,
			const struct evr_stream_opts *o,
			const struct evr_stream_cbs *cbs, void *ud,
			const char *name)
{
	struct evr_failure f;
	char line[256];
	int ret;

	ret = evr_stream_new(out, h->el, o, cbs, ud);
	if (ret) {
		fprintf(stderr, "%s: evr_stream_new: %s\n", name, strerror(-ret));
		return ret;
	}
	ret = evr_stream_start(*out, &f);
	if (ret) {
		evr_failure_str(&f, line, sizeof(line));
		fprintf(stderr, "%s: %s\n", name, line);
		evr_stream_free(*out);
		*out = NULL;
		return ret;
	}
	h->live++;
	return 0;
}

/* ---- mckey ------------------------------------------------------- */

static void m_failure(void *ud, const struct evr_mc_failure *f)
{
	struct mc *m = ud;

	say(m->h, "%s: %s%s%s\n", m->name, f->msg, f->detail[0] ? ": " : "",
	    f->detail);
}

static void m_done(void *ud, int status, unsigned n,
		   const struct evr_mc_qp_report *q)
{
	struct mc *m = ud;

	for (unsigned i = 0; i < n; i++) {
		m->received += q[i].received;
		m->expected += q[i].expected;
		m->sent += q[i].send_completed;
	}
	say(m->h, "%s: done, status %d, %u QPs, sent %llu, received %llu "
	    "of %llu\n", m->name, status, n, (unsigned long long)m->sent,
	    (unsigned long long)m->received, (unsigned long long)m->expected);
	m->done = 1;
	m->status = status;
	evr_mcast_free(m->m);
	m->m = NULL;
	engine_gone(m->h);
}

static int start_mcast(struct host *h, struct mc *m, const char *name,
		       const struct evr_mcast_opts *o)
{
	static const struct evr_mcast_cbs cbs = {
		.failure = m_failure,
		.done = m_done,
	};
	int ret;

	m->h = h;
	m->name = name;
	ret = evr_mcast_new(&m->m, h->el, o, &cbs, m);
	if (ret) {
		fprintf(stderr, "%s: evr_mcast_new: %s\n", name, strerror(-ret));
		return ret;
	}
	h->live++;
	evr_mcast_start(m->m); /* failures arrive through the callbacks */
	return 0;
}

/* ---- the host's own watchers ------------------------------------ */

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct host *h = w->data;
	double now = ev_time(), gap = now - h->t_last;
	double cpu = cpu_s(), busy = cpu - h->cpu_last;
	struct client *victim = &h->c[CANCELLED_CLIENT];

	h->ticks++;
	if (gap > h->worst_gap)
		h->worst_gap = gap;
	if (busy > h->worst_busy)
		h->worst_busy = busy;
	h->t_last = now;
	h->cpu_last = cpu;
	if (!h->cancel_sent && now - h->t_start >= h->cancel_at) {
		h->cancel_sent = 1;
		say(h, "host: tick %u: cancelling %s\n", h->ticks,
		    victim->name);
		if (victim->st)
			evr_stream_cancel(victim->st);
	}
}

static void guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct host *h = w->data;

	printf("FAIL - %sthe loop is still alive after 60 s (%u engines "
	       "live)\n", h->tag, h->live);
	h->failed = 1;
	ev_ref(loop); /* balance the ev_unref of a watcher now stopped */
	ev_break(loop, EVBREAK_ALL);
}

static void usage(void)
{
	fprintf(stderr, "usage: embed [-p PORT] [-g GROUP -b ADDR] "
		"[-t TICK_MS] [-G MAX_GAP_MS] [-B MAX_BUSY_MS] [-j THREADS] "
		"[-q]\n");
}

/* One host: its loop, its timer, its engines, its checks.  Returns 1 if a
 * check failed.  Several run at once in threads of their own (-j). */
static int run_host(struct host *h)
{
	static const struct evr_stream_cbs ccbs = {
		.result = c_result,
		.info = c_info,
		.done = c_done,
	};
	static const struct evr_stream_cbs scbs = {
		.info = s_info,
		.conn_failed = s_conn_failed,
		.done = s_done,
	};
	struct evr_stream_opts so;
	struct evr_mcast_opts mo;
	double elapsed;
	int i;

	/* The host's loop, not libev's default one, and its own timer. */
	if (!h->loop)
		h->loop = ev_loop_new(EVFLAG_AUTO);
	if (!h->loop || evr_loop_new(&h->el, h->loop)) {
		fprintf(stderr, "embed: cannot create the loop\n");
		return 1;
	}
	ev_timer_init(&h->tick_w, tick_cb, h->tick_s, h->tick_s);
	h->tick_w.data = h;
	ev_timer_start(h->loop, &h->tick_w);
	ev_timer_init(&h->guard_w, guard_cb, 60, 0);
	h->guard_w.data = h;
	ev_timer_start(h->loop, &h->guard_w);
	ev_unref(h->loop); /* the guard alone must not keep ev_run going */
	ev_now_update(h->loop);
	h->t_start = h->t_last = ev_time();
	h->cpu_last = cpu_s();

	/* An rstream server on TCP: serves every client until cancelled. */
	memset(&so, 0, sizeof(so));
	so.server = 1;
	so.bind_addr = "127.0.0.1";
	so.port = h->port;
	so.transport = EVR_TRANSPORT_TCP;
	so.io = EVR_IO_ASYNC;
	if (start_stream(h, &h->srv, &so, &scbs, h, "server"))
		return 1;

	/* Four clients with different plans: a bandwidth-like one, a
	 * latency one that spins (EVR_IO_NONBLOCK), one too long to
	 * finish, which the host cancels from its timer, and one that
	 * cancels itself from its own first callback (client-d, below). */
	h->c[0] = (struct client){ .name = "client-a", .size = 65536,
				  .count = 10, .iters = 40,
				  .io = EVR_IO_ASYNC };
	h->c[1] = (struct client){ .name = "client-b", .size = 64,
				  .count = 1, .iters = 1500,
				  .io = EVR_IO_NONBLOCK };
	h->c[2] = (struct client){ .name = "client-c", .size = 4096,
				  .count = 100, .iters = 100000000,
				  .io = EVR_IO_ASYNC };
	h->c[3] = (struct client){ .name = "client-d", .size = 1000,
				  .count = 10, .iters = 1000,
				  .io = EVR_IO_ASYNC, .keepalive = 30 };
	for (i = 0; i < NCLIENTS; i++) {
		struct client *c = &h->c[i];

		c->h = h;
		memset(&so, 0, sizeof(so));
		so.host = "127.0.0.1";
		so.port = h->port;
		so.transport = EVR_TRANSPORT_TCP;
		so.io = c->io;
		so.custom = 1;
		so.size = c->size;
		so.count = c->count;
		so.iters = c->iters;
		so.keepalive = c->keepalive;
		if (start_stream(h, &c->st, &so, &ccbs, c, c->name))
			return 1;
	}

	/* mckey on kernel UDP: a receiver with two sockets and a sender, in
	 * the same process, on the group's port. */
	if (h->use_mcast) {
		memset(&mo, 0, sizeof(mo));
		mo.transport = EVR_MC_UDP;
		mo.group = h->group;
		mo.bind_addr = h->bind_addr;
		mo.nqps = 2;
		mo.count = 20;
		mo.size = 100;
		mo.settle_ms = 100;
		mo.deadline_ms = 20000;
		if (start_mcast(h, &h->recv, "mc-recv", &mo))
			return 1;
		mo.sender = 1;
		mo.nqps = 1;
		mo.settle_ms = 600; /* the receiver is in by then */
		mo.rate = 200;
		if (start_mcast(h, &h->send, "mc-send", &mo))
			return 1;
	}

	/* Returns only when no active watcher is left: the host's stopped,
	 * the guard unref'd, and evrdma's all gone. */
	ev_run(h->loop, 0);
	elapsed = ev_time() - h->t_start;

	if (ev_is_active(&h->guard_w)) {
		ev_ref(h->loop);
		ev_timer_stop(h->loop, &h->guard_w);
	}

	check(h, h->live == 0, "every engine finished and was freed");
	/* The end counts as a tick: the timer must have fired at the last
	 * until the engines were gone, not only early on. */
	if (h->ticks && h->t_end - h->t_last > h->worst_gap)
		h->worst_gap = h->t_end - h->t_last;
	say(h, "host: %u ticks of %.0f ms in %.3f s (%.0f expected), worst "
	    "gap %.1f ms (limit %.0f), busiest gap %.1f ms of CPU (limit "
	    "%.0f)\n", h->ticks, h->tick_s * 1e3, elapsed, elapsed / h->tick_s,
	    h->worst_gap * 1e3, h->max_gap_s * 1e3, h->worst_busy * 1e3,
	    h->max_busy_s * 1e3);
	check(h, h->ticks > 0 && h->worst_gap <= h->max_gap_s,
	      "the host's timer kept firing throughout (no gap beyond the "
	      "limit)");
	check(h, h->worst_busy <= h->max_busy_s,
	      "no callback held the loop (CPU time between ticks within the "
	      "limit)");
	check(h, h->cancel_sent, "the host cancelled a client from its timer");
	check(h, h->c[CANCELLED_CLIENT].done &&
	      h->c[CANCELLED_CLIENT].status == -EVR_E_CANCELLED,
	      "the cancelled client reported -EVR_E_CANCELLED");
	for (i = 0; i < NCLIENTS; i++) {
		struct client *c = &h->c[i];
		char what[96];

		if (i == CANCELLED_CLIENT || i == SELF_CANCELLED)
			continue;
		snprintf(what, sizeof(what), "%s: status 0, one result, "
			 "%llu bytes", c->name, (unsigned long long)
			 2ull * c->size * c->count * c->iters);
		check(h, c->done && c->status == 0 && c->results == 1 &&
		      c->bytes == 2ull * c->size * c->count * c->iters, what);
	}
	check(h, h->srv_done && h->srv_status == 0,
	      "the server stopped with status 0 when cancelled");
	say(h, "server: %u accepted, %u served, %u dropped\n",
	    h->srv_accepted, h->srv_conn_done, h->srv_conn_failed);
	check(h, h->c[SELF_CANCELLED].done &&
	      h->c[SELF_CANCELLED].status == -EVR_E_CANCELLED &&
	      h->c[SELF_CANCELLED].results == 0,
	      "the client that cancelled itself in a callback reported "
	      "-EVR_E_CANCELLED and no result");
	/* client-d's connection may or may not have reached the server */
	check(h, h->srv_accepted >= NCLIENTS - 1 &&
	      h->srv_conn_done == NCLIENTS - 2 &&
	      h->srv_conn_done + h->srv_conn_failed == h->srv_accepted,
	      "the server served every client");
	if (h->use_mcast) {
		check(h, h->recv.done && h->recv.status == 0 &&
		      h->recv.expected == 40 && h->recv.received == 40,
		      "mckey receiver: 20 messages on each of 2 sockets");
		check(h, h->send.done && h->send.status == 0 &&
		      h->send.sent == 20, "mckey sender: 20 messages sent");
	}
	check(h, ev_pending_count(h->loop) == 0, "nothing pending on the loop");

	evr_loop_free(h->el); /* borrowed: the host's loop survives it */
	ev_loop_destroy(h->loop);
	return h->failed;
}

static void *host_thread(void *arg)
{
	return (void *)(long)run_host(arg);
}

int main(int argc, char **argv)
{
	struct host tmpl, *hosts;
	unsigned nthreads = 1, t;
	const char *vs;
	int opt, failed = 0;

	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.port = "27471";
	tmpl.tick_s = 0.02;
	tmpl.max_gap_s = 3.0;
	tmpl.max_busy_s = 0.2;
	tmpl.cancel_at = 0.5;
	while ((opt = getopt(argc, argv, "p:g:b:t:G:B:j:q")) != -1) {
		switch (opt) {
		case 'p': tmpl.port = optarg; break;
		case 'g': tmpl.group = optarg; break;
		case 'b': tmpl.bind_addr = optarg; break;
		case 't': tmpl.tick_s = atoi(optarg) / 1000.0; break;
		case 'G': tmpl.max_gap_s = atoi(optarg) / 1000.0; break;
		case 'B': tmpl.max_busy_s = atoi(optarg) / 1000.0; break;
		case 'j': nthreads = (unsigned)atoi(optarg); break;
		case 'q': tmpl.quiet = 1; break;
		default: usage(); return 2;
		}
	}
	if (tmpl.tick_s <= 0 || !tmpl.group != !tmpl.bind_addr ||
	    nthreads < 1 || nthreads > 8 || atoi(tmpl.port) <= 0) {
		usage();
		return 2;
	}
	evr_version(&vs);
	if (!tmpl.quiet)
		printf("host: evrdma %s (headers %s)\n", vs,
		       EVR_VERSION_STRING);
	if (nthreads == 1) {
		tmpl.use_mcast = tmpl.group != NULL;
		failed = run_host(&tmpl);
	} else {
		/* One loop per thread, each with its own engines on its own
		 * port: evrdma has no global state and takes no lock.  The
		 * multicast engines run in the first only (one group port). */
		hosts = calloc(nthreads, sizeof(*hosts));
		if (!hosts)
			return 1;
		for (t = 0; t < nthreads; t++) {
			hosts[t] = tmpl;
			hosts[t].use_mcast = t == 0 && tmpl.group != NULL;
			snprintf(hosts[t].portbuf, sizeof(hosts[t].portbuf),
				 "%d", atoi(tmpl.port) + (int)t);
			hosts[t].port = hosts[t].portbuf;
			/* Made here, before the threads: libev sets its own
			 * process-wide clock flags in the first ev_loop_new(). */
			hosts[t].loop = ev_loop_new(EVFLAG_AUTO);
			if (!hosts[t].loop)
				return 1;
			snprintf(hosts[t].tag, sizeof(hosts[t].tag),
				 "thread %u: ", t);
			if (pthread_create(&hosts[t].thread, NULL,
					   host_thread, &hosts[t])) {
				fprintf(stderr, "embed: pthread_create\n");
				return 1;
			}
		}
		for (t = 0; t < nthreads; t++) {
			void *ret;

			pthread_join(hosts[t].thread, &ret);
			failed |= ret != NULL;
		}
		free(hosts);
	}
	printf("%s\n", failed ? "embed: FAILED" : "embed: all checks passed");
	return failed ? 1 : 0;
}
