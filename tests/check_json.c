/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --json's record builders and writer, --settings' line, and the shared
 * CLI helpers: each record is written as a line, read back with
 * json_loads, and compared field by field.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"
#include "cli/diag.h"
#include "cli/jsonout.h"
#include "cli/mckey_opts.h"
#include "cli/report.h"
#include "cli/rstream_opts.h"
#include "loop/loop.h"
#include "stream/rdma/rdma.h"
#include "stream/tcp.h"

/* rec as jo_emit writes it, in buf (freed with rec). */
static void emitted(json_t *rec, char *buf, size_t len)
{
	FILE *f = tmpfile();
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(jo_emit(f, rec), 0);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
}

/* Write rec with jo_emit, check it is one line, and parse it back. */
static json_t *roundtrip(json_t *rec)
{
	char buf[8192];
	json_error_t e;
	json_t *back;
	FILE *f = tmpfile();
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(jo_emit(f, rec), 0);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	ck_assert_uint_gt(n, 2);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + n - 1); /* one line */
	/* compact: no space after separators */
	ck_assert_ptr_null(strstr(buf, "\": "));
	ck_assert_ptr_null(strstr(buf, ", \""));
	back = json_loads(buf, 0, &e);
	ck_assert_msg(back != NULL, "not JSON: %s (%s)", buf, e.text);
	ck_assert(json_is_object(back));
	/* the type comes first */
	ck_assert_msg(!strncmp(buf, "{\"type\":", 8), "%s", buf);
	return back;
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_string(v), "%s is not a string", k);
	return json_string_value(v);
}

static long long num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_integer(v), "%s is not an integer", k);
	return json_integer_value(v);
}

static double real(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_number(v), "%s is not a number", k);
	return json_number_value(v);
}

static int boolean(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	ck_assert_msg(json_is_boolean(v), "%s is not a boolean", k);
	return json_is_true(v);
}

static int has(json_t *o, const char *k)
{
	return json_object_get(o, k) != NULL;
}

static void close_to(double a, double b)
{
	ck_assert_msg(fabs(a - b) <= 1e-9 * fmax(fabs(b), 1e-9),
		      "%.17g != %.17g", a, b);
}

/* ---------------------------------------------------------------- rstream */

START_TEST(test_result)
{
	struct evr_result r = {
		.name = "64_lat", .size = 64, .count = 1, .iters = 100000,
		.bytes = 12800000, .elapsed_ns = 2500000000ull, .conn_id = 7,
		.peer = "127.0.0.1:4000",
	};
	json_t *o = roundtrip(jo_result(&r));

	ck_assert_str_eq(str(o, "type"), "result");
	ck_assert_str_eq(str(o, "test"), "64_lat");
	ck_assert_int_eq(num(o, "conn"), 7);
	ck_assert_str_eq(str(o, "peer"), "127.0.0.1:4000");
	ck_assert_int_eq(num(o, "bytes_per_xfer"), 64);
	ck_assert_int_eq(num(o, "xfers_per_iter"), 1);
	ck_assert_int_eq(num(o, "iters"), 100000);
	ck_assert_int_eq(num(o, "total_bytes"), 12800000);
	ck_assert_int_eq(num(o, "elapsed_ns"), 2500000000ll);
	close_to(real(o, "elapsed_s"), 2.5);
	/* upstream: bytes * 8 / (1000 * usec); usec / iters / (count * 2) */
	close_to(real(o, "gbps"), 12800000 * 8.0 / 2500000000.0);
	close_to(real(o, "usec_per_xfer"), 2500000.0 / 100000 / 2);
	ck_assert(!has(o, "latency"));
	json_decref(o);
}
END_TEST

START_TEST(test_result_latency)
{
	struct evr_lat_stats l = {
		.samples = 1000, .min_ns = 10, .p50_ns = 20, .p90_ns = 30,
		.p99_ns = 40, .p999_ns = 50, .max_ns = 60, .mean_ns = 22.5,
	};
	struct evr_result r = {
		.name = "custom", .size = 1, .count = 1, .iters = 1000,
		.bytes = 2000, .elapsed_ns = 1000000, .peer = "", .lat = &l,
	};
	json_t *o = roundtrip(jo_result(&r));
	json_t *lat = json_object_get(o, "latency");

	ck_assert(json_is_object(lat));
	ck_assert_int_eq(num(lat, "samples"), 1000);
	ck_assert_int_eq(num(lat, "min_ns"), 10);
	ck_assert_int_eq(num(lat, "p50_ns"), 20);
	ck_assert_int_eq(num(lat, "p90_ns"), 30);
	ck_assert_int_eq(num(lat, "p99_ns"), 40);
	ck_assert_int_eq(num(lat, "p99_9_ns"), 50);
	ck_assert_int_eq(num(lat, "max_ns"), 60);
	close_to(real(lat, "mean_ns"), 22.5);
	json_decref(o);
}
END_TEST

/* A run too short for the clock: no NaN or infinity (which JSON lacks). */
START_TEST(test_result_zero_time)
{
	struct evr_result r = {
		.name = "x", .size = 1, .count = 1, .iters = 1, .bytes = 2,
		.elapsed_ns = 0, .peer = "",
	};
	json_t *o = roundtrip(jo_result(&r));

	close_to(real(o, "gbps"), 0);
	close_to(real(o, "usec_per_xfer"), 0);
	json_decref(o);
}
END_TEST

