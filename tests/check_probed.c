/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma-probed's pieces that need no loop: the configuration parser (its
 * defaults and its one-line messages) and the /metrics renderer (escaping,
 * HELP/TYPE, cumulative buckets).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/metrics.h"
#include "daemon/pconf.h"
#include "daemon/probe.h"
#include "daemon/responder.h"
#include "daemon/mesh.h"

static char path[64];

static void put(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/check_probed.%ld.json",
		 (long)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Parse text; expect failure with an error ending in want. */
static void bad(const char *text, const char *want)
{
	struct pconf *c = (struct pconf *)1;
	char err[512], full[600];

	put(text);
	ck_assert_int_eq(pconf_load(&c, path, err, sizeof(err)), -1);
	ck_assert_ptr_null(c);
	ck_assert_ptr_null(strchr(err, '\n'));
	snprintf(full, sizeof(full), "%s: %s", path, want);
	ck_assert_str_eq(err, full);
	unlink(path);
}

START_TEST(test_defaults)
{
	struct pconf *c;
	char err[512];

	put("{ \"probes\": [\n"
	    " { \"name\": \"a\", \"type\": \"rstream\", \"host\": \"h\" },\n"
	    " { \"name\": \"b\", \"type\": \"rstream\", \"host\": \"h\",\n"
	    "   \"kind\": \"bandwidth\", \"port\": \"9000\",\n"
	    "   \"transport\": \"tcp\", \"count\": 7,\n"
	    "   \"verify\": true, \"negotiate\": false, \"poll_us\": 0 },\n"
	    " { \"name\": \"c\", \"type\": \"mckey\", \"group\": \"g\",\n"
	    "   \"role\": \"sender\", \"transport\": \"udp\" } ] }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_str_eq(c->listen_addr, "127.0.0.1");
	ck_assert_uint_eq(c->listen_port, 9471);
	ck_assert_uint_eq(c->nprobes, 3);
	ck_assert_int_eq(c->probes[0].type, PROBE_RSTREAM);
	ck_assert_int_eq(c->probes[0].xport, EVR_XPORT_RDMA);
	ck_assert_str_eq(c->probes[0].port, "7471");
	ck_assert_uint_eq(c->probes[0].size, 64);
	ck_assert_uint_eq(c->probes[0].count, 1);
	ck_assert_uint_eq(c->probes[0].iters, 100);
	/* a probe sends its plan unless told not to */
	ck_assert_int_eq(c->probes[0].verify, 0);
	ck_assert_int_eq(c->probes[0].negotiate, 1);
	ck_assert_int_eq(c->probes[0].poll_us, EVR_DEFAULT_POLL_US);
	ck_assert_double_eq(c->probes[0].interval_s, 10);
	ck_assert_double_eq(c->probes[0].timeout_s, 5);
	ck_assert_int_eq(c->probes[1].xport, EVR_XPORT_TCP);
	ck_assert_str_eq(c->probes[1].port, "9000");
	ck_assert_uint_eq(c->probes[1].size, 65536);
	ck_assert_uint_eq(c->probes[1].count, 7);
	ck_assert_uint_eq(c->probes[1].iters, 1);
	ck_assert_int_eq(c->probes[1].verify, 1);
	ck_assert_int_eq(c->probes[1].negotiate, 0);
	ck_assert_int_lt(c->probes[1].poll_us, 0);   /* 0: never */
	ck_assert_int_eq(c->probes[2].type, PROBE_MCKEY);
	ck_assert_int_eq(c->probes[2].mc_xport, EVR_MC_UDP);
	ck_assert_int_eq(c->probes[2].sender, 1);
	ck_assert_uint_eq(c->probes[2].mc_count, 10);
	ck_assert_uint_eq(c->probes[2].udp_port, 7174);
	ck_assert(!pconf_probe_equal(&c->probes[0], &c->probes[1]));
	ck_assert(pconf_probe_equal(&c->probes[0], &c->probes[0]));
	pconf_free(c);
}
END_TEST

START_TEST(test_errors)
{
	bad("{ \"probes\": [ 1 ] }", "probes[0]: must be an object");
	bad("[]", "the top level must be an object");
	bad("{ \"probes\": {} }", "\"probes\" must be an array");
	bad("{ \"probes\": [ { \"type\": \"rstream\" } ] }",
	    "probes[0]: \"name\" is required");
	bad("{ \"probes\": [ { \"name\": \"a\\nb\", \"type\": \"rstream\" } ] }",
	    "probes[0]: \"name\" must be a string of 1 to 64 printable "
	    "characters");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"ping\" } ] }",
	    "probes[0] (\"a\"): \"type\" is \"ping\", must be one of "
	    "rstream, mckey");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"size\": 0 } ] }",
	    "probes[0] (\"a\"): \"size\" is 0, must be 1 to 67108864");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"count\": 1.5 } ] }",
	    "probes[0] (\"a\"): \"count\" must be an integer");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"port\": \"http\" } ] }",
	    "probes[0] (\"a\"): \"port\" must be a port number 1 to 65535");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"mckey\","
	    " \"group\": \"g\", \"role\": \"both\" } ] }",
	    "probes[0] (\"a\"): \"role\" is \"both\", must be one of "
	    "receiver, sender");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"mckey\","
	    " \"group\": \"g\", \"host\": \"h\" } ] }",
	    "probes[0] (\"a\"): unknown key \"host\"");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"verify\": 1 } ] }",
	    "probes[0] (\"a\"): \"verify\" must be true or false");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"negotiate\": \"no\" } ] }",
	    "probes[0] (\"a\"): \"negotiate\" must be true or false");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"mckey\","
	    " \"group\": \"g\", \"negotiate\": false } ] }",
	    "probes[0] (\"a\"): unknown key \"negotiate\"");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"timeout_s\": 0 } ] }",
	    "probes[0] (\"a\"): \"timeout_s\" is 0, must be 0.1 to 3600");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"poll_us\": 100001 } ] }",
	    "probes[0] (\"a\"): \"poll_us\" is 100001, must be 0 to 100000");
	bad("{ \"listen_address\": \"\" }",
	    "\"listen_address\" must not be empty");
}
END_TEST

