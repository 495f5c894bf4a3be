/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The status page's pieces (runlog.c, status.c): a run's log stays within
 * its bound and says it was cut; the ring keeps the newest N and finds
 * them by id; whatever came from the configuration, the peers file or the
 * wire is escaped in the HTML; the cells' colours follow the bounds; the
 * JSON holds the same facts; /run/ID gives one run's log or nothing.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/mesh.h"
#include "daemon/pconf.h"
#include "daemon/probe.h"
#include "daemon/runlog.h"
#include "daemon/status.h"

static const struct status_cfg cfg = {
	.runs = 4, .p99_ok_us = 50, .p99_warn_us = 500, .loss_bad = 0.1,
};

START_TEST(test_log_lines)
{
	struct runlog *l = runlog_new(1000000000ull);

	ck_assert_ptr_nonnull(l);
	runlog_add(l, 1001500000ull, "resolved %s to %s", "a", "10.0.0.1");
	/* a newline from the wire does not make a line of its own */
	runlog_add(l, 2000000000ull, "peer said \"%s\"", "x\ny\rz");
	/* a clock behind the start says +0 */
	runlog_add(l, 5, "early");
	ck_assert_str_eq(l->buf, "+0.001500 resolved a to 10.0.0.1\n"
			 "+1.000000 peer said \"x y z\"\n"
			 "+0.000000 early\n");
	ck_assert_uint_eq(l->len, strlen(l->buf));
	ck_assert_int_eq(l->truncated, 0);
	runlog_add(NULL, 0, "nothing"); /* no log kept: no harm */
	free(l);
}
END_TEST

/* A line is cut at RUNLOG_LINE_MAX, and the log at RUNLOG_MAX with the
 * marker, after which nothing more is written. */