/* Strings are escaped; what goes in comes back. */
START_TEST(test_escaping)
{
	const char *nasty = "a\"b\\c\n\t\x01 \xc3\xa9";
	struct evr_result r = {
		.name = nasty, .size = 1, .count = 1, .iters = 1, .bytes = 2,
		.elapsed_ns = 1, .peer = nasty,
	};
	json_t *o = roundtrip(jo_result(&r));

	ck_assert_str_eq(str(o, "test"), nasty);
	ck_assert_str_eq(str(o, "peer"), nasty);
	json_decref(o);
}
END_TEST

START_TEST(test_info_records)
{
	struct evr_info i = { .kind = EVR_INFO_ACCEPTED, .conn_id = 3,
			      .peer = "10.0.0.1:5" };
	json_t *o;

	o = roundtrip(jo_info(&i));
	ck_assert_str_eq(str(o, "type"), "accepted");
	ck_assert_int_eq(num(o, "conn"), 3);
	ck_assert_str_eq(str(o, "peer"), "10.0.0.1:5");
	json_decref(o);

	i.kind = EVR_INFO_CONN_DONE;
	i.negotiated = 1;
	o = roundtrip(jo_info(&i));
	ck_assert_str_eq(str(o, "type"), "conn_done");
	ck_assert(boolean(o, "negotiated"));
	json_decref(o);

	i.kind = EVR_INFO_KEEPALIVE;
	i.keepalive_on = 1;
	i.keepalive_idle = 9;
	o = roundtrip(jo_info(&i));
	ck_assert_str_eq(str(o, "type"), "keepalive");
	ck_assert(boolean(o, "on"));
	ck_assert_int_eq(num(o, "idle_s"), 9);
	json_decref(o);

	i.kind = EVR_INFO_LISTENING;
	o = roundtrip(jo_info(&i));
	ck_assert_str_eq(str(o, "type"), "listening");
	ck_assert_int_eq(json_object_size(o), 1);
	json_decref(o);

	/* settings without its struct, or a kind from the future: nothing */
	i.kind = EVR_INFO_SETTINGS;
	i.settings = NULL;
	ck_assert_ptr_null(jo_info(&i));
	i.kind = (enum evr_info_kind)1000;
	ck_assert_ptr_null(jo_info(&i));
}
END_TEST

/* The settings' record and line are the transport's rows, which TCP's
 * and RDMA's own code fill (evr__tcp_settings_rows(),
 * evr__rdma_settings_rows()): the keys, words and orders of before they
 * were rows, byte for byte. */
START_TEST(test_settings_tcp)
{
	struct evr_conn_settings s = {
		.transport = EVR_TRANSPORT_TCP, .local = "127.0.0.1:1",
		.peer = "127.0.0.1:2",
		.keepalive_on = 1, .keepalive_idle_s = 5,
	};
	const struct evr__tcp_settings v = {
		.sndbuf = 2626560, .rcvbuf = 131072, .nodelay = 1,
		.mss = 32768, .keepintvl_s = 75, .keepcnt = 9,
	};
	struct evr_info i = { .kind = EVR_INFO_SETTINGS, .conn_id = 4,
			      .peer = "ignored", .settings = &s };
	json_t *o;
	char line[512];

	evr__tcp_settings_rows(&s, &v);
	emitted(jo_info(&i), line, sizeof(line));
	ck_assert_str_eq(line, "{\"type\":\"settings\",\"conn\":4,\"peer\":"
			 "\"127.0.0.1:2\",\"local\":\"127.0.0.1:1\","
			 "\"transport\":\"tcp\",\"sndbuf_bytes\":2626560,"
			 "\"rcvbuf_bytes\":131072,\"nodelay\":true,"
			 "\"mss_bytes\":32768,\"keepalive\":true,"
			 "\"keepalive_idle_s\":5,\"keepalive_intvl_s\":75,"
			 "\"keepalive_probes\":9}\n");
	o = roundtrip(jo_info(&i));

	ck_assert_str_eq(str(o, "type"), "settings");
	ck_assert_int_eq(num(o, "conn"), 4);
	ck_assert_str_eq(str(o, "peer"), "127.0.0.1:2");
	ck_assert_str_eq(str(o, "local"), "127.0.0.1:1");
	ck_assert_str_eq(str(o, "transport"), "tcp");
	ck_assert_int_eq(num(o, "sndbuf_bytes"), 2626560);
	ck_assert_int_eq(num(o, "rcvbuf_bytes"), 131072);
	ck_assert(boolean(o, "nodelay"));
	ck_assert_int_eq(num(o, "mss_bytes"), 32768);
	ck_assert(boolean(o, "keepalive"));
	ck_assert_int_eq(num(o, "keepalive_idle_s"), 5);
	ck_assert_int_eq(num(o, "keepalive_intvl_s"), 75);
	ck_assert_int_eq(num(o, "keepalive_probes"), 9);
	ck_assert(!has(o, "sq_depth"));
	json_decref(o);

	rstream_format_settings(line, sizeof(line), 4, "x", &s);
	ck_assert_str_eq(line, "settings conn 4 local 127.0.0.1:1 peer "
			 "127.0.0.1:2: tcp sndbuf 2626560 rcvbuf 131072 "
			 "nodelay 1 mss 32768 keepalive idle 5 intvl 75 "
			 "probes 9\n");
	s.keepalive_on = 0;
	s.peer[0] = '\0';
	s.nrows = 0;
	evr__tcp_settings_rows(&s, &v);
	emitted(jo_info(&i), line, sizeof(line));
	ck_assert_str_eq(line, "{\"type\":\"settings\",\"conn\":4,\"peer\":"
			 "\"ignored\",\"local\":\"127.0.0.1:1\","
			 "\"transport\":\"tcp\",\"sndbuf_bytes\":2626560,"
			 "\"rcvbuf_bytes\":131072,\"nodelay\":true,"
			 "\"mss_bytes\":32768,\"keepalive\":false}\n");
	rstream_format_settings(line, sizeof(line), 4, "10.1.1.1:9", &s);
	ck_assert_str_eq(line, "settings conn 4 local 127.0.0.1:1 peer "
			 "10.1.1.1:9: tcp sndbuf 2626560 rcvbuf 131072 "
			 "nodelay 1 mss 32768 keepalive off\n");
	/* a short buffer is cut, never overrun */
	memset(line, 'z', sizeof(line));
	size_t n;

	rstream_format_settings(line, 20, 4, "x", &s);
	ck_assert_uint_eq(strlen(line), 19);
	/* ... at any length, to what fits of the whole line */
	for (n = 1; n < 120; n++) {
		char whole[512], cut[512];

		rstream_format_settings(whole, sizeof(whole), 4, "x", &s);
		memset(cut, 'z', sizeof(cut));
		rstream_format_settings(cut, n, 4, "x", &s);
		ck_assert_uint_eq(strlen(cut), n - 1 < strlen(whole) ?
				  n - 1 : strlen(whole));
		ck_assert_int_eq(strncmp(cut, whole, n - 1), 0);
	}
}
END_TEST