START_TEST(test_syntax_error_line)
{
	struct pconf *c;
	char err[512], want[128];

	put("{\n  \"probes\": [\n    { \"name\": \"a\" ,, }\n  ]\n}\n");
	ck_assert_int_eq(pconf_load(&c, path, err, sizeof(err)), -1);
	unlink(path);
	snprintf(want, sizeof(want), "%s:3:", path);
	ck_assert_msg(!strncmp(err, want, strlen(want)), "%s", err);
}
END_TEST

START_TEST(test_escape)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	metrics_escape(f, "a\\b\"c\nd");
	fclose(f);
	ck_assert_str_eq(buf, "a\\\\b\\\"c\\nd");
	free(buf);
}
END_TEST

/* A bind to an address the host lacks fails before any packet leaves:
 * the host's error, not an unreachable network (it was "unreachable"). */
START_TEST(test_stream_reason)
{
	struct evr_failure f;

	memset(&f, 0, sizeof(f));
	f.phase = EVR_PH_SETUP;
	f.err = -EADDRNOTAVAIL;
	f.where = "bind";
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -EADDRINUSE;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -EVR_E_RESOLVE;
	ck_assert_int_eq(probe_stream_reason(&f), R_RESOLVE);
	f.err = -EVR_E_NODEV;
	ck_assert_int_eq(probe_stream_reason(&f), R_NODEV);
	/* the same errnos once the connection is under way: the network */
	f.phase = EVR_PH_CONNECT;
	f.err = -EHOSTUNREACH;
	ck_assert_int_eq(probe_stream_reason(&f), R_UNREACHABLE);
	f.err = -ECONNREFUSED;
	ck_assert_int_eq(probe_stream_reason(&f), R_REFUSED);
	f.phase = EVR_PH_RECV;
	f.err = -EVR_E_STALL;
	ck_assert_int_eq(probe_stream_reason(&f), R_STALL);
	/* every engine code: the reason of its stable name, else "error" */
	f.err = -EVR_E_EOF;
	ck_assert_int_eq(probe_stream_reason(&f), R_EOF);
	f.err = -EVR_E_VERIFY;
	ck_assert_int_eq(probe_stream_reason(&f), R_VERIFY);
	f.err = -EVR_E_REJECTED;
	ck_assert_int_eq(probe_stream_reason(&f), R_REJECTED);
	f.err = -EVR_E_EXTRA;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -EVR_E_PROTO;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -EVR_E_CANCELLED;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -ECONNRESET;
	ck_assert_int_eq(probe_stream_reason(&f), R_RESET);
}
END_TEST

