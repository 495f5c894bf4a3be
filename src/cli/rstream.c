/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream: upstream's streaming ping-pong test on the evrdma engine.  This
 * file is a thin layer: parse options, start one engine, print its rows
 * (upstream's table, or JSON Lines with --json).
 */
#include "config.h"

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "evrdma/loop.h"
#include "evrdma/stream.h"
#include "common.h"
#include "diag.h"
#include "fdlimit.h"
#include "jsonout.h"
#include "progress.h"
#include "report.h"
#include "rstream_opts.h"

struct app {
	struct rstream_cli cli;
	struct cli_loop cl;
	struct evr_stream *st;
	int status;
	int done;
	int in_child;
	int header_done;
	struct progress_out prog;
	/* --percentiles: rows kept for the table after the results */
	struct lat_row {
		char name[16];
		int have_lat, have_split;
		struct evr_lat_stats l;
		struct evr_lat_split sp;
		struct pace_figures pace;   /* --mps */
	} *lat;
	size_t nlat, lat_cap;
	int started;              /* evr_stream_start() was called */
	int error_done;           /* --json: the error record is out */
	uint64_t t0;
	/* --json's summary counts; with -T f in memory shared with the
	 * children, whose records they count (atomically: several at once) */
	struct jo_totals *tot, tot_own;
	struct cli_out *out;
	struct evr_hc_need need;  /* the host checks' view of this run */
};

#define TOT_ADD(a, field, n) \
	__atomic_fetch_add(&(a)->tot->field, (n), __ATOMIC_RELAXED)

/* After output: a write to stdout that failed stops the run (one line on
 * stderr, exit 5), as a closed pipe would stop upstream's (SIGPIPE).  One
 * that failed before the start keeps the run from starting (run()). */
static void out_check(struct app *a)
{
	if (!a->out->failed && cli_out_check(a->out) && a->started &&
	    !a->done)
		evr_stream_cancel(a->st);
}

static void print_header(struct app *a)
{
	if (a->header_done || a->cli.json)
		return;
	a->header_done = 1;
	fputs(rstream_header(), stdout);
	fflush(stdout);
	out_check(a);
}

static void keep_lat(struct app *a, const struct evr_result *r)
{
	struct lat_row *n;

	if (a->nlat == a->lat_cap) {
		size_t cap = a->lat_cap ? a->lat_cap * 2 : 16;

		n = realloc(a->lat, cap * sizeof(*n));
		if (!n)
			return; /* the table will lack this row */
		a->lat = n;
		a->lat_cap = cap;
	}
	n = &a->lat[a->nlat++];
	if (r->conn_index) /* -c N --per-conn: named as its table row */
		snprintf(n->name, sizeof(n->name), "%s#%u", r->name,
			 r->conn_index);
	else
		snprintf(n->name, sizeof(n->name), "%s", r->name);
	n->have_lat = r->lat != NULL;
	if (r->lat)
		n->l = *r->lat;
	n->have_split = r->split != NULL;
	if (r->split)
		n->sp = *r->split;
	n->pace = (struct pace_figures){ r->mps, pace_achieved(r), r->late,
					 r->late_max_ns };
}

/* --mps: each test's pace, asked and achieved. */
static void print_pace(struct app *a)
{
	char row[160];
	size_t i;

	if (!a->cli.o.mps)
		return;
	fputc('\n', stdout);
	fputs(pace_header(), stdout);
	for (i = 0; i < a->nlat; i++) {
		pace_format_row(row, sizeof(row), a->lat[i].name,
				&a->lat[i].pace);
		fputs(row, stdout);
	}
}

/* --split: one test's round trip in its parts, and how many samples
 * were left out because their parts did not add up. */
static void print_split(const struct lat_row *lr)
{
	char row[160];
	int p;

	for (p = 0; p < EVR_SPLIT_PARTS; p++) {
		split_format_row(row, sizeof(row), p ? "" : lr->name, p,
				 &lr->sp.part[p]);
		fputs(row, stdout);
	}
	if (lr->sp.rejected)
		printf("%-10s%-7s%8llu (parts that did not add up)\n",
		       "", "reject", (unsigned long long)lr->sp.rejected);
}

static void print_lat(struct app *a)
{
	char row[160];
	size_t i;

	int any = 0;

	if (!a->nlat || a->cli.json)
		return;
	if (a->cli.o.percentiles && !a->cli.lat_hidden) {
		fputc('\n', stdout);
		fputs(lat_header(), stdout);
	}
	for (i = 0; i < a->nlat; i++) {
		any |= a->lat[i].have_split;
		if (!a->lat[i].have_lat || a->cli.lat_hidden)
			continue;
		lat_format_row(row, sizeof(row), a->lat[i].name, &a->lat[i].l);
		fputs(row, stdout);
	}
	print_pace(a);
	/* --split: each test's round trip in its parts */
	if (any) {
		fputc('\n', stdout);
		fputs(split_header(), stdout);
	}
	for (i = 0; i < a->nlat; i++)
		if (a->lat[i].have_split)
			print_split(&a->lat[i]);
	fflush(stdout);
}

/* --json: one result record, named by the peer as the user gave it when
 * a client's connection does not know the name it used. */
static void emit_json_result(struct app *a, const struct evr_result *r)
{
	struct evr_result rr = *r;
	char peer[320];

	if ((!rr.peer || !rr.peer[0]) && !a->cli.o.server) {
		snprintf(peer, sizeof(peer), "%s:%s", a->cli.o.host,
			 a->cli.o.port);
		rr.peer = peer;
	}
	jo_emit(stdout, jo_result_since(&rr, a->t0));
	out_check(a);
}

static void json_error(struct app *a, const struct evr_failure *f,
		       const char *msg, int status);

/* --fail-if: a row's measures against the thresholds (the rows the
 * table shows: with -c N the aggregate, not each connection's). */
static void judge(struct app *a, const struct evr_result *r)
{
	double v[THR__COUNT] = { 0 };
	unsigned have = 1u << THR_USEC | 1u << THR_GBPS;

	if (!a->cli.fail_if.n || r->conn_index || !r->iters || !r->count ||
	    !r->elapsed_ns)
		return;
	rstream_row_figures(r, &v[THR_GBPS], &v[THR_USEC]);
	if (r->lat && r->lat->samples) {
		v[THR_MIN] = (double)r->lat->min_ns;
		v[THR_P50] = (double)r->lat->p50_ns;
		v[THR_P90] = (double)r->lat->p90_ns;
		v[THR_P99] = (double)r->lat->p99_ns;
		v[THR_P999] = (double)r->lat->p999_ns;
		v[THR_MAX] = (double)r->lat->max_ns;
		v[THR_MEAN] = r->lat->mean_ns;
		have |= (1u << THR_USEC) - 1;
	}
	thr_observe(&a->cli.fail_if, v, have, r->name);
}

/* --fail-if's verdict, once the run is over and passed otherwise: a line
 * on stderr for each threshold that failed, a threshold record each with
 * --json, and exit status 8. */
static void verdict(struct app *a)
{
	const struct threshold *t;
	char line[256];
	unsigned i;

	if (!a->cli.fail_if.n || a->in_child)
		return;
	for (i = 0; i < a->cli.fail_if.n; i++) {
		t = &a->cli.fail_if.t[i];
		thr_line(t, line, sizeof(line));
		if (a->cli.json)
			jo_emit(stdout, jo_threshold(t, line));
		else if (a->status == 0 && (t->failed || !t->checked))
			fprintf(stderr, "rstream: %s\n", line);
	}
	if (a->status == 0 && thr_failed(&a->cli.fail_if)) {
		a->status = RSTREAM_EXIT_THRESHOLD;
		json_error(a, NULL, "a --fail-if threshold failed", a->status);
	}
}

/* A server that has had two clients at once names the client at the
 * end of each row from then on, as its progress lines do (an upstream
 * server serves one at a time, and so does this one's output until a
 * second client comes while the first is served). */
static void conn_opened(struct app *a)
{
	if (__atomic_add_fetch(&a->tot->open_conns, 1, __ATOMIC_RELAXED) > 1)
		__atomic_store_n(&a->tot->several, 1, __ATOMIC_RELAXED);
}

static void conn_closed(struct app *a)
{
	__atomic_sub_fetch(&a->tot->open_conns, 1, __ATOMIC_RELAXED);
}

static int several_clients(const struct app *a)
{
	return a->cli.o.server &&
	       __atomic_load_n(&a->tot->several, __ATOMIC_RELAXED);
}

static void name_client(const struct app *a, const struct evr_result *r,
			char *row, size_t len)
{
	size_t n = strlen(row);

	if (!several_clients(a) || !n || !r->peer || !r->peer[0])
		return;
	snprintf(row + n - 1, len - (n - 1), "  client %s\n", r->peer);
}

static void on_result(void *ud, const struct evr_result *r)
{
	struct app *a = ud;
	char row[160];

	/* -c N: its count stays in the progress lines' sums */
	if (!a->cli.json)
		progress_conn_done(&a->prog, r);
	progress_clear(&a->prog);
	judge(a, r);
	/* -c N: the aggregate rows; one connection's only with --per-conn */
	if (r->conn_index && !a->cli.per_conn)
		return;
	TOT_ADD(a, results, 1);
	if (!r->conn_index)
		TOT_ADD(a, total_bytes, r->bytes);
	if (a->cli.json) {
		emit_json_result(a, r);
		return;
	}
	rstream_format_row(row, sizeof(row), r);
	name_client(a, r, row, sizeof(row));
	fputs(row, stdout);
	fflush(stdout);
	out_check(a);
	if (r->lat || r->split)
		keep_lat(a, r);
}

static void on_progress(void *ud, const struct evr_progress *p)
{
	struct app *a = ud;

	if (a->cli.json) {
		jo_emit(stdout, jo_progress(p));
		out_check(a);
	} else {
		a->prog.no_live = several_clients(a);
		progress_print(&a->prog, p);
	}
}

static void on_info(void *ud, const struct evr_info *i)
{
	struct app *a = ud;
	char line[512];

	if (i->kind == EVR_INFO_ACCEPTED) {
		TOT_ADD(a, accepted, 1);
		conn_opened(a);
	} else if (i->kind == EVR_INFO_CONN_DONE) {
		TOT_ADD(a, conn_done, 1);
		conn_closed(a);
	}
	if (a->cli.json) {
		json_t *rec = jo_info(i);

		if (rec)
			jo_emit(stdout, rec);
		out_check(a);
		return;
	}
	switch (i->kind) {
	case EVR_INFO_LISTENING:
		print_header(a);
		break;
	case EVR_INFO_KEEPALIVE:
		/* the listener's comes before LISTENING: upstream's header
		 * is first all the same */
		print_header(a);
		printf("Keepalive: %s\n", i->keepalive_on ? "ON" : "OFF");
		printf("  time: %i\n", i->keepalive_idle);
		fflush(stdout);
		break;
	case EVR_INFO_SETTINGS:
		rstream_format_settings(line, sizeof(line), i->conn_id, i->peer,
					i->settings);
		fputs(line, stdout);
		fflush(stdout);
		break;
	default:
		break;
	}
	out_check(a);
}

/* What this run needs of the host (evrdma/hostcheck.h): the library's
 * answer, and that main() raises the soft RLIMIT_NOFILE first. */
static void need_of(const struct rstream_cli *cli, struct evr_hc_need *n)
{
	evr_stream_need(&cli->o, n);
	n->fds_raise = n->fds != 0;
}

/* An RDMA failure before any test ran that the host explains (locked
 * memory, a device node, the address's device or port): its diagnosis
 * on stderr instead of the bare errno, and 1. */
static int diagnosed(struct app *a, const struct evr_failure *f, char *line,
		     size_t len)
{
	struct evr_hc_need n = a->need;

	if (!f || !a->need.rdma || f->err >= 0 || -f->err >= EVR_E_BASE ||
	    (f->phase != EVR_PH_SETUP && f->phase != EVR_PH_CONNECT))
		return 0;
	n.device = f->device[0] ? f->device : NULL;
	return diag_failure("rstream", &n, f->err, f->where, line, len);
}

static void on_conn_failed(void *ud, const struct evr_failure *f)
{
	struct app *a = ud;
	char line[512];

	progress_clear(&a->prog);
	TOT_ADD(a, conn_failed, 1);
	if (a->cli.o.server && f->conn_id) /* one it had accepted */
		conn_closed(a);
	/* a server out of locked memory for one more: the diagnosis */
	if (!a->cli.o.server || !diagnosed(a, f, line, sizeof(line))) {
		rstream_failure_str(f, &a->cli.o, line, sizeof(line));
		fprintf(stderr, "rstream: connection dropped: %s\n", line);
	}
	if (a->cli.json) {
		jo_emit(stdout, jo_failure("conn_failed", f, line, -1));
		out_check(a);
	}
}

/* --json: why the program ends, for a reader of stdout alone. */
static void json_error(struct app *a, const struct evr_failure *f,
		       const char *msg, int status)
{
	char line[512];

	if (!a->cli.json || a->error_done)
		return;
	a->error_done = 1;
	if (f)
		rstream_failure_str(f, &a->cli.o, line, sizeof(line));
	jo_emit(stdout, f ? jo_failure("error", f, line, status) :
			    jo_error(msg, status));
}

/* Is the run's end a failure to tell here?  A client's failure; or a
 * server's own start, which ends here when its -b name was looked up on
 * the loop (no connection's: those were told as they were dropped). */
static int told_at_end(const struct app *a, int status,
		       const struct evr_failure *f)
{
	return f && status && status != -EVR_E_CANCELLED &&
	       (!a->cli.o.server ||
		(!f->conn_id && f->phase == EVR_PH_SETUP));
}

/* The run's end on stderr: its failure (or the host's diagnosis of it),
 * or where a client stood when a signal stopped it. */
static void say_end(struct app *a, int status, const struct evr_failure *f)
{
	char line[512];
	int told = told_at_end(a, status, f);

	if (told && diagnosed(a, f, line, sizeof(line))) {
		a->status = RSTREAM_EXIT_LOCAL;
		json_error(a, NULL, line, a->status);
	} else if (told) {
		rstream_failure_str(f, &a->cli.o, line, sizeof(line));
		fprintf(stderr, "rstream: %s\n", line);
	} else if (a->out->failed) {
		/* the run stopped for it; the line is out already */
		a->status = RSTREAM_EXIT_LOCAL;
	} else if (status == -EVR_E_CANCELLED && !a->cli.o.server) {
		/* A client stopped by SIGINT/SIGTERM says where it stood,
		 * on stderr as well as in --json's error record. */
		if (f)
			rstream_failure_str(f, &a->cli.o, line, sizeof(line));
		else
			snprintf(line, sizeof(line), "interrupted");
		fprintf(stderr, "rstream: %s by %s\n", line,
			cli_signame(&a->cl));
	}
}

static void on_done(void *ud, int status, const struct evr_failure *f,
		    int in_child)
{
	struct app *a = ud;

	progress_clear(&a->prog);
	a->done = 1;
	a->in_child = in_child;
	a->status = rstream_exit_status(f);
	say_end(a, status, f);
	/* A server (and --once) reported the connection's failure already,
	 * as a conn_failed record with --json. */
	if (a->cli.o.server && status == -EVR_E_CANCELLED && !a->out->failed)
		a->status = 0;
	if (a->status && !in_child)
		json_error(a, f, "interrupted", a->status);
	cli_loop_finish(&a->cl);
}

static void on_signal(void *ud)
{
	struct app *a = ud;

	if (a->st && !a->done)
		evr_stream_cancel(a->st);
}

/* Upstream's check and message when rsockets find no device. */
/* The program's last word: with --json, a summary record. */
static int finish(struct app *a, int status)
{
	if (a->cli.json && !a->in_child) {
		a->tot->elapsed_ns = evr_now_ns() - a->t0;
		jo_emit(stdout, jo_rstream_summary(a->tot, status));
	}
	fflush(stdout);
	return status;
}

/* A failure before the engine runs: the line on stderr, and with --json
 * an error record and the summary. */
static int fail_early(struct app *a, const char *prefix, const char *msg,
		      int status)
{
	fprintf(stderr, "%s%s\n", prefix, msg);
	json_error(a, NULL, msg, status);
	return finish(a, status);
}

/* Parse; with --json, a command line that does not parse still ends in
 * an error record, and the usage goes to stderr. */
static int parse(struct app *a, int argc, char **argv)
{
	struct cli_msg msg;
	char why[256];
	int ret, json;

	ret = rstream_parse(argc, argv, &a->cli, cli_msg_open(&msg));
	cli_msg_close(&msg, why, sizeof(why), "rstream");
	json = a->cli.json || cli_argv_has(argc, argv, "--json");
	if (ret == RSTREAM_PARSE_USAGE)
		rstream_usage(json ? stderr : stdout, argv[0]);
	if ((ret == RSTREAM_PARSE_USAGE || ret == RSTREAM_PARSE_BAD) && json)
		jo_emit(stdout, jo_error(why[0] ? why : "invalid command line "
					 "(usage on stderr)",
					 RSTREAM_EXIT_USAGE));
	return ret;
}

/* --json -T f: the summary's counts in memory the children share, so
 * that it counts their records too (else it counts the parent's). */
static void share_totals(struct app *a)
{
	void *m;

	if (!a->cli.json || !a->cli.o.fork)
		return;
	m = mmap(NULL, sizeof(*a->tot), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED)
		a->tot = m;
}

/* Room for every connection of a client: 0, or the status of the run
 * that cannot have it.  A server takes what it may. */
static int raise_fds(struct app *a)
{
	unsigned n = a->cli.o.conns ? a->cli.o.conns : 1;
	unsigned long lim;
	char line[512];

	if (a->cli.o.server) {
		fdlimit_raise(0, &lim);
		return 0;
	}
	if (!fdlimit_raise(a->need.fds, &lim))
		return 0;
	snprintf(line, sizeof(line), "-c %u needs ~%lu file descriptors, the "
		 "limit is %lu and cannot be raised", n, a->need.fds, lim);
	return fail_early(a, "rstream: ", line, RSTREAM_EXIT_LOCAL);
}

/* What the host lacks for RDMA, said before anything is made
 * (descriptors: in their own words, by raise_fds()): 0, or the status
 * of the run that cannot go on. */
static int preflight(struct app *a)
{
	struct evr_hc_need pre = a->need;
	char line[512];

	if (!a->need.rdma || a->cli.no_host_check)
		return 0;
	pre.fds = 0;
	if (!diag_preflight("rstream", &pre, 0, line, sizeof(line)))
		return 0;
	json_error(a, NULL, line, RSTREAM_EXIT_LOCAL);
	return finish(a, RSTREAM_EXIT_LOCAL);
}

/* The event loop and the engine on it: 0, or the status of the run
 * that cannot have them. */
static int make_engine(struct app *a)
{
	static const struct evr_stream_cbs cbs = {
		.result = on_result,
		.info = on_info,
		.conn_failed = on_conn_failed,
		.done = on_done,
		.progress = on_progress,
	};
	char line[512];
	int ret;

	if (cli_loop_open(&a->cl, "rstream", a->cli.trace)) {
		json_error(a, NULL, "cannot create the event loop",
			   RSTREAM_EXIT_LOCAL);
		return finish(a, RSTREAM_EXIT_LOCAL);
	}
	ret = evr_stream_new(&a->st, a->cl.loop, &a->cli.o, &cbs, a);
	if (ret) {
		snprintf(line, sizeof(line), "cannot create the engine: %s",
			 strerror(-ret));
		cli_loop_close(&a->cl);
		return fail_early(a, "rstream: ", line, RSTREAM_EXIT_LOCAL);
	}
	cli_loop_signals(&a->cl, on_signal, a);
	return 0;
}

/* Once the run is going to start (an early failure stays the only line
 * on stderr): the plan's warning, and a client's table header, which
 * upstream prints before connecting. */
static void before_start(struct app *a)
{
	if (rstream_plan_warning(&a->cli))
		fprintf(stderr, "rstream: warning: %s\n",
			rstream_plan_warning(&a->cli));
	if (rstream_size_warning(&a->cli))
		fprintf(stderr, "rstream: warning: %s\n",
			rstream_size_warning(&a->cli));
	if (!a->cli.o.server)
		print_header(a);
}

/* Start the engine and run the loop until it is done; a start that
 * fails is said here, and its status kept. */
static void start_and_run(struct app *a)
{
	struct evr_failure f;
	char line[512];
	int ret;

	a->started = !a->out->failed;
	ret = a->started ? evr_stream_start(a->st, &f) : 0;
	if (!a->started) {
		/* the header's write failed: said, and nothing started */
		a->status = RSTREAM_EXIT_LOCAL;
	} else if (ret && diagnosed(a, &f, line, sizeof(line))) {
		a->status = RSTREAM_EXIT_LOCAL;
		json_error(a, NULL, line, a->status);
	} else if (ret) {
		rstream_failure_str(&f, &a->cli.o, line, sizeof(line));
		fprintf(stderr, "rstream: %s\n", line);
		a->status = rstream_exit_status(&f);
		json_error(a, &f, NULL, a->status);
	} else if (!a->done) {
		evr_loop_run(a->cl.loop);
	}
}

/* After the run: the latency tables, the resources freed and the last
 * word; the run's exit status. */
static int wind_up(struct app *a)
{
	int ret;

	evr_stream_free(a->st);
	if (!a->in_child)
		print_lat(a);
	verdict(a);
	free(a->lat);
	progress_free(&a->prog);
	cli_loop_close(&a->cl);
	ret = finish(a, a->status);
	if (a->tot != &a->tot_own)
		munmap(a->tot, sizeof(*a->tot));
	return ret;
}

static int run(int argc, char **argv, struct cli_out *out)
{
	struct app a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.out = out;
	a.tot = &a.tot_own;
	progress_init(&a.prog, stderr, isatty(STDERR_FILENO));
	a.t0 = evr_now_ns();
	switch (parse(&a, argc, argv)) {
	case RSTREAM_PARSE_OK:
		a.prog.per_conn = a.cli.per_conn;
		/* a latency threshold needs the distribution; its table
		 * only when asked for */
		/* --mps: its round trips are what it measures */
		if (a.cli.o.mps)
			a.cli.o.percentiles = 1;
		if (thr_need_lat(&a.cli.fail_if) && !a.cli.o.percentiles) {
			a.cli.o.percentiles = 1;
			a.cli.lat_hidden = 1;
		}
		break;
	case RSTREAM_PARSE_HELP:
		rstream_help(stdout, argv[0]);
		return 0;
	case RSTREAM_PARSE_VERSION:
		printf("rstream (evrdma) %s\n", PACKAGE_VERSION);
		return 0;
	default:
		return RSTREAM_EXIT_USAGE;
	}
	need_of(&a.cli, &a.need);
	if (a.need.rdma)
		diag_memlock_raise(); /* anyone may, up to the hard limit */
	if (a.cli.check)
		return diag_check_mode(stdout, "rstream", PACKAGE_VERSION,
				       &a.need, a.cli.json);
	if (a.cli.json)
		jo_emit(stdout, jo_rstream_start(&a.cli, PACKAGE_VERSION));
	if (cli_out_check(a.out))
		return RSTREAM_EXIT_LOCAL; /* nobody would see the results */
	share_totals(&a);

	/* no device: a client's stdout is upstream's, its header then
	 * nothing (the line goes to stderr) */
	if (evr_stream_transport_check(a.cli.o.transport) == -EVR_E_NODEV) {
		if (!a.cli.o.server)
			print_header(&a);
		return fail_early(&a, "", "No RDMA devices were detected",
				  RSTREAM_EXIT_NODEV);
	}
	/* -T r over TCP: the addresses still go through the RDMA CM (-f
	 * gid over TCP is refused as such, later) */
	if (a.cli.o.resolve_rdma && a.cli.o.addr_fmt != EVR_ADDR_GID &&
	    evr_stream_transport_check(EVR_TRANSPORT_RDMA) == -EVR_E_NODEV)
		return fail_early(&a, "rstream: ", "-T r resolves addresses "
				  "through the RDMA CM, which needs an RDMA "
				  "device: No RDMA devices were detected",
				  RSTREAM_EXIT_NODEV);

	/* Room for every connection, checked before any is made. */
	ret = raise_fds(&a);
	if (ret)
		return ret;
	ret = preflight(&a);
	if (ret)
		return ret;

	ret = make_engine(&a);
	if (ret)
		return ret;
	before_start(&a);
	start_and_run(&a);
	return wind_up(&a);
}

/* Results that never reached stdout are a failure too (rstream.1, EXIT
 * STATUS): a local error, unless the run failed already. */
int main(int argc, char **argv)
{
	struct cli_out out = { .prog = "rstream" };

	cli_out_init(&out);
	return cli_out_close(&out, run(argc, argv, &out), RSTREAM_EXIT_LOCAL);
}