START_TEST(test_settings_rdma)
{
	struct evr_conn_settings s = {
		.transport = EVR_TRANSPORT_RDMA, .local = "10.0.0.1:7471",
		.peer = "10.0.0.2:40000",
	};
	const struct evr__rdma_settings v = {
		.sbuf_bytes = 1048576, .rbuf_bytes = 1048576,
		.inline_bytes = 64, .sq_depth = 384, .rq_depth = 400,
		.credits_granted = 384, .credits_peer = 384,
		.peer_target_sgl = 2, .peer_rbuf_bytes = 1048576,
	};
	json_t *o;
	char line[512];

	evr__rdma_settings_rows(&s, &v);
	emitted(jo_settings(1, "", &s), line, sizeof(line));
	ck_assert_str_eq(line, "{\"type\":\"settings\",\"conn\":1,\"peer\":"
			 "\"10.0.0.2:40000\",\"local\":\"10.0.0.1:7471\","
			 "\"transport\":\"rdma\",\"sbuf_bytes\":1048576,"
			 "\"rbuf_bytes\":1048576,\"inline_bytes\":64,"
			 "\"sq_depth\":384,\"rq_depth\":400,"
			 "\"credits_granted\":384,\"credits_peer\":384,"
			 "\"peer_target_sgl_entries\":2,"
			 "\"peer_rbuf_bytes\":1048576,\"keepalive\":false}\n");
	o = roundtrip(jo_settings(1, "", &s));

	ck_assert_str_eq(str(o, "transport"), "rdma");
	ck_assert_int_eq(num(o, "sbuf_bytes"), 1048576);
	ck_assert_int_eq(num(o, "rbuf_bytes"), 1048576);
	ck_assert_int_eq(num(o, "inline_bytes"), 64);
	ck_assert_int_eq(num(o, "sq_depth"), 384);
	ck_assert_int_eq(num(o, "rq_depth"), 400);
	ck_assert_int_eq(num(o, "credits_granted"), 384);
	ck_assert_int_eq(num(o, "credits_peer"), 384);
	ck_assert_int_eq(num(o, "peer_target_sgl_entries"), 2);
	ck_assert_int_eq(num(o, "peer_rbuf_bytes"), 1048576);
	ck_assert(!boolean(o, "keepalive"));
	ck_assert(!has(o, "keepalive_idle_s"));
	ck_assert(!has(o, "sndbuf_bytes"));
	json_decref(o);

	rstream_format_settings(line, sizeof(line), 1, "", &s);
	ck_assert_str_eq(line, "settings conn 1 local 10.0.0.1:7471 peer "
			 "10.0.0.2:40000: rdma sbuf 1048576 rbuf 1048576 "
			 "inline 64 sq 384 rq 400 credits 384 peer_credits 384 "
			 "peer_rbuf 1048576 peer_sgl 2 keepalive off\n");
	/* -k over RDMA: its idle time alone, no knobs of TCP's */
	s.keepalive_on = 1;
	s.keepalive_idle_s = 30;
	emitted(jo_settings(1, "", &s), line, sizeof(line));
	ck_assert_ptr_nonnull(strstr(line, "\"peer_rbuf_bytes\":1048576,"
				     "\"keepalive\":true,"
				     "\"keepalive_idle_s\":30}\n"));
	rstream_format_settings(line, sizeof(line), 1, "", &s);
	ck_assert_str_eq(line, "settings conn 1 local 10.0.0.1:7471 peer "
			 "10.0.0.2:40000: rdma sbuf 1048576 rbuf 1048576 "
			 "inline 64 sq 384 rq 400 credits 384 peer_credits 384 "
			 "peer_rbuf 1048576 peer_sgl 2 keepalive 30\n");
}
END_TEST