START_TEST(test_render)
{
	struct probe_cfg cfg = { .name = (char *)"x\"y", .type = PROBE_RSTREAM };
	struct probe p, *pp = &p;
	struct metrics_daemon d = { .version = "1.2", .reloads = 3 };
	char *buf, *line, *save;
	size_t len;
	uint64_t last = 0;
	int buckets = 0;

	memset(&p, 0, sizeof(p));
	p.cfg = &cfg;
	p.st.runs = 5;
	p.st.successes = 4;
	p.st.failures[R_REFUSED] = 1;
	p.st.hist[1] = 1;
	p.st.hist[5] = 2;
	p.st.hist[PROBE_NBUCKETS] = 1;
	p.st.hist_count = 4;
	/* host checks: one series per check that applies */
	p.hc_valid = 1;
	p.hc.rows[0].check = EVR_HC_MEMLOCK;
	p.hc.rows[0].verdict = EVR_HC_FAIL;
	p.hc.rows[1].check = EVR_HC_VERBS_DEV;
	p.hc.rows[1].verdict = EVR_HC_OK;
	for (len = 2; len < EVR_HC_COUNT; len++) {
		p.hc.rows[len].check = (enum evr_hc_check)len;
		p.hc.rows[len].verdict = EVR_HC_SKIP;
	}
	ck_assert_int_eq(metrics_render(&buf, &len, &pp, 1, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_host_check_ok gauge\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_host_check_ok{probe=\"x\\\"y\",check=\"memlock\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_host_check_ok{probe=\"x\\\"y\",check=\"verbs_device\"} 1\n"));
	ck_assert_ptr_null(strstr(buf, "check=\"port_state\""));
	ck_assert_uint_eq(strlen(buf), len);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_probe_runs_total counter\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probe_runs_total{probe=\"x\\\"y\"} 5\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probe_failures_total{probe=\"x\\\"y\",reason=\"refused\"} 1\n"));
	ck_assert_ptr_null(strstr(buf, "reason=\"join\""));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probed_config_reloads_total 3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probed_build_info{version=\"1.2\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "le=\"+Inf\"} 4\n"));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		uint64_t v;

		if (strncmp(line, "evrdma_rstream_latency_seconds_bucket", 37))
			continue;
		v = strtoull(strrchr(line, ' ') + 1, NULL, 10);
		ck_assert_uint_ge(v, last);
		last = v;
		buckets++;
	}
	ck_assert_int_eq(buckets, PROBE_NBUCKETS + 1);
	ck_assert_uint_eq(last, 4);
	free(buf);
}
END_TEST

/* Samples fold into the Prometheus buckets one by one: a value on a
 * bound counts in it (le), one above in the next, a range by its
 * midpoint, beyond the last bound in +Inf; n at a time. */
START_TEST(test_hist_add)
{
	uint64_t h[PROBE_NBUCKETS + 1] = { 0 }, count = 0, total = 0;
	double sum = 0;
	int i;

	probe_hist_add(h, &sum, &count, 25000, 25000, 1);
	ck_assert_uint_eq(h[0], 1);
	probe_hist_add(h, &sum, &count, 25001, 25001, 3);
	ck_assert_uint_eq(h[1], 3);
	probe_hist_add(h, &sum, &count, 24900, 25150, 2); /* mid 25025 */
	ck_assert_uint_eq(h[1], 5);
	probe_hist_add(h, &sum, &count, 0, 0, 1);
	ck_assert_uint_eq(h[0], 2);
	probe_hist_add(h, &sum, &count, 3000000000ull, 3000000000ull, 4);
	ck_assert_uint_eq(h[PROBE_NBUCKETS], 4);
	probe_hist_add(h, &sum, &count, 2500000000ull, 2500000000ull, 1);
	ck_assert_uint_eq(h[PROBE_NBUCKETS - 1], 1);
	ck_assert_uint_eq(count, 1 + 3 + 2 + 1 + 4 + 1);
	for (i = 0; i <= PROBE_NBUCKETS; i++)
		total += h[i];
	ck_assert_uint_eq(total, count);
	ck_assert_double_eq_tol(sum, 25e-6 + 3 * 25.001e-6 + 2 * 25.025e-6 +
				12 + 2.5, 1e-9);
}
END_TEST

