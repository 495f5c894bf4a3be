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

#include <netinet/in.h>
#include <arpa/inet.h>

#include "daemon/hguard.h"
#include "daemon/metrics.h"
#include "daemon/pconf.h"
#include "daemon/probe.h"
#include "daemon/responder.h"
#include "daemon/mesh.h"
#include "daemon/peers.h"
#include "daemon/load.h"
#include "daemon/reconcile.h"

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

/* Parse text; expect success. */
static void good_load(const char *text)
{
	struct pconf *c = NULL;
	char err[512];

	put(text);
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	pconf_free(c);
	unlink(path);
}

/* ---- the keys of the option table's rows (EVR_STREAM_OPTIONS) ---- */

/* A row with a daemon key as this test sees it: the key, whose it is,
 * its kind, range and field. */
struct tkey {
	const char *key;            /* NULL: none */
	int probe, resp;
	int kind;                   /* 'n' NUM, 'm' MS, 'f' FLAG */
	unsigned long long lo, hi;
	unsigned flags;
	size_t off, size;
};

#define TK_DKEY(k, w, l, h) .key = (k), TK_##w
#define TK_NODKEY .key = NULL
#define TK_DLO_DKEY(k, w, l, h) (l)
#define TK_DLO_NODKEY 0
#define TK_DHI_DKEY(k, w, l, h) (h)
#define TK_DHI_NODKEY 0
#define TK_PROBE .probe = 1
#define TK_RESP .resp = 1
#define TK_PROBE_RESP .probe = 1, .resp = 1
#define TK_KIND_NUM 'n'
#define TK_KIND_MS 'm'
#define TK_KIND_FLAG 'f'
#define TK_KIND_STR 's'
#define TK_KIND_WORD 'w'
#define TK_ROW(f, kind_, lo_, hi_, def, fl, side, cli, help, json, dkey) \
	{ TK_##dkey, .kind = TK_KIND_##kind_, \
	  .lo = TK_DLO_##dkey ? TK_DLO_##dkey : (lo_), \
	  .hi = TK_DHI_##dkey ? TK_DHI_##dkey : (hi_), \
	  .flags = (fl), .off = offsetof(struct evr_stream_opts, f), \
	  .size = sizeof(((struct evr_stream_opts *)0)->f) },
static const struct tkey tkeys[] = { EVR_STREAM_OPTIONS(TK_ROW) };

/* A configuration of one probe (or one responder) with key: value. */
static void key_conf(char *buf, size_t len, int resp, const char *key,
		     const char *value)
{
	if (resp)
		snprintf(buf, len, "{ \"responders\": [ { \"transport\": "
			 "\"tcp\", \"port\": 7471, \"%s\": %s } ] }", key,
			 value);
	else
		snprintf(buf, len, "{ \"probes\": [ { \"name\": \"a\", "
			 "\"type\": \"rstream\", \"host\": \"h\", \"%s\": "
			 "%s } ] }", key, value);
}

static long long tkey_field(const struct pconf *c, int resp,
			    const struct tkey *k)
{
	const struct evr_stream_opts *o = resp ? &c->responders[0].o :
						 &c->probes[0].o;
	const char *p = (const char *)o + k->off;
	uint64_t u64;
	int32_t i32;

	if (k->size == sizeof(u64)) {
		memcpy(&u64, p, sizeof(u64));
		return (long long)u64;
	}
	memcpy(&i32, p, sizeof(i32));
	return k->kind == 'n' && !(k->flags & EVR_SOPT_ZERO_NEVER) ?
	       (long long)(uint32_t)i32 : i32;
}

/* A value of the key taken (into its field, as stored) or refused with
 * the daemon's line naming the row's range. */
static void key_takes(int resp, const struct tkey *k, unsigned long long v,
		      long long stored)
{
	char text[256], val[64];
	struct pconf *c;
	char err[512];

	if (k->kind == 'm')
		snprintf(val, sizeof(val), "%g", v / 1000.0);
	else if (k->kind == 'f')
		snprintf(val, sizeof(val), "%s", v ? "true" : "false");
	else
		snprintf(val, sizeof(val), "%llu", v);
	key_conf(text, sizeof(text), resp, k->key, val);
	put(text);
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0,
		      "%s %s: %s", k->key, val, err);
	unlink(path);
	ck_assert_msg(tkey_field(c, resp, k) == stored, "%s %s: %lld",
		      k->key, val, tkey_field(c, resp, k));
	pconf_free(c);
}

static void key_refuses(int resp, const struct tkey *k, unsigned long long v)
{
	char text[256], want[256];

	if (k->kind == 'm') {
		char val[32];

		snprintf(val, sizeof(val), "%g", v / 1000.0);
		key_conf(text, sizeof(text), resp, k->key, val);
		snprintf(want, sizeof(want), "%s: \"%s\" is %s, must be %g to "
			 "%g", resp ? "responders[0]" : "probes[0] (\"a\")",
			 k->key, val, k->lo / 1000.0, k->hi / 1000.0);
	} else {
		char val[32];

		snprintf(val, sizeof(val), "%llu", v);
		key_conf(text, sizeof(text), resp, k->key, val);
		snprintf(want, sizeof(want), "%s: \"%s\" is %llu, must be %llu "
			 "to %llu", resp ? "responders[0]" :
			 "probes[0] (\"a\")", k->key, v, k->lo, k->hi);
	}
	bad(text, want);
}

/* Each key of the table's rows, on the objects that have it: its range
 * is its row's (the parser's and the library's too: check_cli,
 * check_stream), its ends taken into its field, one past either
 * refused with the range said; a yes/no key takes true and false; on
 * the other objects it is unknown. */
START_TEST(test_option_keys)
{
	size_t i, n = 0;
	int resp;

	for (i = 0; i < sizeof(tkeys) / sizeof(tkeys[0]); i++) {
		const struct tkey *k = &tkeys[i];
		char text[256], want[128];

		if (!k->key)
			continue;
		ck_assert_msg(k->kind == 'n' || k->kind == 'm' || k->kind == 'f',
			      "%s: the daemon reads numbers and yes/no", k->key);
		for (resp = 0; resp < 2; resp++) {
			if (!(resp ? k->resp : k->probe)) {
				key_conf(text, sizeof(text), resp, k->key, "1");
				snprintf(want, sizeof(want), "%s: unknown key "
					 "\"%s\"", resp ? "responders[0]" :
					 "probes[0] (\"a\")", k->key);
				bad(text, want);
				continue;
			}
			n++;
			if (k->kind == 'f') {
				key_takes(resp, k, 1, 1);
				key_takes(resp, k, 0, 0);
				continue;
			}
			key_takes(resp, k, k->lo, !k->lo && (k->flags &
					   EVR_SOPT_ZERO_NEVER) ?
					   EVR_POLL_NEVER : (long long)k->lo);
			key_takes(resp, k, k->hi, (long long)k->hi);
			key_refuses(resp, k, k->hi + (k->kind == 'm' ? 1000 : 1));
			if (k->lo)
				key_refuses(resp, k, k->lo - (k->kind == 'm' ?
							     5 : 1));
		}
	}
	ck_assert_uint_ge(n, 9);
}
END_TEST

/* What an rstream probe runs: its test, verify, the plan sent or
 * upstream's wire, its poll. */
