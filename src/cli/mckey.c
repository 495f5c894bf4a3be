/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey: RDMA CM multicast join / send / receive / leave, on the evrdma
 * engine.  Parse options, run one engine, print upstream's lines (or JSON
 * Lines with --json).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evrdma/loop.h"
#include "evrdma/mcast.h"
#include "evrdma/stream.h"
#include "common.h"
#include "diag.h"
#include "fdlimit.h"
#include "jsonout.h"
#include "mckey_opts.h"

struct app {
	struct mckey_cli cli;
	struct cli_loop cl;
	struct evr_mcast *mc;
	int started;
	int status;
	int done;
	unsigned joined;
	uint64_t t0;
	struct cli_out *out;
	struct evr_hc_need need;  /* the host checks' view of this run */
	int diag_said;            /* the diagnosis is out (once a run) */
	int diagnosed;            /* resources or permissions: exit 5 */
};

/* After output: a write to stdout that failed stops the run (one line on
 * stderr; the exit status is the write's, see main). */
static void out_check(struct app *a)
{
	if (!a->out->failed && cli_out_check(a->out) && a->mc && !a->done)
		evr_mcast_cancel(a->mc);
}

static void out(const char *line)
{
	fputs(line, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

static void on_phase(void *ud, enum evr_mc_phase p)
{
	struct app *a = ud;

	if (p == EVR_MC_PH_STARTING)
		a->started = 1;
	if (a->cli.json) {
		jo_emit(stdout, jo_mc_phase(p));
		out_check(a);
		return;
	}
	switch (p) {
	case EVR_MC_PH_STARTING:
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
	out_check(a);
}

static void on_joined(void *ud, const struct evr_mc_joined *j)
{
	struct app *a = ud;

	a->joined++;
	if (a->cli.json) {
		jo_emit(stdout, jo_mc_join(a->cli.o.group, j));
		out_check(a);
		return;
	}
	printf("mckey: joined dgid: %s mlid 0x%x sl %u\n", j->dgid, j->mlid,
	       j->sl);
	if (a->cli.stats)
		printf("mckey: qp %u joined in %.3f ms\n", j->qp,
		       j->join_ns / 1e6);
	fflush(stdout);
	out_check(a);
}

static void on_cm_event(void *ud, unsigned qp, const char *event, int status,
			int is_error)
{
	struct app *a = ud;

	if (a->cli.json) {
		jo_emit(stdout, jo_mc_cm_event(qp, event, status, is_error));
		out_check(a);
		return;
	}
	printf("mckey: event: %s, status: %d\n", event, status);
	fflush(stdout);
	out_check(a);
}

/* The verbs call behind each of the engine's set-up messages that an
 * errno can come with (src/mcast/rdma.c). */
static const struct {
	const char *msg, *call;
} set_up_calls[] = {
	{ "failed to reg MR", "ibv_reg_mr" },
	{ "mckey: unable to create QP", "rdma_create_qp" },
	{ "mckey: unable to create CQ", "ibv_create_cq" },
};

/* The verbs call behind a set-up message, or NULL for any other. */
static const char *set_up_call(const char *msg)
{
	size_t i;

	if (!msg)
		return NULL;
	for (i = 0; i < sizeof(set_up_calls) / sizeof(set_up_calls[0]); i++)
		if (!strcmp(msg, set_up_calls[i].msg))
			return set_up_calls[i].call;
	return NULL;
}

/* After upstream's line: the host's diagnosis when it explains the
 * failure.  Locked memory and device nodes are a local error (exit 5);
 * the address's device or port only adds the line (upstream's status
 * stays, e.g. 255 for "addr bind failure"). */
static void diagnose(struct app *a, const struct evr_mc_failure *f)
{
	int err = f->sys_errno ? -f->sys_errno : f->code;

	if (!a->need.rdma || a->diag_said || err >= 0 || -err >= EVR_E_BASE)
		return;
	a->diag_said = diag_failure("mckey", &a->need, err,
				    set_up_call(f->msg), NULL, 0);
	a->diagnosed = a->diag_said && (err == -ENOMEM || err == -EPERM ||
					err == -EACCES);
}

static void on_failure(void *ud, const struct evr_mc_failure *f)
{
	struct app *a = ud;

	char line[512];

	/* upstream: perror() text on stderr, printf() text on stdout */
	cli_mc_failure_str(f, line, sizeof(line));
	if (f->with_errno || f->detail[0] ||
	    f->code == -EVR_E_NODEV || a->cli.json)
		fprintf(stderr, "%s\n", line);
	else
		out(f->msg);
	if (a->cli.json)
		jo_emit(stdout, jo_mc_failure(f));
	diagnose(a, f);
	out_check(a);
}

static void report_json(struct app *a, unsigned n,
			const struct evr_mc_qp_report *q)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		jo_emit(stdout, jo_mc_qp(a->cli.o.sender, &q[i]));
		if (a->cli.o.sender)
			continue;
		for (j = 0; j < q[i].nsenders; j++)
			jo_emit(stdout, jo_mc_sender(q[i].qp,
						     &q[i].senders[j]));
	}
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
		/* evrdma's lines (upstream prints none): new figures go at
		 * the end, so that what matched the old ones still does */
		fprintf(f, "mckey: qp %u: received %llu of %llu expected, "
			"%llu without an evrdma header, %llu bad headers, "
			"%llu from untracked senders\n", q[i].qp,
			(unsigned long long)q[i].received,
			(unsigned long long)q[i].expected,
			(unsigned long long)q[i].foreign,
			(unsigned long long)q[i].bad,
			(unsigned long long)q[i].untracked);
		for (j = 0; j < q[i].nsenders; j++) {
			const struct evr_mc_sender_report *s = &q[i].senders[j];

			fprintf(f, "mckey: qp %u: sender %08x: %llu of %u, "
				"lost %llu, duplicates %llu, reordered %llu, "
				"not received before stop %llu, "
				"outside window %llu\n",
				q[i].qp, s->sender,
				(unsigned long long)s->unique, s->count,
				(unsigned long long)s->lost,
				(unsigned long long)s->duplicates,
				(unsigned long long)s->reordered,
				(unsigned long long)s->not_received,
				(unsigned long long)s->out_of_window);
		}
	}
	fflush(stdout);
}