/* responders: defaults, the label, the plan for upstream clients; the
 * errors, one line each naming the entry */
START_TEST(test_responders_conf)
{
	struct pconf *c;
	char err[512];

	put("{ \"responders\": [\n"
	    " { \"transport\": \"tcp\", \"port\": 7471 },\n"
	    " { \"transport\": \"rdma\", \"port\": \"7472\", \"bind\": \"::1\",\n"
	    "   \"max_conns\": 3, \"max_memory\": 65536, \"size\": 1000 },\n"
	    " { \"transport\": \"tcp\", \"port\": 7471, \"bind\": \"10.0.0.1\" } ] }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_uint_eq(c->nprobes, 0);
	ck_assert_uint_eq(c->nresponders, 3);
	ck_assert_str_eq(c->responders[0].label, "tcp:*:7471");
	ck_assert_int_eq(c->responders[0].xport, EVR_XPORT_TCP);
	ck_assert_ptr_null(c->responders[0].bind);
	ck_assert_uint_eq(c->responders[0].max_conns, 0);
	ck_assert_int_eq(c->responders[0].custom, 0);
	ck_assert_str_eq(c->responders[1].label, "rdma:[::1]:7472");
	ck_assert_uint_eq(c->responders[1].port, 7472);
	ck_assert_uint_eq(c->responders[1].max_conns, 3);
	ck_assert_uint_eq(c->responders[1].max_memory, 65536);
	ck_assert_int_eq(c->responders[1].custom, 1);
	ck_assert_uint_eq(c->responders[1].size, 1000);
	ck_assert_uint_eq(c->responders[1].count, 1);
	ck_assert_uint_eq(c->responders[1].iters, 100);
	ck_assert_str_eq(c->responders[2].label, "tcp:10.0.0.1:7471");
	ck_assert(pconf_responder_equal(&c->responders[0], &c->responders[0]));
	ck_assert(!pconf_responder_equal(&c->responders[0], &c->responders[2]));
	pconf_free(c);

	bad("{ \"responders\": 1 }", "\"responders\" must be an array");
	bad("{ \"responders\": [ 1 ] }", "responders[0]: must be an object");
	bad("{ \"responders\": [ { \"port\": 1 } ] }",
	    "responders[0]: \"transport\" is required");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 0 } ] }",
	    "responders[0]: \"port\" must be a port number 1 to 65535");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 1,"
	    " \"max_memory\": 1 } ] }",
	    "responders[0]: \"max_memory\" is 1, must be 4096 to 1099511627776");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 1 },"
	    " { \"transport\": \"tcp\", \"port\": 1 } ] }",
	    "responders[1]: the same transport, bind and port as responders[0]");
	/* a probe's error still names the probe */
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\" } ],"
	    " \"responders\": [] }", "probes[0] (\"a\"): \"host\" is required");
}
END_TEST

/* What a server's conn_failed says, as a drop reason. */
START_TEST(test_responder_reason)
{
	struct evr_failure f;

	memset(&f, 0, sizeof(f));
	/* the once-per-episode report of turned-away connections: counted
	 * one by one from EVR_INFO_TURNED_AWAY instead */
	f.err = -ECONNREFUSED;
	f.detail = EVR_REJECT_CONNS;
	ck_assert_int_eq(resp_reason_of(&f), -1);
	f.err = -EMFILE;
	f.detail = 0;
	ck_assert_int_eq(resp_reason_of(&f), RR_FDS);
	f.conn_id = 4;
	f.err = -ENOBUFS;
	f.detail = EVR_REJECT_BUDGET;
	ck_assert_int_eq(resp_reason_of(&f), RR_BUDGET);
	f.err = -EVR_E_REJECTED;
	ck_assert_int_eq(resp_reason_of(&f), RR_BUDGET);
	f.detail = EVR_REJECT_SIZE;
	ck_assert_int_eq(resp_reason_of(&f), RR_REJECTED);
	f.detail = 0;
	f.err = -EVR_E_STALL;
	ck_assert_int_eq(resp_reason_of(&f), RR_STALL);
	f.err = -EVR_E_EOF;
	ck_assert_int_eq(resp_reason_of(&f), RR_EOF);
	f.err = -ECONNRESET;
	ck_assert_int_eq(resp_reason_of(&f), RR_RESET);
	f.err = -EVR_E_VERIFY;
	ck_assert_int_eq(resp_reason_of(&f), RR_VERIFY);
	f.err = -EVR_E_EXTRA;
	ck_assert_int_eq(resp_reason_of(&f), RR_PROTO);
	f.err = -EIO;
	ck_assert_int_eq(resp_reason_of(&f), RR_ERROR);
	ck_assert_str_eq(resp_reason_names[RR_PROTO], "protocol");
}
END_TEST