static void assert_run(const struct probe_cfg *p, uint32_t size,
		       uint32_t count, uint32_t iters, int verify,
		       int negotiate, int poll_us)
{
	ck_assert_int_eq(p->o.custom, 1);
	ck_assert_uint_eq(p->o.size, size);
	ck_assert_uint_eq(p->o.count, count);
	ck_assert_uint_eq(p->o.iters, iters);
	ck_assert_int_eq(p->o.verify, verify);
	ck_assert_int_eq(p->o.force_negotiate, negotiate);
	ck_assert_int_eq(p->o.no_negotiate, !negotiate);
	ck_assert_int_eq(p->o.poll_us, poll_us);
	ck_assert_int_eq(p->o.io, EVR_IO_ASYNC);
	ck_assert_int_eq(p->o.percentiles, 1);
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
	    "   \"verify\": true, \"negotiate\": false, \"poll_us\": 0,\n"
	    "   \"exclusive\": false },\n"
	    " { \"name\": \"c\", \"type\": \"mckey\", \"group\": \"g\",\n"
	    "   \"role\": \"sender\", \"transport\": \"udp\" } ] }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_str_eq(c->listen_addr, "127.0.0.1");
	ck_assert_uint_eq(c->listen_port, 9471);
	/* names: an address kept 60 s, a failure 10 s, 5 s to answer */
	ck_assert_double_eq(c->dns.cache_s, 60);
	ck_assert_double_eq(c->dns.negative_s, 10);
	ck_assert_double_eq(c->dns.timeout_s, 5);
	/* a name that does not resolve is a reason for both kinds */
	ck_assert(probe_reason_applies(PROBE_RSTREAM, R_RESOLVE));
	ck_assert(probe_reason_applies(PROBE_MCKEY, R_RESOLVE));
	ck_assert(!probe_reason_applies(PROBE_MCKEY, R_REFUSED));
	ck_assert_uint_eq(c->nprobes, 3);
	ck_assert_int_eq(c->probes[0].type, PROBE_RSTREAM);
	ck_assert_int_eq(c->probes[0].transport, EVR_TRANSPORT_RDMA);
	ck_assert_str_eq(c->probes[0].port, "7471");
	/* a probe sends its plan unless told not to; its poll is the
	 * engine's default (0) */
	assert_run(&c->probes[0], 64, 1, 100, 0, 1, 0);
	/* one run on a path at a time unless told otherwise */
	ck_assert_int_eq(c->probes[0].exclusive, 1);
	ck_assert_double_eq(c->probes[0].interval_s, 10);
	ck_assert_double_eq(c->probes[0].timeout_s, 5);
	ck_assert_int_eq(c->probes[1].transport, EVR_TRANSPORT_TCP);
	ck_assert_str_eq(c->probes[1].port, "9000");
	/* "poll_us": 0 is never */
	assert_run(&c->probes[1], 65536, 7, 1, 1, 0, EVR_POLL_NEVER);
	ck_assert_int_eq(c->probes[1].exclusive, 0);
	ck_assert_int_eq(c->probes[2].type, PROBE_MCKEY);
	ck_assert_int_eq(c->probes[2].mc_transport, EVR_MC_UDP);
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
	/* the agent's own ranges, narrower than rstream's (the table's
	 * DKEY dlo/dhi): a probe's transfer at most 64m, not 1g; a
	 * responder's stall 0.1 to 3600 s, its memory at least 4k */
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\", "
	    "\"host\": \"h\", \"size\": 67108865 } ] }",
	    "probes[0] (\"a\"): \"size\" is 67108865, must be 1 to 67108864");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 7471, "
	    "\"stall_timeout_s\": 0.05 } ] }",
	    "responders[0]: \"stall_timeout_s\" is 0.05, must be 0.1 to 3600");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 7471, "
	    "\"max_memory\": 4095 } ] }",
	    "responders[0]: \"max_memory\" is 4095, must be 4096 to "
	    "1099511627776");
	bad("{ \"probes\": [ 1 ] }", "probes[0]: must be an object");
	bad("[]", "the top level must be an object");
	bad("{ \"probes\": {} }", "\"probes\" must be an array");
	bad("{ \"probes\": [ { \"type\": \"rstream\" } ] }",
	    "probes[0]: \"name\" is required");
	bad("{ \"probes\": [ { \"name\": \"a\\nb\", \"type\": \"rstream\" } ] }",
	    "probes[0]: \"name\" must be a string of 1 to 64 bytes with "
	    "no control character");
	/* a C1 control (U+0085, NEL) is one too */
	bad("{ \"probes\": [ { \"name\": \"a\\u0085b\", \"type\": \"rstream\" } ] }",
	    "probes[0]: \"name\" must be a string of 1 to 64 bytes with "
	    "no control character");
	/* 64 bytes of UTF-8 pass (32 two-byte characters), 66 do not */
	{
		char text[512], nm[200] = "";
		int i;

		for (i = 0; i < 32; i++)
			strcat(nm, "\xc3\xa9");
		snprintf(text, sizeof(text), "{ \"probes\": [ { \"name\": "
			 "\"%s\", \"type\": \"rstream\", \"host\": \"h\" } ] }",
			 nm);
		good_load(text);
		strcat(nm, "\xc3\xa9");
		snprintf(text, sizeof(text), "{ \"probes\": [ { \"name\": "
			 "\"%s\", \"type\": \"rstream\" } ] }", nm);
		bad(text, "probes[0]: \"name\" must be a string of 1 to 64 "
		    "bytes with no control character");
	}
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
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"exclusive\": 0 } ] }",
	    "probes[0] (\"a\"): \"exclusive\" must be true or false");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"mckey\","
	    " \"group\": \"g\", \"exclusive\": false } ] }",
	    "probes[0] (\"a\"): unknown key \"exclusive\"");
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
	bad("{ \"dns_cache_s\": -1 }",
	    "\"dns_cache_s\" is -1, must be 0 to 86400");
	bad("{ \"dns_negative_cache_s\": 3601 }",
	    "\"dns_negative_cache_s\" is 3601, must be 0 to 3600");
	bad("{ \"dns_timeout_s\": 0 }",
	    "\"dns_timeout_s\" is 0, must be 0.1 to 60");
	bad("{ \"dns_timeout_s\": \"5\" }",
	    "\"dns_timeout_s\" must be a number");
	bad("{ \"dns_ttl_s\": 5 }", "unknown key \"dns_ttl_s\"");
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
	/* a failed RDMA completion: the peer's or its path's when the
	 * completion blamed them (a peer whose RNIC was removed mid-run:
	 * it was "error", and the prober was named for it), else ours */
	f.phase = EVR_PH_NEGOTIATE;
	f.err = -EIO;
	f.detail = EVR_EIO_PEER;
	ck_assert_int_eq(probe_stream_reason(&f), R_UNREACHABLE);
	f.detail = 0;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.phase = EVR_PH_RECV;
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
	struct metrics_src src = { .probes = &pp, .nprobes = 1 };
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
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
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
	/* the bounds' labels, as the rules and dashboards know them */
	{
		static const char *const le[] = {
			"2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005",
			"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
			"0.1", "0.25", "0.5", "1", "2.5", "+Inf",
			"1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.01",
			"0.1", "1", "+Inf",
		};
		char want[128];
		size_t i;

		for (i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
			snprintf(want, sizeof(want), "%s_bucket{%sle=\"%s\"}",
				 i < 17 ? "evrdma_rstream_latency_seconds" :
				 "evrdma_probed_local_delay_seconds",
				 i < 17 ? "probe=\"x\\\"y\"," : "", le[i]);
			ck_assert_ptr_nonnull(strstr(buf, want));
		}
	}
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

/* An rstream probe may name the host it probes ("peer"): its series carry
 * peer="NAME", escaped; a bad value is refused, named. */
START_TEST(test_probe_peer)
{
	struct pconf *c = NULL;
	struct probe p, *pp = &p;
	struct metrics_daemon d = { .version = "1" };
	struct metrics_src src = { .probes = &pp, .nprobes = 1 };
	char err[512], *buf;
	size_t len;

	put("{ \"probes\": [ { \"name\": \"bw:b\", \"type\": \"rstream\","
	    " \"host\": \"192.0.2.2\", \"kind\": \"bandwidth\","
	    " \"peer\": \"b\\\"2\" },"
	    " { \"name\": \"plain\", \"type\": \"rstream\","
	    " \"host\": \"192.0.2.3\" } ] }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_str_eq(c->probes[0].labels, "peer=\"b\\\"2\"");
	ck_assert_ptr_null(c->probes[1].labels);
	memset(&p, 0, sizeof(p));
	p.cfg = &c->probes[0];
	p.st.throughput_Bps = 4e8;
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_rstream_throughput_bytes_per_second{probe=\"bw:b\",peer=\"b\\\"2\"} 400000000\n"));
	free(buf);
	pconf_free(c);
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"peer\": \"\" } ] }",
	    "probes[0] (\"a\"): \"peer\" must be a string of 1 to 64 "
	    "bytes with no control character");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"peer\": 3 } ] }",
	    "probes[0] (\"a\"): \"peer\" must be a string of 1 to 64 "
	    "bytes with no control character");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"rstream\","
	    " \"host\": \"h\", \"peer\": \"x\\ty\" } ] }",
	    "probes[0] (\"a\"): \"peer\" must be a string of 1 to 64 "
	    "bytes with no control character");
	bad("{ \"probes\": [ { \"name\": \"a\", \"type\": \"mckey\","
	    " \"group\": \"239.1.1.1\", \"peer\": \"b\" } ] }",
	    "probes[0] (\"a\"): unknown key \"peer\"");
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
	    " { \"transport\": \"tcp\", \"port\": 7473, \"bind\": \"10.0.0.1\" } ] }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_uint_eq(c->nprobes, 0);
	ck_assert_uint_eq(c->nresponders, 3);
	ck_assert_str_eq(c->responders[0].label, "tcp:*:7471");
	ck_assert_int_eq(c->responders[0].transport, EVR_TRANSPORT_TCP);
	ck_assert_ptr_null(c->responders[0].bind);
	ck_assert_uint_eq(c->responders[0].o.max_conns, 0);
	ck_assert_int_eq(c->responders[0].o.custom, 0);
	ck_assert_str_eq(c->responders[1].label, "rdma:[::1]:7472");
	ck_assert_uint_eq(c->responders[1].port, 7472);
	ck_assert_uint_eq(c->responders[1].o.max_conns, 3);
	ck_assert_uint_eq(c->responders[1].o.max_memory, 65536);
	ck_assert_int_eq(c->responders[1].o.custom, 1);
	ck_assert_uint_eq(c->responders[1].o.size, 1000);
	ck_assert_uint_eq(c->responders[1].o.count, 1);
	ck_assert_uint_eq(c->responders[1].o.iters, 100);
	ck_assert_str_eq(c->responders[2].label, "tcp:10.0.0.1:7473");
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
	/* listeners that could never listen: the daemon's own HTTP port,
	 * a port another takes on every address */
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 9471 } ] }",
	    "responders[0]: \"port\" 9471 is the daemon's own HTTP port "
	    "(listen_port) on every address");
	bad("{ \"listen_port\": 9000, \"responders\": [ { \"transport\": "
	    "\"tcp\", \"port\": 9000, \"bind\": \"127.0.0.1\" } ] }",
	    "responders[0]: \"port\" 9000 is the daemon's own HTTP port "
	    "(listen_port) on 127.0.0.1");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 7471,"
	    " \"bind\": \"10.0.0.1\" }, { \"transport\": \"tcp\", \"port\": 7471"
	    " } ] }", "responders[1]: port 7471 is taken by responders[0], one "
	    "of them on every address");
	bad("{ \"responders\": [ { \"transport\": \"rdma\", \"port\": 7471,"
	    " \"bind\": \"0.0.0.0\" }, { \"transport\": \"rdma\", \"port\": 7471,"
	    " \"bind\": \"10.0.0.1\" } ] }", "responders[1]: port 7471 is taken "
	    "by responders[0], one of them on every address");
	put("{ \"responders\": [ { \"transport\": \"rdma\", \"port\": 9471 },"
	    " { \"transport\": \"tcp\", \"port\": 7471, \"bind\": \"10.0.0.1\" },"
	    " { \"transport\": \"tcp\", \"port\": 7471, \"bind\": \"10.0.0.2\" },"
	    " { \"transport\": \"rdma\", \"port\": 7471 } ] }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	pconf_free(c);
}
END_TEST