START_TEST(test_log_bounds)
{
	struct runlog *l = runlog_new(0);
	char big[2000];
	const char *nl;
	size_t mark = strlen(RUNLOG_TRUNCATED);
	int i;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	runlog_add(l, 0, "%s", big);
	nl = strchr(l->buf, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq((size_t)(nl - l->buf), RUNLOG_LINE_MAX - 1);
	ck_assert(!strncmp(nl - 3, "...", 3));
	for (i = 0; i < 100; i++)
		runlog_add(l, 0, "%s", big);
	ck_assert_int_eq(l->truncated, 1);
	ck_assert_uint_le(l->len, RUNLOG_MAX - 1);
	ck_assert_uint_eq(l->len, strlen(l->buf));
	ck_assert_str_eq(l->buf + l->len - mark, RUNLOG_TRUNCATED);
	runlog_add(l, 0, "after");
	ck_assert_ptr_null(strstr(l->buf, "after"));
	/* the marker once */
	ck_assert_ptr_eq(strstr(l->buf, RUNLOG_TRUNCATED),
			 l->buf + l->len - mark);
	free(l);
}
END_TEST

static uint64_t add_run(struct runring *r, const char *probe, int ok)
{
	struct runrec rec;

	memset(&rec, 0, sizeof(rec));
	snprintf(rec.probe, sizeof(rec.probe), "%s", probe);
	rec.ok = ok;
	rec.start_ts = 1e9;
	rec.reason = ok ? NULL : "refused";
	rec.log = runlog_new(0);
	runlog_add(rec.log, 0, "run of %s", probe);
	return runring_add(r, &rec);
}

START_TEST(test_ring)
{
	struct runring r;
	char name[16];
	int i;

	ck_assert_int_eq(runring_init(&r, 3), 0);
	ck_assert_ptr_null(runring_nth(&r, 0));
	ck_assert_ptr_null(runring_find(&r, 1));
	for (i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		ck_assert_uint_eq(add_run(&r, name, i & 1), (uint64_t)i);
	}
	/* the newest three, newest first; the older gone */
	ck_assert_uint_eq(r.n, 3);
	ck_assert_str_eq(runring_nth(&r, 0)->probe, "p5");
	ck_assert_str_eq(runring_nth(&r, 2)->probe, "p3");
	ck_assert_ptr_null(runring_nth(&r, 3));
	ck_assert_ptr_null(runring_find(&r, 2));
	ck_assert_ptr_null(runring_find(&r, 6));
	ck_assert_str_eq(runring_find(&r, 4)->probe, "p4");
	ck_assert_str_eq(runring_find(&r, 4)->log->buf, "+0.000000 run of p4\n");
	/* smaller: the newest that fit stay, in order */
	ck_assert_int_eq(runring_resize(&r, 2), 0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_str_eq(runring_nth(&r, 0)->probe, "p5");
	ck_assert_str_eq(runring_find(&r, 4)->probe, "p4");
	ck_assert_ptr_null(runring_find(&r, 3));
	ck_assert_uint_eq(add_run(&r, "p6", 1), 6);
	ck_assert_str_eq(runring_nth(&r, 1)->probe, "p5");
	/* larger: all kept, room for more */
	ck_assert_int_eq(runring_resize(&r, 5), 0);
	ck_assert_uint_eq(add_run(&r, "p7", 1), 7);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_str_eq(runring_find(&r, 5)->probe, "p5");
	/* none: the ids go on, nothing is kept */
	ck_assert_int_eq(runring_resize(&r, 0), 0);
	ck_assert_uint_eq(add_run(&r, "p8", 1), 8);
	ck_assert_ptr_null(runring_find(&r, 8));
	ck_assert_int_eq(runring_resize(&r, RUNRING_MAX + 1), -EINVAL);
	runring_fini(&r);
}
END_TEST

START_TEST(test_escape)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	status_escape(f, "<script>alert('x')</script> & \"q\"");
	status_escape(f, NULL);
	fclose(f);
	ck_assert_str_eq(buf, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
			 " &amp; &quot;q&quot;");
	free(buf);
}
END_TEST

/* A probe with runs runs, the last ok or not, p99 in us (0: none), the
 * last n outcomes' failures fails. */
static void probe_set(struct probe *p, struct probe_cfg *c, uint64_t runs,
		      int up, double p99, unsigned n, uint32_t fails)
{
	memset(p, 0, sizeof(*p));
	p->cfg = c;
	p->st.runs = runs;
	p->st.successes = runs;
	p->st.up = up;
	p->st.have_lat = p99 > 0;
	p->st.last_lat.p99_ns = (uint64_t)(p99 * 1e3);
	p->st.last_lat.p50_ns = (uint64_t)(p99 * 1e3 / 2);
	p->st.recent_n = n;
	p->st.recent_fail = fails;
	p->st.last_reason = up ? -1 : R_REFUSED;
}

START_TEST(test_cells)
{
	struct probe_cfg c = { .name = (char *)"a" };
	struct probe p;

	probe_set(&p, &c, 0, 0, 0, 0, 0);
	ck_assert_str_eq(status_cell(&p, &cfg), "none");
	probe_set(&p, &c, 5, 1, 10, 5, 0);
	ck_assert_str_eq(status_cell(&p, &cfg), "ok");
	probe_set(&p, &c, 5, 1, 49.9, 5, 0);
	ck_assert_str_eq(status_cell(&p, &cfg), "ok");
	probe_set(&p, &c, 5, 1, 50, 5, 0);
	ck_assert_str_eq(status_cell(&p, &cfg), "warn");
	probe_set(&p, &c, 5, 1, 500, 5, 0);
	ck_assert_str_eq(status_cell(&p, &cfg), "bad");
	/* one failed in 16 is 6 %: warn; two (12.5 %) over 10 %: bad */
	probe_set(&p, &c, 16, 1, 10, 16, 1u << 3);
	ck_assert_str_eq(status_cell(&p, &cfg), "warn");
	ck_assert_double_eq_tol(status_loss(&p), 1. / 16, 1e-9);
	probe_set(&p, &c, 16, 1, 10, 16, 0x81);
	ck_assert_str_eq(status_cell(&p, &cfg), "bad");
	/* bits older than the runs counted are not */
	probe_set(&p, &c, 2, 1, 10, 2, 0xf0);
	ck_assert_double_eq(status_loss(&p), 0);
	/* the last run failed */
	probe_set(&p, &c, 5, 0, 10, 5, 1);
	ck_assert_str_eq(status_cell(&p, &cfg), "bad");
}
END_TEST

/* Two probes (one a mesh peer whose name is hostile, failing), a
 * responder-less agent with a refused peers file, two runs kept. */
struct fixture {
	struct probe_cfg c[2];
	struct probe p[2];
	struct probe *probes[1], *peers[1];
	struct mesh_stats ms;
	struct runring r;
	struct evr_dev_info dev;
	struct status_src s;
};

static void fixture(struct fixture *x)
{
	memset(x, 0, sizeof(*x));
	x->c[0].name = (char *)"lo-tcp";
	x->c[0].host = (char *)"127.0.0.1";
	x->c[1].name = (char *)"mesh:<b>evil</b>";
	x->c[1].peer = (char *)"<b>evil</b>";
	x->c[1].host = (char *)"10.0.0.2\"><script>";
	probe_set(&x->p[0], &x->c[0], 3, 1, 12, 3, 0);
	probe_set(&x->p[1], &x->c[1], 3, 0, 0, 3, 7);
	ck_assert_int_eq(runring_init(&x->r, 4), 0);
	x->p[0].last_run_id = add_run(&x->r, "lo-tcp", 1);
	x->p[1].last_run_id = add_run(&x->r, "mesh:<b>evil</b>", 0);
	x->p[1].last_fail_id = x->p[1].last_run_id;
	x->probes[0] = &x->p[0];
	x->peers[0] = &x->p[1];
	x->ms.file_ok = 0;
	x->ms.listed = 1;
	x->ms.peers = 1;
	x->ms.file_errors = 2;
	snprintf(x->dev.name, sizeof(x->dev.name), "rxe0");
	snprintf(x->dev.netdev, sizeof(x->dev.netdev), "veth0");
	x->dev.state = "PORT_DOWN";
	x->dev.nports = 1;
	x->dev.ports[0].state = "DOWN";
	x->s = (struct status_src){
		.host = "h<1>", .version = "0.1", .now = 1e9, .start_ts = 1e9,
		.cfg = &cfg, .probes = x->probes, .nprobes = 1,
		.peers = x->peers, .npeers = 1, .mesh = &x->ms,
		.peers_file = "/etc/peers<x>", .devs = &x->dev, .ndevs = 1,
		.runs = &x->r,
	};
}

START_TEST(test_html)
{
	struct fixture x;
	char *buf;
	size_t len;

	fixture(&x);
	ck_assert_int_eq(status_html(&buf, &len, &x.s), 0);
	ck_assert_uint_eq(strlen(buf), len);
	ck_assert(!strncmp(buf, "<!DOCTYPE html>", 15));
	/* nothing from outside is markup */
	ck_assert_ptr_null(strstr(buf, "<b>evil"));
	ck_assert_ptr_null(strstr(buf, "<script"));
	ck_assert_ptr_null(strstr(buf, "h<1>"));
	ck_assert_ptr_null(strstr(buf, "peers<x>"));
	ck_assert_ptr_nonnull(strstr(buf, "&lt;b&gt;evil&lt;/b&gt;"));
	ck_assert_ptr_nonnull(strstr(buf, "10.0.0.2&quot;&gt;&lt;script&gt;"));
	/* self-contained: nothing fetched, no script */
	ck_assert_ptr_null(strstr(buf, "src="));
	ck_assert_ptr_null(strstr(buf, "http://"));
	ck_assert_ptr_null(strstr(buf, "https://"));
	/* (but the icon, which is none: no /favicon.ico asked for) */
	ck_assert_ptr_nonnull(strstr(buf, "<link rel=\"icon\" href=\"data:,\">"));
	ck_assert_ptr_null(strstr(strstr(buf, "<link") + 5, "<link"));
	/* the cells: the ok one links to its run, the failing one to its
	 * failure's */
	ck_assert_ptr_nonnull(strstr(buf, "<a class=\"cell ok\" href=\"/run/1\" "
				     "data-probe=\"lo-tcp\""));
	ck_assert_ptr_nonnull(strstr(buf, "<a class=\"cell bad\" href=\"/run/2\" "
				     "data-probe=\"mesh:&lt;b&gt;evil&lt;/b&gt;\""));
	ck_assert_ptr_nonnull(strstr(buf, "<b>&lt;b&gt;evil&lt;/b&gt;</b>p50 -"
				     "<br>p99 -<br>loss 100%<br>refused</a>"));
	ck_assert_ptr_nonnull(strstr(buf, "<b>lo-tcp</b>p50 6.0&nbsp;us<br>"
				     "p99 12.0&nbsp;us<br>loss 0%</a>"));
	/* the peers file refused, the device's port down, the runs */
	ck_assert_ptr_nonnull(strstr(buf, "REFUSED"));
	ck_assert_ptr_nonnull(strstr(buf, "<td class=\"bad\">PORT_DOWN</td>"));
	ck_assert_ptr_nonnull(strstr(buf, "1: DOWN (0 GIDs)"));
	ck_assert_ptr_nonnull(strstr(buf, "<a href=\"/run/2\">2</a>"));
	ck_assert_ptr_nonnull(strstr(buf, "(4 kept, newest first)"));
	ck_assert(!strcmp(buf + len - 15, "</body></html>\n"));
	free(buf);
	runring_fini(&x.r);
}
END_TEST

START_TEST(test_json)
{
	struct fixture x;
	json_t *o, *p;
	json_error_t e;
	char *buf;
	size_t len;

	fixture(&x);
	ck_assert_int_eq(status_json(&buf, &len, &x.s), 0);
	o = json_loads(buf, 0, &e);
	ck_assert_msg(o != NULL, "%s", e.text);
	ck_assert_str_eq(json_string_value(json_object_get(o, "host")), "h<1>");
	p = json_array_get(json_object_get(o, "probes"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(p, "peer")),
			 "<b>evil</b>");
	ck_assert_str_eq(json_string_value(json_object_get(p, "cell")), "bad");
	ck_assert_str_eq(json_string_value(json_object_get(p, "log")), "/run/2");
	ck_assert_str_eq(json_string_value(json_object_get(p, "last_failure")),
			 "refused");
	ck_assert(json_is_null(json_object_get(p, "p99_us")));
	p = json_array_get(json_object_get(o, "probes"), 0);
	ck_assert_double_eq_tol(json_real_value(json_object_get(p, "p99_us")),
				12, 1e-9);
	ck_assert(json_is_false(json_object_get(json_object_get(o,
				"peers_file"), "ok")));
	ck_assert_uint_eq(json_array_size(json_object_get(o, "runs")), 2);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "devices")), 1);
	ck_assert_double_eq(json_real_value(json_object_get(json_object_get(o,
			    "thresholds"), "p99_warn_us")), 500);
	json_decref(o);
	free(buf);
	runring_fini(&x.r);
}
END_TEST

START_TEST(test_run_page)
{
	struct fixture x;
	char *buf;
	size_t len;

	fixture(&x);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/2"), 1);
	ck_assert_uint_eq(strlen(buf), len);
	ck_assert_str_eq(buf, "run 2 of probe mesh:<b>evil</b>, started "
			 "2001-09-09 01:46:40 UTC: FAILED, refused\n\n"
			 "+0.000000 run of mesh:<b>evil</b>\n");
	free(buf);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/3"), 0);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/0"), 0);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/1x"), 0);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/-1"), 0);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/run/"), 0);
	ck_assert_int_eq(status_run(&buf, &len, &x.r, "/metrics"), 0);
	runring_fini(&x.r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_log_lines);
	tcase_add_test(tc, test_log_bounds);
	tcase_add_test(tc, test_ring);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_cells);
	tcase_add_test(tc, test_html);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_run_page);
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
