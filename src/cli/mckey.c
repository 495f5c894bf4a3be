/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey: RDMA CM multicast join / send / receive / leave, on the evrdma
 * engine.  Parse options, run one engine, print upstream's lines.
 */
#include "config.h"

#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evrdma/loop.h"
#include "evrdma/mcast.h"
#include "mckey_opts.h"

struct app {
	struct mckey_cli cli;
	struct evr_loop *loop;
	struct evr_mcast *mc;
	ev_signal sigint_w, sigterm_w;
	int started;
	int status;
	int done;
};

static void out(const char *line)
{
	fputs(line, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

static void on_phase(void *ud, enum evr_mc_phase p)
{
	struct app *a = ud;

	switch (p) {
	case EVR_MC_PH_STARTING:
		a->started = 1;
		out(a->cli.o.sender ? "mckey: starting client" :
				      "mckey: starting server");
		break;
	case EVR_MC_PH_JOINING:
		out("mckey: joining");
		break;
	case EVR_MC_PH_TRANSFER:
		if (a->cli.o.count && a->cli.o.size)
			out(a->cli.o.sender ? "initiating data transfers" :
					      "receiving data transfers");
		break;
	case EVR_MC_PH_TRANSFER_DONE:
		out("data transfers complete");
		break;
	}
}

static void on_joined(void *ud, const struct evr_mc_joined *j)
{
	struct app *a = ud;

	printf("mckey: joined dgid: %s mlid 0x%x sl %u\n", j->dgid, j->mlid,
	       j->sl);
	if (a->cli.stats)
		printf("mckey: qp %u joined in %.3f ms\n", j->qp,
		       j->join_ns / 1e6);
	fflush(stdout);
}

static void on_cm_event(void *ud, unsigned qp, const char *event, int status,
			int is_error)
{
	printf("mckey: event: %s, status: %d\n", event, status);
	fflush(stdout);
}

static void on_failure(void *ud, const struct evr_mc_failure *f)
{
	/* upstream: perror() text on stderr, printf() text on stdout */
	if (f->with_errno)
		fprintf(stderr, "%s: %s\n", f->msg, strerror(f->sys_errno));
	else if (f->detail[0])
		fprintf(stderr, "%s: %s\n", f->msg, f->detail);
	else if (!strcmp(f->msg, "No RDMA devices were detected"))
		fprintf(stderr, "%s\n", f->msg);
	else
		out(f->msg);
}

static void report(struct app *a, unsigned n,
		   const struct evr_mc_qp_report *q)
{
	unsigned i, j;
	int short_of = 0;

	for (i = 0; i < n; i++)
		if (q[i].timed_out)
			short_of = 1;
	if (!a->cli.stats && !short_of)
		return;
	for (i = 0; i < n; i++) {
		FILE *f = a->cli.stats ? stdout : stderr;

		if (a->cli.o.sender) {
			fprintf(f, "mckey: qp %u: sent %llu, completed %llu\n",
				q[i].qp, (unsigned long long)q[i].sent,
				(unsigned long long)q[i].send_completed);
			continue;
		}
		fprintf(f, "mckey: qp %u: received %llu of %llu expected"
			"%s%llu without an evrdma header\n", q[i].qp,
			(unsigned long long)q[i].received,
			(unsigned long long)q[i].expected, ", ",
			(unsigned long long)q[i].foreign);
		for (j = 0; j < q[i].nsenders; j++) {
			const struct evr_mc_sender_report *s = &q[i].senders[j];

			fprintf(f, "mckey: qp %u: sender %08x: %llu of %u, "
				"lost %llu, duplicates %llu, reordered %llu\n",
				q[i].qp, s->sender,
				(unsigned long long)s->unique, s->count,
				(unsigned long long)s->lost,
				(unsigned long long)s->duplicates,
				(unsigned long long)s->reordered);
		}
	}
	fflush(stdout);
}

static void on_done(void *ud, int status, unsigned n,
		    const struct evr_mc_qp_report *q)
{
	struct app *a = ud;

	a->done = 1;
	a->status = status;
	if (a->started) {
		report(a, n, q);
		out("test complete");
		printf("return status %d\n", status);
		fflush(stdout);
	}
	ev_signal_stop(evr_loop_ev(a->loop), &a->sigint_w);
	ev_signal_stop(evr_loop_ev(a->loop), &a->sigterm_w);
	evr_loop_break(a->loop);
}

static void on_signal(struct ev_loop *l, ev_signal *w, int revents)
{
	struct app *a = w->data;

	if (a->mc && !a->done)
		evr_mcast_cancel(a->mc);
}

static void trace_line(void *ud, const char *line)
{
	fprintf(stderr, "mckey: trace: %s\n", line);
}

int main(int argc, char **argv)
{
	static const struct evr_mcast_cbs cbs = {
		.phase = on_phase,
		.joined = on_joined,
		.cm_event = on_cm_event,
		.failure = on_failure,
		.done = on_done,
	};
	struct ev_loop *evl;
	struct app a;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = mckey_parse(argc, argv, &a.cli, stderr);
	switch (ret) {
	case MCKEY_PARSE_OK:
		break;
	case MCKEY_PARSE_HELP:
		mckey_help(stdout, argv[0]);
		return 0;
	case MCKEY_PARSE_VERSION:
		printf("mckey (evrdma) %s\n", PACKAGE_VERSION);
		return 0;
	case MCKEY_PARSE_UNMAPPED:
		printf("unmapped multicast address requires binding to source "
		       "address\n");
		return 1;
	case MCKEY_PARSE_USAGE:
		mckey_usage(stdout, argv[0]);
		return 1;
	default:
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	evl = ev_default_loop(EVFLAG_AUTO);
	if (!evl || evr_loop_new(&a.loop, evl)) {
		fprintf(stderr, "mckey: cannot create the event loop\n");
		return 1;
	}
	if (a.cli.trace)
		evr_loop_set_trace(a.loop, trace_line, NULL);
	ret = evr_mcast_new(&a.mc, a.loop, &a.cli.o, &cbs, &a);
	if (ret) {
		fprintf(stderr, "mckey: unable to allocate memory for test nodes\n");
		evr_loop_free(a.loop);
		return 1;
	}
	ev_signal_init(&a.sigint_w, on_signal, SIGINT);
	ev_signal_init(&a.sigterm_w, on_signal, SIGTERM);
	a.sigint_w.data = &a;
	a.sigterm_w.data = &a;
	ev_signal_start(evl, &a.sigint_w);
	ev_signal_start(evl, &a.sigterm_w);
	evr_mcast_start(a.mc);
	if (!a.done)
		evr_loop_run(a.loop);
	evr_mcast_free(a.mc);
	ev_signal_stop(evl, &a.sigint_w);
	ev_signal_stop(evl, &a.sigterm_w);
	evr_loop_free(a.loop);
	ev_loop_destroy(evl);
	/* upstream: main() returns run()'s value */
	return a.status & 0xff;
}