START_TEST(test_failure_records)
{
	struct evr_failure f = {
		.err = -EVR_E_STALL, .detail = 10000, .phase = EVR_PH_RECV,
		.test = "4k_bw", .test_index = 5, .test_total = 8,
		.iters_done = 0, .iters_total = 1, .xfers_done = 17,
		.xfers_total = 10000, .bytes_done = 4096, .peer = "1.2.3.4:5",
		.where = "recv", .conn_id = 12,
	};
	json_t *o;
	char line[512];

	rstream_failure_str(&f, NULL, line, sizeof(line));
	o = roundtrip(jo_failure("conn_failed", &f, line, -1));
	ck_assert_str_eq(str(o, "type"), "conn_failed");
	ck_assert_str_eq(str(o, "message"), line);
	ck_assert_int_eq(num(o, "conn"), 12);
	ck_assert_str_eq(str(o, "error"), "stall");
	ck_assert(!has(o, "errno"));
	ck_assert_str_eq(str(o, "phase"), "recv");
	ck_assert_str_eq(str(o, "where"), "recv");
	ck_assert_str_eq(str(o, "peer"), "1.2.3.4:5");
	ck_assert_str_eq(str(o, "test"), "4k_bw");
	ck_assert_int_eq(num(o, "test_index"), 5);
	ck_assert_int_eq(num(o, "tests_total"), 8);
	ck_assert_int_eq(num(o, "xfers_done"), 17);
	ck_assert_int_eq(num(o, "xfers_total"), 10000);
	ck_assert_int_eq(num(o, "bytes_done"), 4096);
	ck_assert(!has(o, "exit_status"));
	json_decref(o);

	/* a system error before any test: errno, no test fields */
	memset(&f, 0, sizeof(f));
	f.err = -111;
	f.phase = EVR_PH_CONNECT;
	f.where = "connect";
	o = roundtrip(jo_failure("error", &f, "m", RSTREAM_EXIT_CONNECT));
	ck_assert_str_eq(str(o, "type"), "error");
	ck_assert_str_eq(str(o, "error"), "system");
	ck_assert_int_eq(num(o, "errno"), 111);
	ck_assert_str_eq(str(o, "phase"), "connect");
	ck_assert_int_eq(num(o, "conn"), 0);
	ck_assert(!has(o, "test"));
	ck_assert_int_eq(num(o, "exit_status"), 3);
	json_decref(o);

	/* setup: no connection to name */
	f.phase = EVR_PH_SETUP;
	f.err = -EVR_E_RESOLVE;
	o = roundtrip(jo_failure("error", &f, "m", RSTREAM_EXIT_RESOLVE));
	ck_assert_str_eq(str(o, "error"), "resolve");
	ck_assert(!has(o, "conn"));
	ck_assert(!has(o, "errno"));
	json_decref(o);

	o = roundtrip(jo_error("No RDMA devices were detected", 255));
	ck_assert_str_eq(str(o, "message"), "No RDMA devices were detected");
	ck_assert_int_eq(num(o, "exit_status"), 255);
	ck_assert_int_eq(json_object_size(o), 3);
	json_decref(o);
}
END_TEST

START_TEST(test_summary)
{
	struct jo_totals t = {
		.results = 8, .total_bytes = 123456789012ull,
		.elapsed_ns = 1500000000ull, .accepted = 2, .conn_done = 1,
		.conn_failed = 1,
	};
	json_t *o = roundtrip(jo_rstream_summary(&t, 4));

	ck_assert_str_eq(str(o, "type"), "summary");
	ck_assert_str_eq(str(o, "tool"), "rstream");
	ck_assert_int_eq(num(o, "results"), 8);
	ck_assert_int_eq(num(o, "total_bytes"), 123456789012ll);
	close_to(real(o, "elapsed_s"), 1.5);
	ck_assert_int_eq(num(o, "accepted"), 2);
	ck_assert_int_eq(num(o, "conn_done"), 1);
	ck_assert_int_eq(num(o, "conn_failed"), 1);
	ck_assert_int_eq(num(o, "exit_status"), 4);
	json_decref(o);
}
END_TEST

static char *argv_buf[32];

static char **args(const char *first, ...)
{
	va_list ap;
	const char *a;
	int n = 0;

	argv_buf[n++] = (char *)first;
	va_start(ap, first);
	while ((a = va_arg(ap, const char *)) && n < 31)
		argv_buf[n++] = (char *)a;
	va_end(ap);
	argv_buf[n] = NULL;
	return argv_buf;
}

static int nargs(char **v)
{
	int n = 0;

	while (v[n])
		n++;
	return n;
}

START_TEST(test_rstream_start)
{
	struct rstream_cli cli;
	char **v = args("rstream", "-s", "host1", "-T", "s", "-T", "a",
			"-S", "1k", "-C", "5", "--json", "--settings",
			"--no-negotiate", NULL);
	json_t *o, *opt;

	ck_assert_int_eq(rstream_parse(nargs(v), v, &cli, stderr),
			 RSTREAM_PARSE_OK);
	ck_assert(cli.json);
	ck_assert(cli.o.report_settings);
	o = roundtrip(jo_rstream_start(&cli, "9.9"));
	ck_assert_str_eq(str(o, "tool"), "rstream");
	ck_assert_str_eq(str(o, "version"), "9.9");
	ck_assert_str_eq(str(o, "mode"), "client");
	ck_assert_str_eq(str(o, "transport"), "tcp");
	ck_assert_str_eq(str(o, "io"), "async");
	opt = json_object_get(o, "options");
	ck_assert(json_is_object(opt));
	ck_assert_str_eq(str(opt, "server"), "host1");
	ck_assert(json_is_null(json_object_get(opt, "bind")));
	ck_assert_int_eq(num(opt, "port"), 7471); /* a number, not "7471" */
	ck_assert_str_eq(str(opt, "tests"), "custom");
	ck_assert_int_eq(num(opt, "bytes_per_xfer"), 1024);
	ck_assert_int_eq(num(opt, "xfers_per_iter"), 5);
	ck_assert_int_eq(num(opt, "iters"), 1);
	ck_assert_int_eq(num(opt, "buffer_bytes"), 524288);
	ck_assert_str_eq(str(opt, "negotiate"), "never");
	ck_assert(boolean(opt, "settings"));
	ck_assert(!has(opt, "once"));
	json_decref(o);

	v = args("rstream", "-p", "9000", "-S", "all", "--once", NULL);
	ck_assert_int_eq(rstream_parse(nargs(v), v, &cli, stderr),
			 RSTREAM_PARSE_OK);
	ck_assert(!cli.json);
	o = roundtrip(jo_rstream_start(&cli, "9.9"));
	ck_assert_str_eq(str(o, "mode"), "server");
	ck_assert_str_eq(str(o, "transport"), "rdma");
	ck_assert_str_eq(str(o, "io"), "nonblocking");
	opt = json_object_get(o, "options");
	ck_assert_str_eq(str(opt, "tests"), "all");
	ck_assert(!has(opt, "bytes_per_xfer"));
	ck_assert(boolean(opt, "once"));
	ck_assert(!has(opt, "server"));
	json_decref(o);
}
END_TEST