/* --fail-if: each QP's loss (of the datagrams its senders announced,
 * those that never came) against the thresholds; a run that passed
 * otherwise and failed one ends with status 8 and a line each. */
static int verdict(struct app *a, int status, unsigned n,
		   const struct evr_mc_qp_report *q)
{
	double v[THR__COUNT] = { 0 };
	const struct threshold *t;
	uint64_t due, got;
	char where[32], line[256];
	unsigned i, j;

	if (!a->cli.fail_if.n)
		return status;
	for (i = 0; i < n; i++) {
		for (j = 0, due = 0, got = 0; j < q[i].nsenders; j++) {
			due += q[i].senders[j].count;
			got += q[i].senders[j].unique < q[i].senders[j].count ?
			       q[i].senders[j].unique :
			       q[i].senders[j].count;
		}
		/* nothing heard: all it expected is lost */
		if (!q[i].nsenders) {
			due = q[i].expected;
			got = 0;
		}
		if (!due)
			continue;
		v[THR_LOSS] = 100.0 * (double)(due - got) / (double)due;
		snprintf(where, sizeof(where), "qp %u", q[i].qp);
		thr_observe(&a->cli.fail_if, v, 1u << THR_LOSS, where);
	}
	for (i = 0; i < a->cli.fail_if.n; i++) {
		t = &a->cli.fail_if.t[i];
		thr_line(t, line, sizeof(line));
		if (a->cli.json)
			jo_emit(stdout, jo_threshold(t, line));
		else if (!status && (t->failed || !t->checked))
			fprintf(stderr, "mckey: %s\n", line);
	}
	if (status || !thr_failed(&a->cli.fail_if))
		return status;
	if (a->cli.json)
		jo_emit(stdout, jo_error("a --fail-if threshold failed",
					 MCKEY_EXIT_THRESHOLD));
	return MCKEY_EXIT_THRESHOLD;
}

static void on_done(void *ud, int status, unsigned n,
		    const struct evr_mc_qp_report *q)
{
	struct app *a = ud;

	a->done = 1;
	status = verdict(a, status, n, q);
	a->status = status;
	if (a->out->failed && status == -EINTR) {
		/* cancelled for it (no failure came first): the write's
		 * status wins */
		a->status = 0;
	} else if (status == -EINTR && a->cl.signum) {
		char why[64];

		snprintf(why, sizeof(why), "interrupted by %s",
			 cli_signame(&a->cl));
		fprintf(stderr, "mckey: %s\n", why);
		if (a->cli.json)
			jo_emit(stdout, jo_error(why, status & 0xff));
	}
	if (a->cli.json) {
		report_json(a, n, q);
		jo_emit(stdout, jo_mckey_summary(status, status & 0xff,
						 evr_now_ns() - a->t0,
						 a->joined, n));
	} else if (a->started) {
		report(a, n, q);
		out("test complete");
		printf("return status %d\n", status);
		fflush(stdout);
	}
	cli_loop_finish(&a->cl);
}

static void on_signal(void *ud)
{
	struct app *a = ud;

	if (a->mc && !a->done)
		evr_mcast_cancel(a->mc);
}

/* Room for every QP's descriptor (--udp: a socket each): the soft
 * RLIMIT_NOFILE raised as far as it needs (as rstream does for -c);
 * -1, said in one line, when it cannot be. */