/* What --check-config accepts, the daemon can run: a host, group or
 * bind that no run could use is refused, naming it. */
START_TEST(test_hosts_conf)
{
	static const char *const hosts[][2] = {
		{ "127.0.0.1:7471", "has a port: give it in \"port\"" },
		{ "http://127.0.0.1", "is a URL: give the host alone" },
		{ "a b", "has a blank in it" },
		{ "h ", "has a blank in it" },
		{ "[::1]", "has brackets: give an IPv6 address without them" },
		{ "256.1.1.1", "is not an IPv4 address (four numbers 0 to 255)" },
		{ "1.2.3", "is not an IPv4 address (four numbers 0 to 255)" },
		{ "a..b", "has an empty label" },
		{ ".a", "has an empty label" },
		{ "h/1", "has a character no host name has" },
		{ "fe80::1%", "is not an IPv6 address" },
	};
	static const char *const good[] = {
		"h", "db-1.rack_2.example.", "10.0.0.1", "::1", "fe80::1%eth0",
		"2001:db8::7",
	};
	char text[512], want[256];
	struct pconf *c;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		snprintf(text, sizeof(text), "{ \"probes\": [ { \"name\": \"p\", "
			 "\"type\": \"rstream\", \"host\": \"%s\" } ] }",
			 hosts[i][0]);
		snprintf(want, sizeof(want), "probes[0] (\"p\"): \"host\" \"%s\" "
			 "%s", hosts[i][0], hosts[i][1]);
		bad(text, want);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "{ \"probes\": [ { \"name\": \"p\", "
			 "\"type\": \"rstream\", \"host\": \"%s\", \"bind\": "
			 "\"%s\" } ] }", good[i], good[i]);
		put(text);
		ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0,
			      "%s: %s", good[i], err);
		unlink(path);
		pconf_free(c);
	}
	bad("{ \"probes\": [ { \"name\": \"m\", \"type\": \"mckey\", "
	    "\"group\": \"10.1.1.1\" } ] }", "probes[0] (\"m\"): \"group\" "
	    "\"10.1.1.1\" is not a multicast address (224.0.0.0/4, ff00::/8)");
	bad("{ \"probes\": [ { \"name\": \"m\", \"type\": \"mckey\", "
	    "\"group\": \"fe80::1\" } ] }", "probes[0] (\"m\"): \"group\" "
	    "\"fe80::1\" is not a multicast address (224.0.0.0/4, ff00::/8)");
	bad("{ \"probes\": [ { \"name\": \"m\", \"type\": \"mckey\", "
	    "\"group\": \"239.1.1.1\", \"bind\": \"1.2.3.4:5\" } ] }",
	    "probes[0] (\"m\"): \"bind\" \"1.2.3.4:5\" has a port: give it "
	    "in \"port\"");
	bad("{ \"listen_address\": \"http://x\" }",
	    "\"listen_address\" \"http://x\" is a URL: give the host alone");
	bad("{ \"responders\": [ { \"transport\": \"tcp\", \"port\": 1, "
	    "\"bind\": \"a b\" } ] }",
	    "responders[0]: \"bind\" \"a b\" has a blank in it");
}
END_TEST

/* The reason labels are an interface (the rules, dashboards): their
 * values and order as they were; an engine code maps to the reason of
 * its stable name (the lists' code column), the others to "error". */
START_TEST(test_reason_lists)
{
	static const char *const pr[] = {
		"refused", "timeout", "stall", "eof", "reset", "unreachable",
		"resolve", "verify", "rejected", "nodev", "join", "error",
		"devgone", "portdown",
	};
	static const char *const rr[] = {
		"conns", "budget", "fds", "rejected", "stall", "eof", "reset",
		"verify", "protocol", "error", "devgone", "portdown",
	};
	static const int codes[] = {
#define CODE(code, name, text) EVR_E_##code,
		EVR_ERRORS(CODE)
#undef CODE
	};
	struct evr_failure f;
	size_t i;
	int r, want;

	ck_assert_uint_eq(R_MAX, sizeof(pr) / sizeof(pr[0]));
	for (i = 0; i < R_MAX; i++)
		ck_assert_str_eq(probe_reason_names[i], pr[i]);
	ck_assert_uint_eq(RR_MAX, sizeof(rr) / sizeof(rr[0]));
	for (i = 0; i < RR_MAX; i++)
		ck_assert_str_eq(resp_reason_names[i], rr[i]);
	/* which type a reason applies to */
	for (r = 0; r < R_MAX; r++) {
		ck_assert_int_eq(probe_reason_applies(PROBE_RSTREAM, r),
				 r != R_JOIN);
		ck_assert_int_eq(probe_reason_applies(PROBE_MCKEY, r),
				 r == R_TIMEOUT || r == R_RESOLVE ||
				 r == R_JOIN || r == R_NODEV || r == R_ERROR ||
				 r == R_DEVGONE || r == R_PORTDOWN);
	}
	memset(&f, 0, sizeof(f));
	f.phase = EVR_PH_RECV;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		f.err = -codes[i];
		want = R_ERROR;
		for (r = 0; r < R_MAX; r++)
			if (!strcmp(probe_reason_names[r], evr_err_name(f.err)))
				want = r;
		ck_assert_int_eq(probe_stream_reason(&f), want);
	}
	f.err = -ENOMEM;
	ck_assert_int_eq(probe_stream_reason(&f), R_ERROR);
	f.err = -EADDRNOTAVAIL;
	ck_assert_int_eq(probe_stream_reason(&f), R_UNREACHABLE);
	f.err = -ECONNABORTED;
	ck_assert_int_eq(probe_stream_reason(&f), R_RESET);
	/* the host's RDMA device: gone under the run, its port down, or
	 * absent when a run binds to its address (a setup failure, still
	 * the device's) */
	f.err = -EVR_E_DEVGONE;
	ck_assert_int_eq(probe_stream_reason(&f), R_DEVGONE);
	f.err = -EVR_E_PORTDOWN;
	ck_assert_int_eq(probe_stream_reason(&f), R_PORTDOWN);
	f.phase = EVR_PH_SETUP;
	f.err = -ENODEV;
	ck_assert_int_eq(probe_stream_reason(&f), R_NODEV);
}
END_TEST

/* The reconciler over "name=version" items: what it keeps, makes, drops
 * and starts, in which order, and that a failed make changes nothing. */
struct rc_fake {
	const char **old, **want;
	int fail_at, skip_at;       /* make of this wanted item fails/skips */
	char log[256];
	char key[2][4][8];          /* the keys handed out, kept to the end */
};

static void rc_log(struct rc_fake *t, const char *what, const char *item)
{
	size_t n = strlen(t->log);

	snprintf(t->log + n, sizeof(t->log) - n, "%s%s %s", n ? ", " : "",
		 what, item);
}

static const char *rc_key(void *ud, int old, size_t i)
{
	struct rc_fake *t = ud;
	const char *s = old ? t->old[i] : t->want[i];

	snprintf(t->key[old][i], sizeof(t->key[old][i]), "%.*s",
		 (int)strcspn(s, "="), s);
	return t->key[old][i];
}

static int rc_same(void *ud, size_t j, size_t i)
{
	struct rc_fake *t = ud;

	return !strcmp(t->old[j], t->want[i]);
}

static int rc_make(void *ud, size_t i)
{
	struct rc_fake *t = ud;

	if ((int)i == t->fail_at)
		return -ENOMEM;
	if ((int)i == t->skip_at)
		return RECONCILE_SKIP;
	rc_log(t, "make", t->want[i]);
	return 0;
}

static void rc_unmake(void *ud, size_t i)
{
	rc_log(ud, "unmake", ((struct rc_fake *)ud)->want[i]);
}