/* The echo, the option table's JSON column and the schema made from it
 * agree: over a client's and a server's records (custom, async, and
 * not), every key written is in the schema, every key of the schema is
 * written by one of them, each required key by all of them, and the
 * schema the build made (doc/rstream.schema.json) is this one. */
START_TEST(test_rstream_start_is_the_schema)
{
	static const char *const lines[][12] = {
		{ "rstream", "-s", "h", "-S", "64", "-T", "a", NULL },
		{ "rstream", "-s", "h", NULL },
		{ "rstream", "-S", "all", NULL },
		{ "rstream", "-T", "a", "-C", "3", NULL },
		{ "rstream", "-s", "h", "--mps", "5000", NULL },
	};
	json_t *schema = jo_rstream_options_schema(), *seen = json_object();
	json_t *props = json_object_get(schema, "properties");
	json_t *req = json_object_get(schema, "required");
	json_t *built, *v, *o;
	json_error_t je;
	struct rstream_cli cli;
	const char *k;
	size_t i, j;

	ck_assert_uint_ge(json_object_size(props), 20);
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char **v2 = (char **)lines[i];
		int n = 0;

		while (v2[n])
			n++;
		ck_assert_int_eq(rstream_parse(n, v2, &cli, stderr),
				 RSTREAM_PARSE_OK);
		o = roundtrip(jo_rstream_start(&cli, "9.9"));
		json_object_foreach(json_object_get(o, "options"), k, v) {
			ck_assert_msg(json_object_get(props, k),
				      "%s is not in the schema", k);
			json_object_set(seen, k, json_true());
		}
		json_array_foreach(req, j, v)
			ck_assert_msg(has(json_object_get(o, "options"),
					  json_string_value(v)),
				      "line %zu: no %s", i,
				      json_string_value(v));
		json_decref(o);
	}
	json_object_foreach(props, k, v)
		ck_assert_msg(json_object_get(seen, k), "%s never written", k);
	built = json_load_file(EVR_BUILDDIR "/doc/rstream.schema.json", 0,
			       &je);
	ck_assert_msg(built, "%s", je.text);
	o = json_object_get(json_object_get(json_object_get(
		json_object_get(built, "$defs"), "start"), "properties"),
		"options");
	ck_assert(json_equal(o, schema));
	json_decref(built);
	json_decref(seen);
	json_decref(schema);
}
END_TEST

/* ------------------------------------------------------------------ mckey */

START_TEST(test_mckey_start)
{
	struct mckey_cli cli;
	char **v = args("mckey", "-m", "239.1.2.3", "-s", "--udp", "-c", "3",
			"-C", "7", "--json", NULL);
	json_t *o, *opt;

	ck_assert_int_eq(mckey_parse(nargs(v), v, &cli, stderr),
			 MCKEY_PARSE_OK);
	ck_assert(cli.json);
	o = roundtrip(jo_mckey_start(&cli, "1.0"));
	ck_assert_str_eq(str(o, "tool"), "mckey");
	ck_assert_str_eq(str(o, "mode"), "sender");
	ck_assert_str_eq(str(o, "transport"), "udp");
	opt = json_object_get(o, "options");
	ck_assert_str_eq(str(opt, "group"), "239.1.2.3");
	ck_assert_int_eq(num(opt, "qps"), 3);
	ck_assert_int_eq(num(opt, "messages_per_qp"), 7);
	ck_assert_int_eq(num(opt, "message_bytes"), 100);
	ck_assert_int_eq(num(opt, "udp_port"), EVR_MC_DEFAULT_UDP_PORT);
	ck_assert(!has(opt, "port_space"));
	ck_assert(boolean(opt, "loopback"));
	close_to(real(opt, "settle_s"), 3.0);
	ck_assert_int_eq(num(opt, "window"), EVR_MC_DEFAULT_WINDOW);
	ck_assert_int_eq(num(opt, "max_senders"), EVR_MC_DEFAULT_MAX_SENDERS);
	json_decref(o);
}
END_TEST

