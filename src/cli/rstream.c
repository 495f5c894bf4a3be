/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream: upstream's streaming ping-pong test on the evrdma engine.  This
 * file is a thin layer: parse options, start one engine, print its rows.
 */
#include "config.h"

#include <ev.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evrdma/loop.h"
#include "evrdma/stream.h"
#include "fdlimit.h"
#include "report.h"
#include "rstream_opts.h"

struct app {
	struct rstream_cli cli;
	struct evr_loop *loop;
	struct evr_stream *st;
	ev_signal sigint_w, sigterm_w;
	int status;
	int done;
	int in_child;
	int header_done;
};

static void print_header(struct app *a)
{
	if (a->header_done)
		return;
	a->header_done = 1;
	fputs(rstream_header(), stdout);
	fflush(stdout);
}

static void on_result(void *ud, const struct evr_result *r)
{
	struct app *a = ud;
	char row[160];

	/* -c N: the aggregate rows; one connection's only with --per-conn */
	if (r->conn_index && !a->cli.per_conn)
		return;
	rstream_format_row(row, sizeof(row), r);
	fputs(row, stdout);
	fflush(stdout);
}

static void on_info(void *ud, const struct evr_info *i)
{
	struct app *a = ud;

	switch (i->kind) {
	case EVR_INFO_LISTENING:
		print_header(a);
		break;
	case EVR_INFO_KEEPALIVE:
		printf("Keepalive: %s\n", i->keepalive_on ? "ON" : "OFF");
		printf("  time: %i\n", i->keepalive_idle);
		fflush(stdout);
		break;
	default:
		break;
	}
}

static void on_conn_failed(void *ud, const struct evr_failure *f)
{
	char line[512];

	evr_failure_str(f, line, sizeof(line));
	fprintf(stderr, "rstream: connection dropped: %s\n", line);
}

static void on_done(void *ud, int status, const struct evr_failure *f,
		    int in_child)
{
	struct app *a = ud;
	char line[512];

	a->done = 1;
	a->in_child = in_child;
	a->status = rstream_exit_status(f);
	if (f && status && status != -EVR_E_CANCELLED && !a->cli.o.server) {
		evr_failure_str(f, line, sizeof(line));
		fprintf(stderr, "rstream: %s\n", line);
	} else if (f && status && a->cli.o.server && !in_child) {
		/* --once: the connection's failure was reported already */
	}
	if (a->cli.o.server && status == -EVR_E_CANCELLED)
		a->status = 0;
	ev_signal_stop(evr_loop_ev(a->loop), &a->sigint_w);
	ev_signal_stop(evr_loop_ev(a->loop), &a->sigterm_w);
	evr_loop_break(a->loop);
}

static void on_signal(struct ev_loop *l, ev_signal *w, int revents)
{
	struct app *a = w->data;

	if (a->st && !a->done)
		evr_stream_cancel(a->st);
}

static void trace_line(void *ud, const char *line)
{
	fprintf(stderr, "rstream: trace: %s\n", line);
}

/* Upstream's check and message when rsockets find no device. */
static int have_rdma_device(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	if (l)
		ibv_free_device_list(l);
	return n > 0;
}

int main(int argc, char **argv)
{
	static const struct evr_stream_cbs cbs = {
		.result = on_result,
		.info = on_info,
		.conn_failed = on_conn_failed,
		.done = on_done,
	};
	struct app a;
	struct evr_failure f;
	struct ev_loop *evl;
	char line[512];
	int ret;

	memset(&a, 0, sizeof(a));
	ret = rstream_parse(argc, argv, &a.cli, stderr);
	switch (ret) {
	case RSTREAM_PARSE_OK:
		break;
	case RSTREAM_PARSE_HELP:
		rstream_help(stdout, argv[0]);
		return 0;
	case RSTREAM_PARSE_VERSION:
		printf("rstream (evrdma) %s\n", PACKAGE_VERSION);
		return 0;
	case RSTREAM_PARSE_USAGE:
		rstream_usage(stdout, argv[0]);
		return RSTREAM_EXIT_USAGE;
	default:
		return RSTREAM_EXIT_USAGE;
	}
	/* The engine never raises SIGPIPE (MSG_NOSIGNAL), and nothing else
	 * here should kill the process for a closed peer either. */
	signal(SIGPIPE, SIG_IGN);

	if (a.cli.o.xport == EVR_XPORT_RDMA) {
		if (!have_rdma_device()) {
			fprintf(stderr, "No RDMA devices were detected\n");
			return RSTREAM_EXIT_NODEV;
		}
	}

	/* Room for every connection, checked before any is made. */
	if (!a.cli.o.server) {
		unsigned n = a.cli.o.conns ? a.cli.o.conns : 1;
		unsigned long need = rstream_fds_needed(n,
				a.cli.o.xport == EVR_XPORT_RDMA);
		unsigned long lim;

		if (fdlimit_raise(need, &lim)) {
			fprintf(stderr, "rstream: -c %u needs ~%lu file "
				"descriptors, the limit is %lu and cannot be "
				"raised\n", n, need, lim);
			return RSTREAM_EXIT_LOCAL;
		}
	} else {
		unsigned long lim;

		fdlimit_raise(0, &lim); /* a server takes what it may */
	}

	evl = ev_default_loop(EVFLAG_AUTO);
	if (!evl || evr_loop_new(&a.loop, evl)) {
		fprintf(stderr, "rstream: cannot create the event loop\n");
		return RSTREAM_EXIT_LOCAL;
	}
	if (a.cli.trace)
		evr_loop_set_trace(a.loop, trace_line, NULL);
	ret = evr_stream_new(&a.st, a.loop, &a.cli.o, &cbs, &a);
	if (ret) {
		fprintf(stderr, "rstream: cannot create the engine: %s\n",
			strerror(-ret));
		evr_loop_free(a.loop);
		return RSTREAM_EXIT_LOCAL;
	}
	ev_signal_init(&a.sigint_w, on_signal, SIGINT);
	ev_signal_init(&a.sigterm_w, on_signal, SIGTERM);
	a.sigint_w.data = &a;
	a.sigterm_w.data = &a;
	ev_signal_start(evl, &a.sigint_w);
	ev_signal_start(evl, &a.sigterm_w);

	if (!a.cli.o.server)
		print_header(&a); /* upstream prints it before connecting */
	ret = evr_stream_start(a.st, &f);
	if (ret) {
		evr_failure_str(&f, line, sizeof(line));
		fprintf(stderr, "rstream: %s\n", line);
		a.status = rstream_exit_status(&f);
	} else if (!a.done) {
		evr_loop_run(a.loop);
	}
	evr_stream_free(a.st);
	ev_signal_stop(evl, &a.sigint_w);
	ev_signal_stop(evl, &a.sigterm_w);
	evr_loop_free(a.loop);
	ev_loop_destroy(evl);
	fflush(stdout);
	return a.status;
}