static void rc_keep(void *ud, size_t j, size_t i)
{
	struct rc_fake *t = ud;

	ck_assert_str_eq(t->old[j], t->want[i]);
	rc_log(t, "keep", t->old[j]);
}

static void rc_drop(void *ud, size_t j)
{
	rc_log(ud, "drop", ((struct rc_fake *)ud)->old[j]);
}

static void rc_start(void *ud, size_t i)
{
	rc_log(ud, "start", ((struct rc_fake *)ud)->want[i]);
}

START_TEST(test_reconcile)
{
	struct reconcile_ops ops = {
		.key = rc_key, .same = rc_same, .make = rc_make,
		.unmake = rc_unmake, .keep = rc_keep, .drop = rc_drop,
		.start = rc_start,
	};
	const char *old[] = { "a=1", "b=1", "c=1" };
	const char *want[] = { "d=1", "c=2", "b=1" };
	const char *dup[] = { "x=1", "x=1" };
	struct rc_fake t = { .old = old, .want = want, .fail_at = -1,
			      .skip_at = -1 };
	struct reconcile rc;

	/* kept (b), changed (c: dropped, made anew), added (d), dropped
	 * (a): the removed go before the new start */
	ck_assert_int_eq(reconcile_plan(&rc, 3, 3, &ops, &t), 0);
	ck_assert_str_eq(t.log, "make d=1, make c=2");
	ck_assert_uint_eq(rc.kept_n, 1);
	ck_assert_uint_eq(rc.added, 2);
	ck_assert_uint_eq(rc.removed, 2);
	ck_assert_uint_eq(rc.failed, 0);
	t.log[0] = '\0';
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "keep b=1, drop a=1, drop c=1, start d=1, "
			 "start c=2");
	/* a failed make: the made ones undone, nothing kept or dropped */
	t.log[0] = '\0';
	t.fail_at = 2;
	want[2] = "e=1";
	ck_assert_int_eq(reconcile_plan(&rc, 3, 3, &ops, &t), -ENOMEM);
	ck_assert_str_eq(t.log, "make d=1, make c=2, unmake d=1, "
			 "unmake c=2");
	ck_assert_ptr_null(rc.from);
	/* the same plan given up by the caller (another set failed) */
	t.log[0] = '\0';
	t.fail_at = -1;
	ck_assert_int_eq(reconcile_plan(&rc, 3, 3, &ops, &t), 0);
	reconcile_abort(&rc);
	ck_assert_str_eq(t.log, "make d=1, make c=2, make e=1, unmake d=1, "
			 "unmake c=2, unmake e=1");
	/* a make skipped: counted failed, the rest goes on, not started */
	t.log[0] = '\0';
	t.skip_at = 0;
	ck_assert_int_eq(reconcile_plan(&rc, 3, 3, &ops, &t), 0);
	ck_assert_uint_eq(rc.failed, 1);
	ck_assert_uint_eq(rc.added, 2);
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "make c=2, make e=1, drop a=1, drop b=1, "
			 "drop c=1, start c=2, start e=1");
	/* nothing running: all made; nothing wanted: all dropped */
	t.log[0] = '\0';
	t.skip_at = -1;
	ck_assert_int_eq(reconcile_plan(&rc, 0, 1, &ops, &t), 0);
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "make d=1, start d=1");
	t.log[0] = '\0';
	ck_assert_int_eq(reconcile_plan(&rc, 2, 0, &ops, &t), 0);
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "drop a=1, drop b=1");
	/* no key, equal items twice: the first unused match, in order */
	ops.key = NULL;
	t.old = dup;
	t.want = dup;
	t.log[0] = '\0';
	ck_assert_int_eq(reconcile_plan(&rc, 2, 1, &ops, &t), 0);
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "keep x=1, drop x=1");
	t.log[0] = '\0';
	ck_assert_int_eq(reconcile_plan(&rc, 2, 2, &ops, &t), 0);
	ck_assert_uint_eq(rc.kept_n, 2);
	reconcile_commit(&rc);
	ck_assert_str_eq(t.log, "keep x=1, keep x=1");
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
	struct metrics_src src = { 0 };
	char *buf;
	size_t len;

	memset(&r, 0, sizeof(r));
	r.cfg = &cfg;
	r.st.listening = 1;
	r.st.served = 9;
	r.st.done = 7;
	r.st.active = 1;
	r.st.dropped[RR_CONNS] = 5;
	src.responders = &rp;
	src.nresponders = 1;
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
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
	/* Prometheus refuses a whole scrape over one label that is not */
	line_bad("h a rack=r\xe9", "not UTF-8 text");
	line_bad("h\xc0\xaf a", "not UTF-8 text");          /* overlong */
	line_bad("h a k=\xed\xa0\x80", "not UTF-8 text");  /* surrogate */
	line_bad("h a k=\xf4\x90\x80\x80", "not UTF-8 text"); /* > U+10FFFF */
	line_bad("h a k=\xe2\x82", "not UTF-8 text");       /* cut short */
	line_ok("h a rack=r\xc3\xa9\xf0\x9f\x90\x87", "h", "a",
		"peer=\"h\",rack=\"r\xc3\xa9\xf0\x9f\x90\x87\"");
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
	struct metrics_src src = { .probes = &pp, .nprobes = 1 };
	char err[512], *buf;
	size_t len;

	put("{ \"mesh\": { \"peers_file\": \"/etc/peers\", \"transport\": \"tcp\",\n"
	    "  \"port\": 7000, \"interval_s\": 2, \"iters\": 5 } }\n");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_ptr_nonnull(c->mesh);
	ck_assert_str_eq(c->mesh->peers_file, "/etc/peers");
	ck_assert_int_eq(c->mesh->tmpl.transport, EVR_TRANSPORT_TCP);
	ck_assert_str_eq(c->mesh->tmpl.port, "7000");
	ck_assert_double_eq(c->mesh->tmpl.interval_s, 2);
	ck_assert_double_eq(c->mesh->tmpl.timeout_s, 5);
	ck_assert_uint_eq(c->mesh->tmpl.o.iters, 5);
	ck_assert_int_eq(pconf_probe_copy(&cfg, &c->mesh->tmpl), 0);
	ck_assert_ptr_ne(cfg.port, c->mesh->tmpl.port);
	ck_assert_str_eq(cfg.port, "7000");
	free(cfg.labels);
	cfg.labels = strdup("peer=\"h2\",rack=\"r1\"");
	memset(&p, 0, sizeof(p));
	p.cfg = &cfg;
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
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

static char peers_path[64];
static char said[4096];

static void say_buf(void *ud, const char *msg)
{
	(void)ud;
	strncat(said, msg, sizeof(said) - strlen(said) - 2);
	strcat(said, "\n");
}