START_TEST(test_mckey_records)
{
	struct evr_mc_joined j = { .qp = 2, .dgid = "::ffff:239.1.2.3",
				   .mlid = 0x1234, .sl = 1,
				   .join_ns = 1500000 };
	struct evr_mc_sender_report snd = {
		.sender = 0xab, .count = 10, .unique = 8, .duplicates = 1,
		.reordered = 2, .lost = 1, .not_received = 1,
		.out_of_window = 3,
	};
	struct evr_mc_qp_report q = {
		.qp = 2, .joined = 1, .sent = 10, .send_completed = 9,
		.received = 9, .expected = 10, .foreign = 1, .nsenders = 1,
		.senders = &snd, .bad = 4, .untracked = 5, .window = 128,
		.max_senders = 7,
	};
	struct evr_mc_failure f = { .err = -1, .qp = 1,
				    .msg = "mckey: failure joining",
				    .with_errno = 1, .sys_errno = 19,
				    .code = -19 };
	json_t *o;

	o = roundtrip(jo_mc_join("239.1.2.3", &j));
	ck_assert_str_eq(str(o, "type"), "join");
	ck_assert_int_eq(num(o, "qp"), 2);
	ck_assert_str_eq(str(o, "group"), "239.1.2.3");
	ck_assert_str_eq(str(o, "joined_address"), "::ffff:239.1.2.3");
	ck_assert_int_eq(num(o, "mlid"), 0x1234);
	ck_assert_int_eq(num(o, "sl"), 1);
	ck_assert_int_eq(num(o, "join_ns"), 1500000);
	close_to(real(o, "join_ms"), 1.5);
	json_decref(o);

	o = roundtrip(jo_mc_qp(1, &q));
	ck_assert_str_eq(str(o, "type"), "send_stats");
	ck_assert_int_eq(num(o, "sent"), 10);
	ck_assert_int_eq(num(o, "completed"), 9);
	ck_assert(!has(o, "received"));
	json_decref(o);

	o = roundtrip(jo_mc_qp(0, &q));
	ck_assert_str_eq(str(o, "type"), "recv_stats");
	ck_assert_int_eq(num(o, "received"), 9);
	ck_assert_int_eq(num(o, "expected"), 10);
	ck_assert_int_eq(num(o, "foreign"), 1);
	ck_assert_int_eq(num(o, "senders"), 1);
	ck_assert_int_eq(num(o, "bad"), 4);
	ck_assert_int_eq(num(o, "untracked"), 5);
	ck_assert_int_eq(num(o, "window"), 128);
	ck_assert_int_eq(num(o, "max_senders"), 7);
	ck_assert(boolean(o, "joined"));
	ck_assert(!boolean(o, "timed_out"));
	ck_assert(!has(o, "sent"));
	json_decref(o);

	o = roundtrip(jo_mc_sender(2, &snd));
	ck_assert_str_eq(str(o, "type"), "sender_stats");
	ck_assert_str_eq(str(o, "sender"), "000000ab");
	ck_assert_int_eq(num(o, "received"), 8);
	ck_assert_int_eq(num(o, "expected"), 10);
	ck_assert_int_eq(num(o, "lost"), 1);
	ck_assert_int_eq(num(o, "not_received"), 1);
	ck_assert_int_eq(num(o, "outside_window"), 3);
	ck_assert_int_eq(num(o, "duplicates"), 1);
	ck_assert_int_eq(num(o, "reordered"), 2);
	json_decref(o);

	o = roundtrip(jo_mc_failure(&f));
	ck_assert_str_eq(str(o, "type"), "error");
	ck_assert_str_eq(str(o, "message"),
			 "mckey: failure joining: No such device");
	ck_assert_int_eq(num(o, "errno"), 19);
	ck_assert_int_eq(num(o, "qp"), 1);
	ck_assert_str_eq(str(o, "error"), "system");
	json_decref(o);
	f.code = -EVR_E_NODEV;
	o = roundtrip(jo_mc_failure(&f));
	ck_assert_str_eq(str(o, "error"), "nodev");
	json_decref(o);
	/* the engine refuses in its settings' words, mckey in its options' */
	memset(&f, 0, sizeof(f));
	f.err = -EINVAL;
	f.code = -EVR_E_NOTSUP;
	f.msg = "mckey: invalid options";
	snprintf(f.detail, sizeof(f.detail), "an AF_IB group (opts.unmapped) "
		 "needs the RDMA transport");
	o = roundtrip(jo_mc_failure(&f));
	ck_assert_str_eq(str(o, "message"), "mckey: invalid options: -M (an "
			 "AF_IB group) needs the RDMA transport");
	ck_assert_str_eq(str(o, "error"), "notsup");
	ck_assert_ptr_null(json_object_get(o, "errno"));
	json_decref(o);
	/* the deadline: "system" without a failed call, its errno all the
	 * same (ETIME) */
	memset(&f, 0, sizeof(f));
	f.err = -ETIME;
	f.code = -ETIME;
	f.msg = "mckey: deadline";
	snprintf(f.detail, sizeof(f.detail), "receives not complete on 1 of "
		 "1 QPs after 0.3 s");
	o = roundtrip(jo_mc_failure(&f));
	ck_assert_str_eq(str(o, "message"), "mckey: deadline: receives not "
			 "complete on 1 of 1 QPs after 0.3 s");
	ck_assert_str_eq(str(o, "error"), "system");
	ck_assert_int_eq(num(o, "err"), -ETIME);
	ck_assert_int_eq(num(o, "errno"), ETIME);
	json_decref(o);

	o = roundtrip(jo_mc_cm_event(0, "RDMA_CM_EVENT_MULTICAST_ERROR", -22,
				     1));
	ck_assert_str_eq(str(o, "type"), "cm_event");
	ck_assert_str_eq(str(o, "event"), "RDMA_CM_EVENT_MULTICAST_ERROR");
	ck_assert_int_eq(num(o, "status"), -22);
	ck_assert(boolean(o, "is_error"));
	json_decref(o);

	o = roundtrip(jo_mc_phase(EVR_MC_PH_TRANSFER_DONE));
	ck_assert_str_eq(str(o, "phase"), "transfer_done");
	json_decref(o);

	o = roundtrip(jo_mckey_summary(-1, 255, 2000000000ull, 1, 2));
	ck_assert_str_eq(str(o, "tool"), "mckey");
	ck_assert_int_eq(num(o, "return_status"), -1);
	ck_assert_int_eq(num(o, "exit_status"), 255);
	ck_assert_int_eq(num(o, "joined"), 1);
	ck_assert_int_eq(num(o, "qps"), 2);
	close_to(real(o, "elapsed_s"), 2.0);
	json_decref(o);
}
END_TEST