/* The responders' families: HELP and TYPE, a series per responder and
 * reason, the label escaped. */
START_TEST(test_render_responders)
{
	struct responder_cfg cfg = { .label = (char *)"tcp:*:7471" };
	struct responder r, *rp = &r;
	struct metrics_daemon d = { .version = "1" };
	char *buf;
	size_t len;

	memset(&r, 0, sizeof(r));
	r.cfg = &cfg;
	r.st.listening = 1;
	r.st.served = 9;
	r.st.done = 7;
	r.st.active = 1;
	r.st.dropped[RR_CONNS] = 5;
	d.responders = &rp;
	d.nresponders = 1;
	ck_assert_int_eq(metrics_render(&buf, &len, NULL, 0, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probed_responders 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_responder_connections_total counter\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_responder_connections_active gauge\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_responder_dropped_total counter\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_listening{responder=\"tcp:*:7471\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_connections_total{responder=\"tcp:*:7471\"} 9\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_connections_finished_total{responder=\"tcp:*:7471\"} 7\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_connections_active{responder=\"tcp:*:7471\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_dropped_total{responder=\"tcp:*:7471\",reason=\"conns\"} 5\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_responder_dropped_total{responder=\"tcp:*:7471\",reason=\"error\"} 0\n"));
	free(buf);
}
END_TEST

/* A peers file's line: NAME ADDRESS [KEY=VALUE ...], comments, blanks;
 * the label names Prometheus accepts and the daemon does not use. */
static void line_ok(const char *line, const char *name, const char *addr,
		    const char *labels)
{
	char *n, *a, *l, err[256] = "";

	ck_assert_msg(mesh_parse_line(line, &n, &a, &l, err, sizeof(err)) == 0,
		      "%s: %s", line, err);
	ck_assert_str_eq(n, name);
	ck_assert_str_eq(a, addr);
	ck_assert_str_eq(l, labels);
	free(n);
	free(a);
	free(l);
}

static void line_bad(const char *line, const char *want)
{
	char *n = (char *)1, *a = (char *)1, *l = (char *)1, err[256] = "";

	ck_assert_int_eq(mesh_parse_line(line, &n, &a, &l, err, sizeof(err)),
			 -1);
	ck_assert_ptr_null(n);
	ck_assert_ptr_null(l);
	ck_assert_msg(strstr(err, want), "%s: '%s' lacks '%s'", line, err,
		      want);
}

START_TEST(test_mesh_lines)
{
	char *n, *a, *l, err[64];

	line_ok("h1 10.0.0.1", "h1", "10.0.0.1", "peer=\"h1\"");
	line_ok("\th1   fe80::1  rack=r1\tzone=a # why", "h1", "fe80::1",
		"peer=\"h1\",rack=\"r1\",zone=\"a\"");
	line_ok("x\"y h rack=a\\b\r", "x\"y", "h",
		"peer=\"x\\\"y\",rack=\"a\\\\b\"");
	line_ok("h h _ok=", "h", "h", "peer=\"h\",_ok=\"\"");
	ck_assert_int_eq(mesh_parse_line("", &n, &a, &l, err, sizeof(err)), 1);
	ck_assert_int_eq(mesh_parse_line("   # only a comment", &n, &a, &l,
					 err, sizeof(err)), 1);
	line_bad("lonely", "NAME ADDRESS");
	line_bad("h a rack", "\"rack\" is not KEY=VALUE");
	line_bad("h a 1x=2", "\"1x\" is not a usable label name");
	line_bad("h a __name__=x", "\"__name__\" is not a usable");
	line_bad("h a le=1", "\"le\" is not a usable");
	line_bad("h a peer=1", "\"peer\" is not a usable");
	line_bad("h a probe=1", "\"probe\" is not a usable");
	line_bad("h a ra-ck=1", "\"ra-ck\" is not a usable");
	line_bad("h a =1", "\"\" is not a usable");
	line_bad("h a k=1 k=2", "label \"k\" given twice");
	line_bad("h a k\001=1", "a control character");
	line_bad("h a a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 "
		 "n=1 o=1 p=1 q=1", "more than 16 labels");
	line_bad("12345678901234567890123456789012345678901234567890123456789"
		 "0123456 a", "a name longer than 64");
}
END_TEST

START_TEST(test_mesh_local)
{
	ck_assert_int_eq(mesh_addr_is_local("127.0.0.1"), 1);
	ck_assert_int_eq(mesh_addr_is_local("127.0.0.2"), 0);
	ck_assert_int_eq(mesh_addr_is_local("192.0.2.77"), 0);
	ck_assert_int_eq(mesh_addr_is_local("localhost"), 0); /* no lookup */
}
END_TEST

/* "mesh": the probe keys but a peer's own; a mesh probe's series carry
 * its labels after probe="...". */
START_TEST(test_mesh_conf)
{
	struct pconf *c;
	struct probe p, *pp = &p;
	struct probe_cfg cfg;
	struct metrics_daemon d = { .version = "1" };
	char err[512], *buf;
	size_t len;

	put("{ \"mesh\": { \"peers_file\": \"/etc/peers\", \"transport\": \"tcp\",\n"
	    "  \"port\": 7000, \"interval_s\": 2, \"iters\": 5 } }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_ptr_nonnull(c->mesh);
	ck_assert_str_eq(c->mesh->peers_file, "/etc/peers");
	ck_assert_int_eq(c->mesh->tmpl.xport, EVR_XPORT_TCP);
	ck_assert_str_eq(c->mesh->tmpl.port, "7000");
	ck_assert_double_eq(c->mesh->tmpl.interval_s, 2);
	ck_assert_double_eq(c->mesh->tmpl.timeout_s, 5);
	ck_assert_uint_eq(c->mesh->tmpl.iters, 5);
	ck_assert_int_eq(pconf_probe_copy(&cfg, &c->mesh->tmpl), 0);
	ck_assert_ptr_ne(cfg.port, c->mesh->tmpl.port);
	ck_assert_str_eq(cfg.port, "7000");
	free(cfg.labels);
	cfg.labels = strdup("peer=\"h2\",rack=\"r1\"");
	memset(&p, 0, sizeof(p));
	p.cfg = &cfg;
	ck_assert_int_eq(metrics_render(&buf, &len, &pp, 1, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probe_runs_total{probe=\"mesh\",peer=\"h2\",rack=\"r1\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_probe_failures_total{probe=\"mesh\",peer=\"h2\",rack=\"r1\",reason=\"refused\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_rstream_latency_seconds_bucket{probe=\"mesh\",peer=\"h2\",rack=\"r1\",le=\"+Inf\"} 0\n"));
	free(buf);
	pconf_probe_fini(&cfg);
	pconf_free(c);
	bad("{ \"mesh\": [] }", "mesh: must be an object");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"type\": \"rstream\" } }",
	    "mesh: unknown key \"type\" (each peer's, from the peers file)");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"interval_s\": 0 } }",
	    "mesh: \"interval_s\" is 0, must be 0.1 to 86400");
	bad("{ \"mesh\": { \"peers_file\": 1 } }",
	    "mesh: \"peers_file\" must be a string");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("probed");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_syntax_error_line);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_hist_add);
	tcase_add_test(tc, test_responders_conf);
	tcase_add_test(tc, test_responder_reason);
	tcase_add_test(tc, test_render_responders);
	tcase_add_test(tc, test_mesh_lines);
	tcase_add_test(tc, test_mesh_local);
	tcase_add_test(tc, test_mesh_conf);
	tcase_add_test(tc, test_stream_reason);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