static void put_peers(const char *text, size_t len)
{
	FILE *f;

	snprintf(peers_path, sizeof(peers_path), "/tmp/check_probed.%ld.peers",
		 (long)getpid());
	f = fopen(peers_path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* A peers file of len bytes: mesh_load()'s verdict, its error (ending in
 * want, after "mesh: PATH: "), what it said (containing said_want) and
 * its counts. */
static void load_case(const char *text, size_t len, int verdict,
		      const char *want, const char *said_want, size_t n,
		      size_t own, size_t listed, size_t nbad)
{
	struct mesh_list l;
	char err[512] = "", full[600];
	int r;

	put_peers(text, len);
	said[0] = '\0';
	r = mesh_load(peers_path, &l, say_buf, NULL, err, sizeof(err));
	ck_assert_msg(r == verdict, "%.40s: %d (%s)", text, r, err);
	if (r) {
		snprintf(full, sizeof(full), "mesh: %s: %s", peers_path, want);
		ck_assert_str_eq(err, full);
		ck_assert_ptr_null(l.e);
	}
	ck_assert_msg(strstr(said, said_want), "'%s' lacks '%s'", said,
		      said_want);
	ck_assert_uint_eq(l.n, n);
	ck_assert_uint_eq(l.own, own);
	ck_assert_uint_eq(l.listed, listed);
	ck_assert_uint_eq(l.bad, nbad);
	mesh_list_free(&l);
	unlink(peers_path);
}
#define LOAD(text, ...) load_case(text, sizeof(text) - 1, __VA_ARGS__)

START_TEST(test_mesh_load)
{
	struct mesh_list l;
	char err[512], *big, line[32];
	size_t i, pos;

	LOAD("me 127.0.0.1\nh2 10.0.0.2 rack=r1\n# c\n\nh3 10.0.0.3\n", 0, "",
	     "", 2, 1, 2, 0);
	LOAD("me 127.0.0.1\n", 0, "", "", 0, 1, 0, 0); /* a fleet of one */
	LOAD("h2 10.0.0.2", 0, "", "", 1, 0, 1, 0);    /* no last newline */
	LOAD("", -1, "lists no peer (without a mesh, the configuration has "
	     "no \"mesh\")", "", 0, 0, 0, 0);
	LOAD("# nobody\n\n \t\r\n", -1, "lists no peer (without a mesh, the "
	     "configuration has no \"mesh\")", "", 0, 0, 0, 0);
	LOAD("h2 10.0.0.2\nh3 10.0.0.3\0h4 10.0.0.4\n", -1, "1 bad line",
	     ":2: a NUL byte (not a text file)\n", 0, 0, 2, 1);
	LOAD("h2 10.0.0.2\nlonely\nh3 10.0.0.3\nh2 10.0.0.9\n", -1,
	     "2 bad lines", ":2: a peer is NAME ADDRESS", 0, 0, 4, 2);
	LOAD("h2 10.0.0.2\nlonely\nh3 10.0.0.3\nh2 10.0.0.9\n", -1,
	     "2 bad lines", ":4: peer \"h2\" is listed twice\n", 0, 0, 4, 2);
	LOAD("\x7f\x45LF\x01\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n", -1,
	     "12 bad lines (the first 10 named)", ":1: a control character\n",
	     0, 0, 12, 12);
	/* the first 10 named, no more */
	ck_assert_ptr_null(strstr(said, ":11:"));
	ck_assert_ptr_nonnull(strstr(said, ":10:"));
	LOAD("h2 10.0.0.2 rack=\xff\n", -1, "1 bad line",
	     ":1: not UTF-8 text\n", 0, 0, 1, 1);
	/* bounds: a line, the file, the peers */
	big = malloc(MESH_FILE_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, '#', MESH_LINE_MAX + 1);
	memcpy(big, "h2 10.0.0.2 ", 12);
	load_case(big, MESH_LINE_MAX + 1, -1, "1 bad line",
		  ":1: a line longer than 4096 bytes\n", 0, 0, 1, 1);
	load_case(big, MESH_LINE_MAX, 0, "", "", 1, 0, 1, 0);
	memset(big, '\n', MESH_FILE_MAX + 1);
	load_case(big, MESH_FILE_MAX + 1, -1, "larger than 1 MiB", "", 0, 0, 0,
		  0);
	for (i = pos = 0; i <= MESH_PEERS_MAX; i++) {
		snprintf(line, sizeof(line), "%zx 1\n", i);
		memcpy(big + pos, line, strlen(line));
		pos += strlen(line);
	}
	ck_assert_uint_le(pos, MESH_FILE_MAX);
	load_case(big, pos, -1, "100001 peers, more than 100000", "", 0, 0,
		  MESH_PEERS_MAX + 1, 0);
	/* exactly the most: accepted (sorted: fast, not n^2) */
	pos -= strlen(line);
	load_case(big, pos, 0, "", "", MESH_PEERS_MAX, 0, MESH_PEERS_MAX, 0);
	free(big);
	/* not a file, no file */
	ck_assert_int_eq(mesh_load("/tmp", &l, say_buf, NULL, err,
				   sizeof(err)), -1);
	ck_assert_str_eq(err, "mesh: /tmp: not a regular file");
	ck_assert_int_eq(mesh_load("/nonexistent/p", &l, say_buf, NULL, err,
				   sizeof(err)), -1);
	ck_assert_str_eq(err, "mesh: /nonexistent/p: No such file or directory");
}
END_TEST

/* probed_load(): the one check --check-config, the start and SIGHUP
 * share; which file (configuration or peers) refused. */
START_TEST(test_probed_load)
{
	static const struct {
		const char *conf, *peers;
		int verdict;
		const char *want;
	} cases[] = {
		{ "{ }", NULL, LOAD_OK, NULL },
		{ "{ \"mesh\": { \"peers_file\": \"PEERS\" } }", "h 10.0.0.2\n",
		  LOAD_OK, NULL },
		{ "{ \"mesh\": { \"peers_file\": \"PEERS\" } }", "",
		  LOAD_PEERS, "lists no peer" },
		{ "{ \"mesh\": { \"peers_file\": \"PEERS\" } }", "h\n",
		  LOAD_PEERS, "1 bad line" },
		{ "{ \"mesh\": { \"peers_file\": \"PEERS.none\" } }", NULL,
		  LOAD_PEERS, "No such file or directory" },
		{ "{ \"mesh\": { \"peers_file\": \"PEERS\", \"x\": 1 } }",
		  "h 10.0.0.2\n", LOAD_CONFIG, "mesh: unknown key \"x\"" },
		{ "{ \"mesh\": 1 }", NULL, LOAD_CONFIG, "must be an object" },
	};
	struct mesh_list l;
	struct pconf *c;
	char text[256], err[512];
	const char *at;
	size_t i;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_peers(cases[i].peers ? cases[i].peers : "",
			  cases[i].peers ? strlen(cases[i].peers) : 0);
		if (!cases[i].peers)
			unlink(peers_path);
		at = strstr(cases[i].conf, "PEERS");
		if (at)
			snprintf(text, sizeof(text), "%.*s%s%s",
				 (int)(at - cases[i].conf), cases[i].conf,
				 peers_path, at + 5);
		else
			snprintf(text, sizeof(text), "%s", cases[i].conf);
		put(text);
		err[0] = '\0';
		r = probed_load(path, &c, &l, say_buf, NULL, err, sizeof(err));
		ck_assert_msg(r == cases[i].verdict, "case %zu: %d (%s)", i, r,
			      err);
		if (cases[i].want)
			ck_assert_msg(strstr(err, cases[i].want),
				      "case %zu: '%s'", i, err);
		if (r == LOAD_CONFIG)
			ck_assert_ptr_null(c);
		else
			pconf_free(c);
		ck_assert_uint_eq(l.n, r == LOAD_OK && at ? 1 : 0);
		mesh_list_free(&l);
		unlink(path);
		unlink(peers_path);
	}
}
END_TEST

/* ---- the mesh's selection (issue 29): group_by, across ---- */

/* "group_by" and "across": defaults, ranges, refusals. */
START_TEST(test_mesh_select_conf)
{
	struct pconf *c;
	char err[512];

	put("{ \"mesh\": { \"peers_file\": \"/p\", \"group_by\": \"rack\" } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c->mesh->group_by, "rack");
	ck_assert_uint_eq(c->mesh->across, 1);
	pconf_free(c);
	put("{ \"mesh\": { \"peers_file\": \"/p\", \"group_by\": \"rack\",\n"
	    "  \"across\": 0, \"sample\": 3 } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->mesh->across, 0);
	ck_assert_uint_eq(c->mesh->sample, 3);
	pconf_free(c);
	put("{ \"mesh\": { \"peers_file\": \"/p\" } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_null(c->mesh->group_by);
	pconf_free(c);
	unlink(path);
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": \"rack\", "
	    "\"across\": 1001 } }",
	    "mesh: \"across\" is 1001, must be 0 to 1000");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": \"rack\", "
	    "\"across\": -1 } }", "mesh: \"across\" is -1, must be 0 to 1000");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"across\": 2 } }",
	    "mesh: \"across\" without \"group_by\"");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": \"ra ck\" } }",
	    "mesh: \"group_by\": \"ra ck\" is not a label a peers file can "
	    "have ([a-zA-Z_][a-zA-Z0-9_]*, not __*, none of the daemon's own)");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": \"peer\" } }",
	    "mesh: \"group_by\": \"peer\" is not a label a peers file can "
	    "have ([a-zA-Z_][a-zA-Z0-9_]*, not __*, none of the daemon's own)");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": 3 } }",
	    "mesh: \"group_by\" must be a string");
	bad("{ \"mesh\": { \"peers_file\": \"p\", \"group_by\": \"\" } }",
	    "mesh: \"group_by\" must not be empty");
}
END_TEST

/* A mesh_list as host self (a line of lines, or -1: not in the file,
 * named "outsider") reads it: every other line, in the order of perm
 * (NULL: the file's). */
static void sel_list(struct mesh_list *l, const char *const *lines,
		     size_t n, long self, const size_t *perm)
{
	char *name, *addr, *labels, err[256];
	size_t i, k;

	memset(l, 0, sizeof(*l));
	l->e = calloc(n, sizeof(*l->e));
	ck_assert_ptr_nonnull(l->e);
	for (k = 0; k < n; k++) {
		i = perm ? perm[k] : k;
		ck_assert_int_eq(mesh_parse_line(lines[i], &name, &addr,
						 &labels, err, sizeof(err)), 0);
		free(addr);
		if ((long)i == self) {
			l->self_name = name;
			l->self_labels = labels;
			continue;
		}
		l->e[l->n].name = name;
		l->e[l->n].addr = strdup("10.0.0.1");
		l->e[l->n].labels = labels;
		l->e[l->n].lineno = (unsigned)k + 1;
		l->n++;
	}
	l->listed = l->n;
	if (self < 0)
		l->self_name = strdup("outsider");
}

/* The names mesh_select() keeps, sorted, space-separated, in buf. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *sel_names(const char *const *lines, size_t n, long self,
			     const size_t *perm, const char *by,
			     unsigned across, char *buf, size_t len,
			     size_t *groups)
{
	struct mesh_list l;
	char *names[64];
	size_t i, pos = 0;

	sel_list(&l, lines, n, self, perm);
	ck_assert_int_eq(mesh_select(&l, by, across), 0);
	ck_assert_uint_le(l.n, 64);
	ck_assert_uint_eq(l.selected, l.n);
	for (i = 0; i + 1 < l.n; i++) /* file order kept */
		ck_assert_uint_lt(l.e[i].lineno, l.e[i + 1].lineno);
	for (i = 0; i < l.n; i++)
		names[i] = l.e[i].name;
	qsort(names, l.n, sizeof(*names), name_cmp);
	buf[0] = '\0';
	for (i = 0; i < l.n; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s",
					i ? " " : "", names[i]);
	if (groups)
		*groups = l.groups;
	mesh_list_free(&l);
	return buf;
}