/* ------------------------------------------------------------ the helpers */

START_TEST(test_emit_null)
{
	FILE *f = tmpfile();

	ck_assert_int_eq(jo_emit(f, NULL), -1);
	ck_assert_int_eq(ftell(f), 0);
	fclose(f);
}
END_TEST

START_TEST(test_argv_has)
{
	char **v = args("x", "-a", "--json", NULL);

	ck_assert(cli_argv_has(nargs(v), v, "--json"));
	ck_assert(!cli_argv_has(nargs(v), v, "--settings"));
	v = args("x", "--", "--json", NULL);
	ck_assert(!cli_argv_has(nargs(v), v, "--json"));
	v = args("x", "--jsonx", NULL);
	ck_assert(!cli_argv_has(nargs(v), v, "--json"));
}
END_TEST

START_TEST(test_msg_capture)
{
	struct cli_msg m;
	char first[16];
	FILE *f = cli_msg_open(&m);

	fputs("first line is long\nsecond\n", f);
	cli_msg_close(&m, first, sizeof(first), "rstream");
	/* cut to fit, and only the first line */
	ck_assert_str_eq(first, "first line is l");

	f = cli_msg_open(&m);
	(void)f;
	cli_msg_close(&m, first, sizeof(first), "rstream");
	ck_assert_str_eq(first, "");

	/* the record's message drops the program's name (rstream.1) */
	f = cli_msg_open(&m);
	fputs("rstream: bad -S\n", f);
	cli_msg_close(&m, first, sizeof(first), "rstream");
	ck_assert_str_eq(first, "bad -S");
	f = cli_msg_open(&m);
	fputs("rstreamx: y\n", f);
	cli_msg_close(&m, first, sizeof(first), "rstream");
	ck_assert_str_eq(first, "rstreamx: y");
}
END_TEST

START_TEST(test_loop_open_close)
{
	struct cli_loop cl;

	ck_assert_int_eq(cli_loop_open(&cl, "test", 1), 0);
	ck_assert_ptr_nonnull(cl.loop);
	cli_loop_signals(&cl, NULL, NULL);
	cli_loop_finish(&cl);
	cli_loop_close(&cl);
	ck_assert_ptr_null(cl.loop);
	ck_assert_ptr_null(cl.evl);
	/* closing twice is harmless */
	cli_loop_close(&cl);
}
END_TEST

/* The one error table (EVR_ERRORS, EVR_PHASES) is what --json prints and
 * what doc/rstream.schema.json allows: a code added to the table without
 * its name in the schema fails here, and so does a name that drifts. */
static json_t *schema_enum(json_t *schema, const char *key)
{
	json_t *defs = json_object_get(schema, "$defs");
	const char *k;
	json_t *def, *prop;

	json_object_foreach(defs, k, def) {
		prop = json_object_get(json_object_get(def, "properties"), key);
		if (json_object_get(prop, "enum"))
			return json_object_get(prop, "enum");
	}
	return NULL;
}

static int in_enum(json_t *e, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(e, i, v)
		if (!strcmp(json_string_value(v), name))
			return 1;
	return 0;
}

START_TEST(test_error_table)
{
	json_error_t je;
	json_t *schema = json_load_file(EVR_BUILDDIR "/doc/rstream.schema.json",
					0, &je);
	json_t *errs, *phs;
	struct { int code; const char *name; } rows[] = {
#define ROW(code, name, text) { EVR_E_##code, name },
		EVR_ERRORS(ROW)
#undef ROW
	};
	struct { enum evr_phase p; const char *name; } prow[] = {
#define ROW(code, name, word) { EVR_PH_##code, name },
		EVR_PHASES(ROW)
#undef ROW
	};
	size_t i, j;

	ck_assert_msg(schema, "%s", je.text);
	errs = schema_enum(schema, "error");
	phs = schema_enum(schema, "phase");
	ck_assert_ptr_nonnull(errs);
	ck_assert_ptr_nonnull(phs);
	/* one entry per code, plus "system" for errno values */
	ck_assert_uint_eq(json_array_size(errs), EVR__ARRAY_SIZE(rows) + 1);
	ck_assert(in_enum(errs, "system"));
	ck_assert_str_eq(evr_err_name(-ECONNREFUSED), "system");
	ck_assert_str_eq(evr_err_name(-EVR_E_BASE), "system");
	ck_assert_str_eq(evr_err_name(-(EVR_E_BASE + 1000)), "system");
	for (i = 0; i < EVR__ARRAY_SIZE(rows); i++) {
		/* the codes follow each other from EVR_E_BASE + 1 */
		ck_assert_int_eq(rows[i].code, EVR_E_BASE + 1 + (int)i);
		ck_assert_str_eq(evr_err_name(-rows[i].code), rows[i].name);
		ck_assert_msg(in_enum(errs, rows[i].name),
			      "%s is not in the schema", rows[i].name);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(rows[i].name, rows[j].name);
	}
	ck_assert_uint_eq(json_array_size(phs), EVR__ARRAY_SIZE(prow));
	for (i = 0; i < EVR__ARRAY_SIZE(prow); i++) {
		ck_assert_int_eq(prow[i].p, (int)i);
		ck_assert_str_eq(evr_phase_name(prow[i].p), prow[i].name);
		ck_assert(in_enum(phs, prow[i].name));
	}
	ck_assert_str_eq(evr_phase_name((enum evr_phase)99), "unknown");
	json_decref(schema);
	/* mckey's failures use the same names */
	schema = json_load_file(EVR_SRCDIR "/doc/mckey.schema.json", 0, &je);
	ck_assert_msg(schema, "%s", je.text);
	errs = json_object_get(json_object_get(json_object_get(
		json_array_get(json_object_get(json_object_get(json_object_get(
		schema, "$defs"), "error"), "oneOf"), 0), "properties"),
		"error"), "enum");
	ck_assert_uint_eq(json_array_size(errs), EVR__ARRAY_SIZE(rows) + 1);
	for (i = 0; i < EVR__ARRAY_SIZE(rows); i++)
		ck_assert(in_enum(errs, rows[i].name));
	json_decref(schema);
}
END_TEST