static int raise_fds(struct app *a)
{
	unsigned long lim;
	char line[256];

	if (!fdlimit_raise(a->need.fds, &lim))
		return 0;
	snprintf(line, sizeof(line), "-c %u needs ~%lu file descriptors, the "
		 "limit is %lu and cannot be raised", a->cli.o.nqps,
		 a->need.fds, lim);
	fprintf(stderr, "mckey: %s\n", line);
	if (a->cli.json)
		jo_emit(stdout, jo_error(line, DIAG_EXIT));
	return -1;
}

static int run(int argc, char **argv, struct cli_out *out)
{
	static const struct evr_mcast_cbs cbs = {
		.phase = on_phase,
		.joined = on_joined,
		.cm_event = on_cm_event,
		.failure = on_failure,
		.done = on_done,
	};
	struct cli_msg msg;
	char why[256];
	struct app a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.out = out;
	a.t0 = evr_now_ns();
	ret = mckey_parse(argc, argv, &a.cli, cli_msg_open(&msg));
	cli_msg_close(&msg, why, sizeof(why), "mckey");
	if (ret != MCKEY_PARSE_OK && cli_argv_has(argc, argv, "--json"))
		a.cli.json = 1;
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
		if (a.cli.json) {
			fprintf(stderr, "mckey: unmapped multicast address "
				"requires binding to source address\n");
			jo_emit(stdout, jo_error("unmapped multicast address "
						 "requires binding to source "
						 "address", 1));
			return 1;
		}
		printf("unmapped multicast address requires binding to source "
		       "address\n");
		return 1;
	case MCKEY_PARSE_USAGE:
		if (a.cli.json) {
			/* stdout carries JSON only */
			mckey_usage(stderr, argv[0]);
			jo_emit(stdout, jo_error("invalid command line "
						 "(usage on stderr)", 1));
			return 1;
		}
		mckey_usage(stdout, argv[0]);
		return 1;
	default:
		if (a.cli.json)
			jo_emit(stdout, jo_error(why[0] ? why : "invalid "
						 "command line", 1));
		return 1;
	}
	evr_mcast_need(&a.cli.o, &a.need);
	a.need.fds_raise = 1; /* raise_fds() below */
	if (a.need.rdma)
		diag_memlock_raise(); /* anyone may, up to the hard limit */
	if (a.cli.check)
		return diag_check_mode(stdout, "mckey", PACKAGE_VERSION,
				       &a.need, a.cli.json);
	/* What the host lacks for RDMA, said before anything is made; no
	 * device at all, and a message over the MTU, the engine says in
	 * upstream's words */
	if (a.need.rdma && !a.cli.no_host_check &&
	    evr_mc_transport_check(a.cli.o.transport) == 0) {
		struct evr_hc_need pre = a.need;

		pre.msg_size = 0;
		if (diag_preflight("mckey", &pre, 1, why, sizeof(why))) {
			if (a.cli.json)
				jo_emit(stdout, jo_error(why, DIAG_EXIT));
			return DIAG_EXIT;
		}
	}
	if (raise_fds(&a))
		return DIAG_EXIT;
	if (a.cli.json)
		jo_emit(stdout, jo_mckey_start(&a.cli, PACKAGE_VERSION));
	if (cli_out_check(a.out))
		return 0; /* nobody would see the results: the write's status */
	if (cli_loop_open(&a.cl, "mckey", a.cli.trace)) {
		if (a.cli.json)
			jo_emit(stdout, jo_error("cannot create the event loop",
						 1));
		return 1;
	}
	ret = evr_mcast_new(&a.mc, a.cl.loop, &a.cli.o, &cbs, &a);
	if (ret) {
		fprintf(stderr, "mckey: unable to allocate memory for test nodes\n");
		if (a.cli.json)
			jo_emit(stdout, jo_error("unable to allocate memory for "
						 "test nodes", 1));
		cli_loop_close(&a.cl);
		return 1;
	}
	cli_loop_signals(&a.cl, on_signal, &a);
	evr_mcast_start(a.mc);
	if (!a.done)
		evr_loop_run(a.cl.loop);
	evr_mcast_free(a.mc);
	cli_loop_close(&a.cl);
	/* upstream: main() returns run()'s value; a failure the host
	 * explains is a local error (mckey.1, EXIT STATUS) */
	if (a.diagnosed && a.status)
		return DIAG_EXIT;
	return a.status & 0xff;
}

/* Results that never reached stdout are a failure too (mckey.1, EXIT
 * STATUS): the write's negative errno, as mckey's other statuses. */
int main(int argc, char **argv)
{
	struct cli_out out = { .prog = "mckey" };

	cli_out_init(&out);
	return cli_out_close(&out, run(argc, argv, &out), CLI_WRITE_ERRNO);
}