START_TEST(test_mesh_select)
{
	/* 3 racks of 4, and 2 hosts without the label */
	static const char *const f[] = {
		"a0 x rack=A", "a1 x rack=A", "a2 x rack=A", "a3 x rack=A",
		"b0 x rack=B", "b1 x rack=B", "b2 x rack=B", "b3 x rack=B",
		"c0 x rack=C row=1", "c1 x row=2 rack=C", "c2 x rack=C",
		"c3 x rack=C", "n0 x row=1", "n1 x",
	};
	static const size_t rev[] = { 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
				      1, 0 };
	static const size_t mix[] = { 7, 2, 12, 0, 9, 4, 13, 11, 1, 6, 3, 10,
				      8, 5 };
	char b1[512], b2[512], b3[512], *tok, *save;
	size_t n = sizeof(f) / sizeof(f[0]), groups, cnt[4];
	long self;
	unsigned k;

	/* a0: its rack all, 1 of B, 1 of C, 1 of those without a rack */
	sel_names(f, n, 0, NULL, "rack", 1, b1, sizeof(b1), &groups);
	ck_assert_uint_eq(groups, 4);
	memset(cnt, 0, sizeof(cnt));
	for (tok = strtok_r(b1, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		cnt[tok[0] == 'a' ? 0 : tok[0] == 'b' ? 1 : tok[0] == 'c' ? 2
								    : 3]++;
	ck_assert_uint_eq(cnt[0], 3);
	ck_assert_uint_eq(cnt[1], 1);
	ck_assert_uint_eq(cnt[2], 1);
	ck_assert_uint_eq(cnt[3], 1);
	/* the same choices whatever the order of the file */
	for (self = 0; self < (long)n; self++)
		for (k = 0; k <= 5; k++) {
			sel_names(f, n, self, NULL, "rack", k, b1, sizeof(b1),
				  NULL);
			sel_names(f, n, self, rev, "rack", k, b2, sizeof(b2),
				  NULL);
			sel_names(f, n, self, mix, "rack", k, b3, sizeof(b3),
				  NULL);
			ck_assert_str_eq(b1, b2);
			ck_assert_str_eq(b1, b3);
		}
	/* across 0: its rack only; across >= a group: all of it */
	ck_assert_str_eq(sel_names(f, n, 5, NULL, "rack", 0, b1, sizeof(b1),
				   NULL), "b0 b2 b3");
	ck_assert_str_eq(sel_names(f, n, 5, NULL, "rack", 4, b1, sizeof(b1),
				   NULL),
			 "a0 a1 a2 a3 b0 b2 b3 c0 c1 c2 c3 n0 n1");
	/* without the label: the group of those without it */
	ck_assert_str_eq(sel_names(f, n, 12, NULL, "rack", 0, b1, sizeof(b1),
				   NULL), "n1");
	sel_names(f, n, 13, NULL, "rack", 1, b1, sizeof(b1), &groups);
	ck_assert_uint_eq(groups, 4);
	ck_assert_ptr_nonnull(strstr(b1, "n0"));
	ck_assert_uint_eq(strlen(b1), strlen("n0 a0 b0 c0"));
	/* not in the file: no group of its own, across of every group */
	sel_names(f, n, -1, NULL, "rack", 2, b1, sizeof(b1), &groups);
	ck_assert_uint_eq(groups, 4);
	ck_assert_uint_eq(strlen(b1), strlen("a0 a1 b0 b1 c0 c1 n0 n1"));
	sel_names(f, n, -1, mix, "rack", 2, b2, sizeof(b2), NULL);
	ck_assert_str_eq(b1, b2);
	/* another label: by row, c0 has n0 in its group */
	ck_assert_str_eq(sel_names(f, n, 8, NULL, "row", 0, b1, sizeof(b1),
				   &groups), "n0");
	ck_assert_uint_eq(groups, 3);
	/* grouped by a label nobody has: one group, a full mesh */
	sel_names(f, n, 0, NULL, "pod", 1, b1, sizeof(b1), &groups);
	ck_assert_uint_eq(groups, 1);
	ck_assert_uint_eq(strlen(b1), strlen("a1 a2 a3 b0 b1 b2 b3 c0 c1 "
					     "c2 c3 n0 n1"));
}
END_TEST

/* The list host self of a fleet reads (parsed once: copies). */
static void fleet_list(struct mesh_list *l, char *const *name,
		       char *const *labels, size_t n, size_t self)
{
	size_t i;

	int oom = 0;

	/* (an assertion a peer would cost Check a write each) */
	memset(l, 0, sizeof(*l));
	l->e = calloc(n, sizeof(*l->e));
	ck_assert_ptr_nonnull(l->e);
	for (i = 0; i < n; i++) {
		if (i == self)
			continue;
		l->e[l->n].name = strdup(name[i]);
		l->e[l->n].addr = strdup("10.0.0.1");
		l->e[l->n].labels = strdup(labels[i]);
		oom |= !l->e[l->n].name || !l->e[l->n].addr ||
		       !l->e[l->n].labels;
		l->e[l->n].lineno = (unsigned)i + 1;
		l->n++;
	}
	l->listed = l->n;
	l->self_name = strdup(name[self]);
	l->self_labels = strdup(labels[self]);
	ck_assert(!oom && l->self_name && l->self_labels);
}

/* A fleet of G groups: every host selects as it would, reading the file
 * with its own line; the probers of each host tallied. */
#define FLEET_MAX 1000
static void fleet(const unsigned *size, unsigned ngroups, unsigned across)
{
	static char text[FLEET_MAX][48];
	static const char *lines[FLEET_MAX];
	static unsigned grp[FLEET_MAX], probers[FLEET_MAX], inner[FLEET_MAX];
	static unsigned pair[64][64], from[FLEET_MAX][64];
	static char *pname[FLEET_MAX], *plabels[FLEET_MAX];
	struct mesh_list l;
	size_t n = 0, h, i, j, t;
	unsigned g, lo, hi;
	char *end, *addr, err[256];

	for (g = 0; g < ngroups; g++)
		for (i = 0; i < size[g]; i++, n++) {
			snprintf(text[n], sizeof(text[n]),
				 "h%03u-%02zu 10.1.%u.%zu rack=r%02u", g, i, g,
				 i, g);
			lines[n] = text[n];
			grp[n] = g;
		}
	ck_assert_uint_le(n, FLEET_MAX);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(mesh_parse_line(lines[i], &pname[i], &addr,
						 &plabels[i], err,
						 sizeof(err)), 0);
		free(addr);
	}
	memset(probers, 0, sizeof(probers));
	memset(inner, 0, sizeof(inner));
	memset(pair, 0, sizeof(pair));
	memset(from, 0, sizeof(from));
	for (h = 0; h < n; h++) {
		fleet_list(&l, pname, plabels, n, h);
		ck_assert_int_eq(mesh_select(&l, "rack", across), 0);
		ck_assert_uint_eq(l.groups, ngroups);
		for (i = 0; i < l.n; i++) {
			/* "h%03u-%02zu": the target's index */
			g = (unsigned)strtoul(l.e[i].name + 1, &end, 10);
			t = strtoul(end + 1, NULL, 10);
			for (j = 0; j < g; j++)
				t += size[j];
			if (t >= n || grp[t] != g)
				ck_abort_msg("host %zu chose %s, not of "
					     "the fleet", h, l.e[i].name);
			probers[t]++;
			if (g == grp[h])
				inner[t]++;
			pair[grp[h]][g]++;
			from[t][grp[h]]++;
		}
		mesh_list_free(&l);
	}
	for (t = 0; t < n; t++) {
		/* its whole group probes it */
		if (inner[t] != size[grp[t]] - 1)
			ck_abort_msg("host %zu: %u probers of its group, not "
				     "%u", t, inner[t], size[grp[t]] - 1);
		/* each other group: its share of that group's choices,
		 * evenly (the members of a group differ by one at most) */
		for (g = 0; g < ngroups; g++) {
			if (g == grp[t])
				continue;
			lo = size[g] * (across < size[grp[t]] ? across :
					size[grp[t]]) / size[grp[t]];
			hi = lo + 1;
			if (from[t][g] < lo || from[t][g] > hi)
				ck_abort_msg("host %zu: %u probers of group "
					     "%u, not %u to %u", t,
					     from[t][g], g, lo, hi);
		}
	}
	/* every pair of groups covered, both ways */
	for (g = 0; g < ngroups; g++)
		for (j = 0; j < ngroups; j++)
			if (!pair[g][j])
				ck_abort_msg("no host of group %u probes "
					     "one of group %zu", g, j);
	if (size[0] == size[ngroups - 1]) {
		/* equal groups: each host probed by as many */
		for (t = 0; t < n; t++)
			if (probers[t] != size[0] - 1 +
					  (ngroups - 1) * across)
				ck_abort_msg("host %zu: %u probers, not %u", t,
					     probers[t], size[0] - 1 +
					     (ngroups - 1) * across);
	}
	for (i = 0; i < n; i++) {
		free(pname[i]);
		free(plabels[i]);
	}
}

START_TEST(test_mesh_select_fleet)
{
	unsigned size[25], g;

	for (g = 0; g < 25; g++)
		size[g] = 40;
	fleet(size, 25, 1); /* 40 x 25: each host probed by 39 + 24 */
	fleet(size, 25, 3);
	for (g = 0; g < 25; g++)
		size[g] = 20 + (g * 7) % 31; /* uneven: 20 to 50 */
	fleet(size, 25, 1);
	fleet(size, 25, 2);
}
END_TEST

/* mesh_load_cfg(): this host's line found by its address (127.0.0.1),
 * of several the least name; a refused file's selection counted. */
START_TEST(test_mesh_load_select)
{
	struct mesh_cfg cfg = { .group_by = (char *)"rack", .across = 1 };
	struct mesh_list l;
	char err[512];
	static const char text[] =
		"zz 127.0.0.1 rack=B\n"
		"a1 10.0.0.1 rack=A\na2 10.0.0.2 rack=A\na3 10.0.0.3 rack=A\n"
		"b1 10.0.1.1 rack=B\nb2 10.0.1.2 rack=B\nb3 10.0.1.3 rack=B\n"
		"me 127.0.0.1 rack=A\n";

	put_peers(text, sizeof(text) - 1);
	cfg.peers_file = peers_path;
	ck_assert_int_eq(mesh_load_cfg(&cfg, &l, say_buf, NULL, err,
				       sizeof(err)), 0);
	ck_assert_str_eq(l.self_name, "me");
	ck_assert_uint_eq(l.own, 2);
	ck_assert_uint_eq(l.listed, 6);
	ck_assert_uint_eq(l.n, 4); /* a1 a2 a3 and one of B */
	ck_assert_uint_eq(l.selected, 4);
	ck_assert_uint_eq(l.groups, 2);
	ck_assert_str_eq(l.e[0].name, "a1");
	ck_assert_str_eq(l.e[2].name, "a3");
	ck_assert_int_eq(l.e[3].name[0], 'b');
	mesh_list_free(&l);
	/* without group_by: every peer */
	ck_assert_int_eq(mesh_load(peers_path, &l, say_buf, NULL, err,
				   sizeof(err)), 0);
	ck_assert_uint_eq(l.n, 6);
	ck_assert_uint_eq(l.selected, 6);
	mesh_list_free(&l);
	/* refused: its good lines selected, a bad one counted as chosen */
	put_peers("me 127.0.0.1 rack=A\na1 10.0.0.1 rack=A\n"
		  "b1 10.0.1.1 rack=B\nb2 10.0.1.2 rack=B\nbad\n", 81);
	ck_assert_int_eq(mesh_load_cfg(&cfg, &l, say_buf, NULL, err,
				       sizeof(err)), -1);
	ck_assert_uint_eq(l.listed, 4);
	ck_assert_uint_eq(l.selected, 3);
	mesh_list_free(&l);
	/* this host not in the file: one of each group */
	put_peers("a1 10.0.0.1 rack=A\na2 10.0.0.2 rack=A\n"
		  "b1 10.0.1.1 rack=B\nb2 10.0.1.2 rack=B\n", 76);
	ck_assert_int_eq(mesh_load_cfg(&cfg, &l, say_buf, NULL, err,
				       sizeof(err)), 0);
	ck_assert_ptr_null(l.self_labels);
	ck_assert_ptr_nonnull(l.self_name); /* its host name */
	ck_assert_uint_eq(l.n, 2);
	ck_assert_int_eq(l.e[0].name[0], 'a');
	ck_assert_int_eq(l.e[1].name[0], 'b');
	mesh_list_free(&l);
	unlink(peers_path);
}
END_TEST

/* evrdma_mesh_*: the mesh's and its file's, families only without one. */
START_TEST(test_render_mesh)
{
	struct mesh_stats ms = { .peers = 3, .listed = 5, .selected = 4,
				 .file_ok = 0,
				 .file_errors = 2, .last_good_ts = 1700000000.5 };
	struct metrics_daemon d = { .version = "1" };
	struct metrics_src src = { 0 };
	char *buf;
	size_t len;

	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_mesh_peers gauge\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_mesh_peers_file_errors_total counter\n"));
	ck_assert_ptr_null(strstr(buf, "\nevrdma_mesh_peers "));
	free(buf);
	src.mesh = &ms;
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers 3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers_listed 5\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers_selected 4\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers_file_ok 0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers_file_errors_total 2\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nevrdma_mesh_peers_file_last_good_timestamp_seconds 1700000000.500\n"));
	free(buf);
}
END_TEST

/* "http": defaults, a full object, and every range and type checked. */
START_TEST(test_http_conf)
{
	struct pconf *c;
	char err[512];

	put("{ }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->http.max_conns, 64);
	ck_assert_uint_eq(c->http.max_per_ip, 16);
	ck_assert_double_eq(c->http.request_timeout_s, 5);
	pconf_free(c);
	put("{ \"http\": { \"max_connections\": 200, "
	    "\"max_connections_per_ip\": 200, \"request_timeout_s\": 0.5 } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->http.max_conns, 200);
	ck_assert_uint_eq(c->http.max_per_ip, 200);
	ck_assert_double_eq(c->http.request_timeout_s, 0.5);
	pconf_free(c);
	/* a total under the default share: the share is the total */
	put("{ \"http\": { \"max_connections\": 4 } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->http.max_conns, 4);
	ck_assert_uint_eq(c->http.max_per_ip, 4);
	pconf_free(c);
	unlink(path);
	bad("{ \"http\": [] }", "http: must be an object");
	bad("{ \"http\": { \"max_conns\": 8 } }", "http: unknown key \"max_conns\"");
	bad("{ \"http\": { \"max_connections\": 0 } }",
	    "http: \"max_connections\" is 0, must be 1 to 4096");
	bad("{ \"http\": { \"max_connections\": 4097 } }",
	    "http: \"max_connections\" is 4097, must be 1 to 4096");
	bad("{ \"http\": { \"max_connections\": \"64\" } }",
	    "http: \"max_connections\" must be an integer");
	bad("{ \"http\": { \"max_connections_per_ip\": 0 } }",
	    "http: \"max_connections_per_ip\" is 0, must be 1 to 4096");
	bad("{ \"http\": { \"max_connections\": 8, "
	    "\"max_connections_per_ip\": 9 } }",
	    "http: \"max_connections_per_ip\" is 9, more than "
	    "\"max_connections\" (8)");
	bad("{ \"http\": { \"request_timeout_s\": 0.05 } }",
	    "http: \"request_timeout_s\" is 0.05, must be 0.1 to 300");
	bad("{ \"http\": { \"request_timeout_s\": 301 } }",
	    "http: \"request_timeout_s\" is 301, must be 0.1 to 300");
	bad("{ \"http\": { \"request_timeout_s\": true } }",
	    "http: \"request_timeout_s\" must be a number");
}
END_TEST

static struct sockaddr_in ip4(const char *a, unsigned port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

#define SA(x) ((const struct sockaddr *)&(x))

static int always_pending(struct hg_conn *c)
{
	(void)c;
	return 1;
}

static struct hg_conn *pend_one; /* the one that has its request in */

static int one_pending(struct hg_conn *c)
{
	return c == pend_one;
}

/* The admission rules: room, an address's share, the total, the
 * longest-waiting IDLE one evicted, BUSY ones never, turned away when
 * nothing IDLE is left, timeouts in order. */
/* "status": the runs kept and the cells' bounds, RDMA-scaled defaults,
 * each range-checked and named */
START_TEST(test_status_conf)
{
	struct pconf *c;
	char err[512];

	put("{ }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->status.runs, 100);
	ck_assert_double_eq(c->status.p99_ok_us, 50);
	ck_assert_double_eq(c->status.p99_warn_us, 500);
	ck_assert_double_eq(c->status.loss_bad, 0.1);
	pconf_free(c);
	put("{ \"status\": { \"runs\": 0, \"p99_ok_us\": 200, "
	    "\"p99_warn_us\": 2000, \"loss_bad\": 0 } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->status.runs, 0);
	ck_assert_double_eq(c->status.p99_ok_us, 200);
	ck_assert_double_eq(c->status.p99_warn_us, 2000);
	ck_assert_double_eq(c->status.loss_bad, 0);
	pconf_free(c);
	put("{ \"status\": { \"runs\": 10000 } }");
	ck_assert_msg(pconf_load(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c->status.runs, 10000);
	pconf_free(c);
	unlink(path);
	bad("{ \"status\": 1 }", "status: must be an object");
	bad("{ \"status\": { \"run\": 8 } }", "status: unknown key \"run\"");
	bad("{ \"status\": { \"runs\": 10001 } }",
	    "status: \"runs\" is 10001, must be 0 to 10000");
	bad("{ \"status\": { \"runs\": 1.5 } }",
	    "status: \"runs\" must be an integer");
	bad("{ \"status\": { \"p99_ok_us\": -1 } }",
	    "status: \"p99_ok_us\" is -1, must be 0 to 1e+07");
	bad("{ \"status\": { \"loss_bad\": 1.5 } }",
	    "status: \"loss_bad\" is 1.5, must be 0 to 1");
	bad("{ \"status\": { \"p99_ok_us\": 100, \"p99_warn_us\": 90 } }",
	    "status: \"p99_warn_us\" is 90, less than \"p99_ok_us\" (100)");
}
END_TEST

START_TEST(test_hguard)
{
	const struct http_limits lim = { .max_conns = 4, .max_per_ip = 2,
					 .request_timeout_s = 5 };
	struct sockaddr_in a1 = ip4("127.0.0.1", 1000), a1b = ip4("127.0.0.1", 2000),
		b = ip4("10.0.0.2", 1000), c4 = ip4("10.0.0.3", 1), d4 = ip4("10.0.0.4", 1);
	struct sockaddr_in6 six;
	struct hg_conn k[8], *v;
	struct hguard g;

	memset(k, 0, sizeof(k));
	hg_init(&g, &lim);
	ck_assert_double_eq(hg_next_deadline(&g), -1);
	ck_assert_int_eq(hg_admit(&g, SA(a1), sizeof(a1), NULL, &v), HG_ADMIT);
	hg_add(&g, &k[0], SA(a1), sizeof(a1), 10);
	ck_assert_int_eq(hg_admit(&g, SA(a1b), sizeof(a1b), NULL, &v), HG_ADMIT);
	hg_add(&g, &k[1], SA(a1b), sizeof(a1b), 11);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_double_eq(hg_next_deadline(&g), 15);
	/* the address's share is full (the port aside): its longest
	 * waiting goes, not another's */
	ck_assert_int_eq(hg_admit(&g, SA(a1), sizeof(a1), NULL, &v), HG_EVICT);
	ck_assert_ptr_eq(v, &k[0]);
	ck_assert_int_eq(k[0].held, 0);
	ck_assert_uint_eq(g.n, 1);
	hg_drop(&g, &k[0]); /* idempotent: its close comes later */
	ck_assert_uint_eq(g.n, 1);
	hg_add(&g, &k[2], SA(a1), sizeof(a1), 12);
	/* k[1] answers a request: BUSY, out of reach; k[2] has its
	 * request in, not yet read: passed over too */
	hg_busy(&g, &k[1]);
	ck_assert_double_eq(hg_next_deadline(&g), 17);
	pend_one = &k[2];
	ck_assert_int_eq(hg_admit(&g, SA(a1), sizeof(a1), one_pending, &v),
			 HG_REFUSE_PER_IP);
	ck_assert_ptr_null(v);
	/* another address has room */
	ck_assert_int_eq(hg_admit(&g, SA(b), sizeof(b), NULL, &v), HG_ADMIT);
	hg_add(&g, &k[3], SA(b), sizeof(b), 13);
	ck_assert_int_eq(hg_admit(&g, SA(c4), sizeof(c4), NULL, &v), HG_ADMIT);
	hg_add(&g, &k[4], SA(c4), sizeof(c4), 14);
	ck_assert_uint_eq(g.n, 4);
	/* the total reached: the longest waiting IDLE of any address (k[1]
	 * is BUSY, k[2] the longest IDLE) */
	ck_assert_int_eq(hg_admit(&g, SA(d4), sizeof(d4), NULL, &v), HG_EVICT);
	ck_assert_ptr_eq(v, &k[2]);
	hg_add(&g, &k[5], SA(d4), sizeof(d4), 15);
	/* ... unless its request is in: the next one */
	pend_one = &k[3];
	ck_assert_int_eq(hg_admit(&g, SA(d4), sizeof(d4), one_pending, &v),
			 HG_EVICT);
	ck_assert_ptr_eq(v, &k[4]);
	hg_add(&g, &k[6], SA(d4), sizeof(d4), 16);
	/* no descriptor left: the longest waiting IDLE one of any address
	 * (k[1] BUSY, k[3] pending), not dropped yet */
	ck_assert_ptr_eq(hg_victim(&g, one_pending), &k[5]);
	ck_assert_int_eq(k[5].held, 1);
	ck_assert_ptr_eq(hg_victim(&g, NULL), &k[3]);
	ck_assert_ptr_null(hg_victim(&g, always_pending));
	/* all IDLE ones have their request in: turned away */
	ck_assert_int_eq(hg_admit(&g, SA(c4), sizeof(c4), always_pending, &v),
			 HG_REFUSE_LIMIT);
	/* k[1]'s answer sent, kept alive: IDLE again, the last in line,
	 * and its expiry a keep-alive's end, not a timeout */
	ck_assert_int_eq(k[1].served, 0);
	hg_idle(&g, &k[1], 20);
	ck_assert_int_eq(k[1].served, 1);
	ck_assert_int_eq(k[3].served, 0);
	ck_assert_double_eq(hg_next_deadline(&g), 18); /* k[3], since 13 */
	ck_assert_ptr_null(hg_expired(&g, 17.9));
	ck_assert_ptr_eq(hg_expired(&g, 18), &k[3]);
	hg_drop(&g, &k[3]);
	ck_assert_ptr_eq(hg_expired(&g, 100), &k[5]);
	hg_drop(&g, &k[5]);
	ck_assert_ptr_eq(hg_expired(&g, 100), &k[6]);
	hg_drop(&g, &k[6]);
	ck_assert_ptr_eq(hg_expired(&g, 100), &k[1]);
	ck_assert_double_eq(hg_next_deadline(&g), 25);
	hg_drop(&g, &k[1]);
	ck_assert_ptr_null(hg_expired(&g, 100));
	ck_assert_uint_eq(g.n, 0);
	ck_assert_ptr_null(g.head);
	ck_assert_ptr_null(g.ihead);
	/* IPv6: an address of its own */
	memset(&six, 0, sizeof(six));
	six.sin6_family = AF_INET6;
	six.sin6_addr = in6addr_loopback;
	hg_add(&g, &k[7], SA(six), sizeof(six), 30);
	hg_add(&g, &k[0], SA(a1), sizeof(a1), 31);
	ck_assert_int_eq(hg_admit(&g, SA(six), sizeof(six), NULL, &v), HG_ADMIT);
	hg_add(&g, &k[2], SA(six), sizeof(six), 32);
	ck_assert_int_eq(hg_admit(&g, SA(six), sizeof(six), NULL, &v), HG_EVICT);
	ck_assert_ptr_eq(v, &k[7]);
	hg_drop(&g, &k[0]);
	hg_drop(&g, &k[2]);
	ck_assert_uint_eq(g.n, 0);
}
END_TEST

/* /metrics' own families, every reason present from the start. */
START_TEST(test_render_http)
{
	struct http_stats st = { .accepted = 9, .requests = 4, .open = 2 };
	struct metrics_daemon d = { .version = "1" };
	struct metrics_src src = { 0 };
	char *buf;
	size_t len;
	int r;

	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_http_connections_dropped_total counter\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_http_connections_dropped_total{reason=\"evicted\"} 0\n"));
	free(buf);
	st.dropped[HD_EVICTED] = 7;
	st.dropped[HD_TIMEOUT] = 3;
	d.http = &st;
	ck_assert_int_eq(metrics_render(&buf, &len, &src, &d), 0);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_http_connections_total counter\nevrdma_http_connections_total 9\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE evrdma_http_connections_open gauge\nevrdma_http_connections_open 2\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_http_requests_total 4\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_http_connections_dropped_total{reason=\"evicted\"} 7\n"));
	ck_assert_ptr_nonnull(strstr(buf, "evrdma_http_connections_dropped_total{reason=\"timeout\"} 3\n"));
	for (r = 0; r < HD_MAX; r++) {
		char want[128];

		snprintf(want, sizeof(want), "{reason=\"%s\"} ", http_drop_names[r]);
		ck_assert_ptr_nonnull(strstr(buf, want));
	}
	free(buf);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("probed");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_option_keys);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_syntax_error_line);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_probe_peer);
	tcase_add_test(tc, test_hist_add);
	tcase_add_test(tc, test_responders_conf);
	tcase_add_test(tc, test_hosts_conf);
	tcase_add_test(tc, test_responder_reason);
	tcase_add_test(tc, test_render_responders);
	tcase_add_test(tc, test_mesh_lines);
	tcase_add_test(tc, test_mesh_local);
	tcase_add_test(tc, test_mesh_conf);
	tcase_add_test(tc, test_mesh_load);
	tcase_add_test(tc, test_probed_load);
	tcase_add_test(tc, test_render_mesh);
	tcase_add_test(tc, test_mesh_select_conf);
	tcase_add_test(tc, test_mesh_select);
	tcase_add_test(tc, test_mesh_select_fleet);
	tcase_add_test(tc, test_mesh_load_select);
	tcase_add_test(tc, test_stream_reason);
	tcase_add_test(tc, test_reason_lists);
	tcase_add_test(tc, test_reconcile);
	tcase_add_test(tc, test_http_conf);
	tcase_add_test(tc, test_status_conf);
	tcase_add_test(tc, test_hguard);
	tcase_add_test(tc, test_render_http);
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