/* --check --json: the hostcheck record, its check names held to
 * EVR_HOSTCHECKS in order, and to doc/hostcheck.schema.json's enum. */
START_TEST(test_hostcheck_record)
{
	static const char *const names[] = {
#define ROW(code, name) name,
		EVR_HOSTCHECKS(ROW)
#undef ROW
	};
	struct evr_hc_need need = { .rdma = 1, .memlock = 4096,
				    .addr = "198.18.0.1" };
	struct evr_hc_report rep;
	json_error_t je;
	json_t *schema = json_load_file(EVR_SRCDIR "/doc/hostcheck.schema.json",
					0, &je);
	json_t *en, *rec, *checks, *c;
	size_t i;

	ck_assert_msg(schema, "%s", je.text);
	en = json_object_get(json_object_get(json_object_get(json_object_get(
		json_object_get(json_object_get(schema, "properties"),
				"checks"), "items"), "properties"), "check"),
		"enum");
	ck_assert_uint_eq(json_array_size(en), EVR_HC_COUNT);
	ck_assert_uint_eq(EVR__ARRAY_SIZE(names), EVR_HC_COUNT);
	for (i = 0; i < EVR_HC_COUNT; i++) {
		ck_assert_str_eq(json_string_value(json_array_get(en, i)),
				 names[i]);
		ck_assert_str_eq(evr_hostcheck_name((enum evr_hc_check)i),
				 names[i]);
	}
	json_decref(schema);

	memset(&rep, 0, sizeof(rep));
	for (i = 0; i < EVR_HC_COUNT; i++) {
		rep.rows[i].check = (enum evr_hc_check)i;
		rep.rows[i].verdict = EVR_HC_SKIP;
		snprintf(rep.rows[i].fact, sizeof(rep.rows[i].fact), "f%zu", i);
	}
	rep.rows[EVR_HC_MEMLOCK].verdict = EVR_HC_FAIL;
	snprintf(rep.rows[EVR_HC_MEMLOCK].fix, sizeof(rep.rows[0].fix),
		 "ulimit -l 8");
	rep.rows[EVR_HC_PORT].verdict = EVR_HC_OK;
	rep.nfail = 1;
	snprintf(rep.device, sizeof(rep.device), "rxe0");
	rec = jo_hostcheck("rstream", "9.9", &need, &rep, 5);
	ck_assert_ptr_nonnull(rec);
	ck_assert_str_eq(json_string_value(json_object_get(rec, "type")),
			 "hostcheck");
	ck_assert_str_eq(json_string_value(json_object_get(rec, "address")),
			 "198.18.0.1");
	ck_assert_str_eq(json_string_value(json_object_get(rec, "device")),
			 "rxe0");
	ck_assert(json_is_null(json_object_get(rec, "interface")));
	ck_assert(json_is_true(json_object_get(rec, "rdma")));
	ck_assert_int_eq(json_integer_value(json_object_get(rec,
			 "memlock_need_bytes")), 4096);
	ck_assert_int_eq(json_integer_value(json_object_get(rec, "failed")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(rec,
			 "exit_status")), 5);
	checks = json_object_get(rec, "checks");
	ck_assert_uint_eq(json_array_size(checks), EVR_HC_COUNT);
	c = json_array_get(checks, EVR_HC_MEMLOCK);
	ck_assert_str_eq(json_string_value(json_object_get(c, "check")),
			 "memlock");
	ck_assert_str_eq(json_string_value(json_object_get(c, "result")),
			 "fail");
	ck_assert_str_eq(json_string_value(json_object_get(c, "fix")),
			 "ulimit -l 8");
	c = json_array_get(checks, EVR_HC_PORT);
	ck_assert_str_eq(json_string_value(json_object_get(c, "result")), "ok");
	ck_assert(json_is_null(json_object_get(c, "fix")));
	c = json_array_get(checks, EVR_HC_NOFILE);
	ck_assert_str_eq(json_string_value(json_object_get(c, "result")),
			 "skip");
	ck_assert_str_eq(json_string_value(json_object_get(c, "fact")), "f7");
	json_decref(rec);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("rstream");

	tcase_add_test(tc, test_result);
	tcase_add_test(tc, test_result_latency);
	tcase_add_test(tc, test_result_zero_time);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_info_records);
	tcase_add_test(tc, test_settings_tcp);
	tcase_add_test(tc, test_settings_rdma);
	tcase_add_test(tc, test_failure_records);
	tcase_add_test(tc, test_summary);
	tcase_add_test(tc, test_rstream_start);
	tcase_add_test(tc, test_rstream_start_is_the_schema);
	tcase_add_test(tc, test_error_table);
	tcase_add_test(tc, test_hostcheck_record);
	suite_add_tcase(s, tc);

	tc = tcase_create("mckey");
	tcase_add_test(tc, test_mckey_start);
	tcase_add_test(tc, test_mckey_records);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_add_test(tc, test_emit_null);
	tcase_add_test(tc, test_argv_has);
	tcase_add_test(tc, test_msg_capture);
	tcase_add_test(tc, test_loop_open_close);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(json_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
