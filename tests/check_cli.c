/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream's command line, the toolkit it is read with (src/cli/parse.c),
 * its result table and its exit statuses.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/mckey_opts.h"
#include "cli/parse.h"
#include "cli/report.h"
#include "cli/rstream_opts.h"
#include "cli/threshold.h"
#include "evrdma/stream.h"

#define MAX_ARGS 32

static FILE *err_f;
static char err_text[1024];

/* Parse "rstream" + args (NULL-terminated); the messages written to err
 * end up in err_text. */
static int parse_v(struct rstream_cli *cli, const char *const *args)
{
	static char *argv[MAX_ARGS + 2];
	int argc = 0, ret;
	size_t n;

	memset(argv, 0, sizeof(argv));
	argv[argc++] = (char *)"rstream";
	while (args[argc - 1]) {
		ck_assert_int_lt(argc, MAX_ARGS);
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	err_f = tmpfile();
	ck_assert_ptr_nonnull(err_f);
	ret = rstream_parse(argc, argv, cli, err_f);
	rewind(err_f);
	n = fread(err_text, 1, sizeof(err_text) - 1, err_f);
	err_text[n] = 0;
	fclose(err_f);
	err_f = NULL;
	return ret;
}

#define PARSE(cli, ...) \
	parse_v((cli), (const char *const[]){ __VA_ARGS__, NULL })
#define PARSE0(cli) parse_v((cli), (const char *const[]){ NULL })

/* A BAD result has written exactly one line. */
static void assert_bad(int ret, const char *what)
{
	const char *nl = strchr(err_text, '\n');

	ck_assert_msg(ret == RSTREAM_PARSE_BAD, "%s: got %d, not BAD", what,
		      ret);
	ck_assert_msg(nl && nl[1] == 0, "%s: not one line: \"%s\"", what,
		      err_text);
	ck_assert_msg(!strncmp(err_text, "rstream: ", 9),
		      "%s: \"%s\" lacks the program name", what, err_text);
}

#define ASSERT_BAD(...) do { \
	struct rstream_cli c_; \
	assert_bad(PARSE(&c_, __VA_ARGS__), #__VA_ARGS__); \
} while (0)

#define ASSERT_PARSE(want, ...) do { \
	struct rstream_cli c_; \
	int r_ = PARSE(&c_, __VA_ARGS__); \
	ck_assert_msg(r_ == (want), "%s: got %d, want %d", #__VA_ARGS__, \
		      r_, (want)); \
} while (0)

/* ---- defaults and basic options ---- */

START_TEST(test_defaults)
{
	struct rstream_cli c;

	memset(&c, 0xa5, sizeof(c));
	ck_assert_int_eq(PARSE0(&c), RSTREAM_PARSE_OK);
	ck_assert_str_eq(err_text, "");
	ck_assert_int_eq(c.o.server, 1);
	ck_assert_ptr_null(c.o.host);
	ck_assert_ptr_null(c.o.bind_addr);
	ck_assert_str_eq(c.o.port, "7471");
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_RDMA);
	ck_assert_int_eq(c.o.io, EVR_IO_NONBLOCK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_NAME);
	ck_assert_int_eq(c.o.resolve_rdma, 0);
	ck_assert_int_eq(c.o.verify, 0);
	ck_assert_int_eq(c.o.fork, 0);
	ck_assert_int_eq(c.o.buffer_size, 0);
	ck_assert_int_eq(c.o.inline_size, 64);
	ck_assert_int_eq(c.o.keepalive, 0);
	ck_assert_int_eq(c.o.custom, 0);
	ck_assert_uint_eq(c.o.size, 1000);
	ck_assert_uint_eq(c.o.count, 1000);
	ck_assert_uint_eq(c.o.iters, 1);
	ck_assert_int_eq(c.o.size_all, 0);
	ck_assert_uint_eq(c.o.stall_ms, 0);
	ck_assert_int_eq(c.o.once, 0);
	ck_assert_int_eq(c.o.no_negotiate, 0);
	ck_assert_int_eq(c.o.force_negotiate, 0);
	ck_assert_int_eq(c.trace, 0);
	ck_assert_int_eq(c.async, 0);
	ck_assert_int_eq(c.blocking, 0);
}
END_TEST

START_TEST(test_client)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-s", "10.0.0.1"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.server, 0);
	ck_assert_str_eq(c.o.host, "10.0.0.1");
	ck_assert_int_eq(c.o.custom, 0);

	ck_assert_int_eq(PARSE(&c, "-shost", "-b", "1.2.3.4"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.server, 0);
	ck_assert_str_eq(c.o.host, "host");
	ck_assert_str_eq(c.o.bind_addr, "1.2.3.4");

	/* -b alone keeps a server */
	ck_assert_int_eq(PARSE(&c, "-b", "::1"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.server, 1);
	ck_assert_str_eq(c.o.bind_addr, "::1");
}
END_TEST

START_TEST(test_reparse_resets)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-s", "h", "-T", "v", "-T", "s", "-C",
			       "5", "--per-conn", "-T", "a"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.verify, 1);
	ck_assert_int_eq(c.o.io, EVR_IO_ASYNC);
	ck_assert_int_eq(PARSE0(&c), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_NONBLOCK);
	ck_assert_int_eq(c.async, 0);
	ck_assert_int_eq(c.o.server, 1);
	ck_assert_int_eq(c.o.verify, 0);
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_RDMA);
	ck_assert_int_eq(c.o.custom, 0);
	ck_assert_uint_eq(c.o.count, 1000);
	ck_assert_int_eq(c.per_conn, 0);
}
END_TEST

/*
 * getopt keeps its position inside a cluster of option letters between
 * calls unless optind is set to 0.  After "-Xs" stops at the unknown X,
 * a later parse must not pick up the stale "s".
 */
START_TEST(test_reparse_after_bad_cluster)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-Xs", "stale"), RSTREAM_PARSE_USAGE);
	ck_assert_int_eq(PARSE(&c, "-p", "7472"), RSTREAM_PARSE_OK);
	ck_assert_msg(c.o.server == 1 && c.o.host == NULL,
		      "a stale -s from the previous parse made a client "
		      "of host \"%s\"", c.o.host ? c.o.host : "(null)");
	ck_assert_str_eq(c.o.port, "7472");
}
END_TEST

/* ---- -T ---- */

struct topt_case {
	const char *arg;
	char letter;
};

static const struct topt_case topt_good[] = {
	{ "s", 's' }, { "a", 'a' }, { "b", 'b' }, { "f", 'f' }, { "n", 'n' },
	{ "r", 'r' }, { "v", 'v' },
	{ "socket", 's' }, { "sockets", 's' }, { "SOCKETS", 's' },
	{ "Socket", 's' }, { "async", 'a' }, { "ASYNC", 'a' },
	{ "asynchronous", 'a' }, { "block", 'b' }, { "blocking", 'b' },
	{ "Blocking", 'b' }, { "nonblock", 'n' }, { "nonblocking", 'n' },
	{ "NonBlocking", 'n' }, { "resolve", 'r' }, { "RESOLVE", 'r' },
	{ "verify", 'v' }, { "Verify", 'v' }, { "fork", 'f' },
	{ "FORK", 'f' },
};

static void check_letter_effect(const struct rstream_cli *c, char letter,
				const char *arg)
{
	const struct evr_stream_opts *o = &c->o;

	switch (letter) {
	case 's':
		ck_assert_msg(o->transport == EVR_TRANSPORT_TCP, "-T %s", arg);
		ck_assert_int_eq(o->io, EVR_IO_NONBLOCK);
		break;
	case 'a':
		ck_assert_msg(o->io == EVR_IO_ASYNC, "-T %s", arg);
		ck_assert_int_eq(o->transport, EVR_TRANSPORT_RDMA);
		break;
	case 'b':
		ck_assert_msg(o->io == EVR_IO_BLOCK, "-T %s", arg);
		break;
	case 'n':
		ck_assert_msg(o->io == EVR_IO_NONBLOCK, "-T %s", arg);
		ck_assert_int_eq(o->transport, EVR_TRANSPORT_RDMA);
		break;
	case 'f':
		ck_assert_msg(o->fork == 1, "-T %s", arg);
		ck_assert_msg(o->transport == EVR_TRANSPORT_TCP, "-T %s", arg);
		break;
	case 'r':
		ck_assert_msg(o->resolve_rdma == 1, "-T %s", arg);
		break;
	case 'v':
		ck_assert_msg(o->verify == 1, "-T %s", arg);
		ck_assert_int_eq(o->transport, EVR_TRANSPORT_RDMA);
		break;
	default:
		ck_abort_msg("bad letter");
	}
	if (letter != 'f')
		ck_assert_int_eq(o->fork, 0);
	if (letter != 'v')
		ck_assert_int_eq(o->verify, 0);
	if (letter != 'r')
		ck_assert_int_eq(o->resolve_rdma, 0);
}

START_TEST(test_topt_letters_and_words)
{
	struct rstream_cli c;
	size_t i;

	for (i = 0; i < sizeof(topt_good) / sizeof(topt_good[0]); i++) {
		int r = PARSE(&c, "-T", topt_good[i].arg);

		ck_assert_msg(r == RSTREAM_PARSE_OK, "-T %s: %d",
			      topt_good[i].arg, r);
		check_letter_effect(&c, topt_good[i].letter, topt_good[i].arg);
	}
}
END_TEST

START_TEST(test_topt_direct)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE0(&c), RSTREAM_PARSE_OK);
	ck_assert_int_eq(rstream_test_opt(&c, "v"), 0);
	ck_assert_int_eq(c.o.verify, 1);
	ck_assert_int_eq(rstream_test_opt(&c, "Sockets"), 0);
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_TCP);
	/* a and b are flags; the I/O mode is settled after parsing */
	ck_assert_int_eq(rstream_test_opt(&c, "a"), 0);
	ck_assert_int_eq(c.async, 1);
	ck_assert_int_eq(rstream_test_opt(&c, "blocking"), 0);
	ck_assert_int_eq(c.blocking, 1);
	ck_assert_int_eq(rstream_test_opt(&c, "n"), 0);
	ck_assert_int_eq(c.blocking, 0);
	ck_assert_int_eq(c.async, 1);
	ck_assert_int_eq(rstream_test_opt(&c, "bl"), -1);
	ck_assert_int_eq(rstream_test_opt(&c, "x"), -1);
	ck_assert_int_eq(rstream_test_opt(&c, ""), -1);
}
END_TEST

START_TEST(test_topt_invalid)
{
	static const char *const badargs[] = {
		"bl", "x", "", "S", "V", "sock", "asyn", "nonbl", "resolv",
		"verif", "for", "q", "xsocket",
	};
	struct rstream_cli c;
	size_t i;

	for (i = 0; i < sizeof(badargs) / sizeof(badargs[0]); i++) {
		int r = PARSE(&c, "-T", badargs[i]);

		ck_assert_msg(r == RSTREAM_PARSE_USAGE, "-T '%s': %d",
			      badargs[i], r);
	}
	/* a bad one after good ones still fails */
	ck_assert_int_eq(PARSE(&c, "-T", "s", "-T", "bl"), RSTREAM_PARSE_USAGE);
}
END_TEST

START_TEST(test_topt_combinations)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-T", "b", "-T", "n"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_NONBLOCK);
	ck_assert_int_eq(PARSE(&c, "-T", "blocking"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_BLOCK);
	ck_assert_int_eq(PARSE(&c, "-T", "n", "-T", "b"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_BLOCK);
	ck_assert_int_eq(PARSE(&c, "-T", "b", "-T", "n", "-T", "b"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_BLOCK);
	/* upstream's a + b sleeps in poll, then calls: async, either order */
	ck_assert_int_eq(PARSE(&c, "-T", "a", "-T", "b"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_ASYNC);
	ck_assert_int_eq(PARSE(&c, "-T", "b", "-T", "a"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_ASYNC);
	ck_assert_int_eq(PARSE(&c, "-T", "a", "-T", "n"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.io, EVR_IO_ASYNC);
	/* effects add up */
	ck_assert_int_eq(PARSE(&c, "-T", "s", "-T", "v", "-T", "a", "-T",
			       "r"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_TCP);
	ck_assert_int_eq(c.o.verify, 1);
	ck_assert_int_eq(c.o.io, EVR_IO_ASYNC);
	ck_assert_int_eq(c.o.resolve_rdma, 1);
}
END_TEST

START_TEST(test_topt_fork)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-T", "f"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.server, 1);
	ck_assert_int_eq(c.o.fork, 1);
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_TCP);
	/* a client ignores fork but keeps kernel sockets, as upstream */
	ck_assert_int_eq(PARSE(&c, "-s", "h", "-T", "fork"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.fork, 0);
	ck_assert_int_eq(c.o.transport, EVR_TRANSPORT_TCP);
}
END_TEST

/* ---- sizes and counts ---- */

START_TEST(test_size_all)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-S", "all"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.size_all, 1);
	ck_assert_int_eq(c.o.custom, 0);
	ck_assert_uint_eq(c.o.size, 1000);
	ck_assert_int_eq(PARSE(&c, "-S", "ALL"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.size_all, 1);
	ck_assert_int_eq(c.o.custom, 0);
	/* -S all with -C is a custom test of the default size */
	ck_assert_int_eq(PARSE(&c, "-S", "all", "-C", "10"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.size_all, 0);
	ck_assert_int_eq(c.o.custom, 1);
	ck_assert_uint_eq(c.o.size, 1000);
	ck_assert_uint_eq(c.o.count, 10);
	ck_assert_int_eq(PARSE(&c, "-I", "3", "-S", "all"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.size_all, 0);
	ck_assert_int_eq(c.o.custom, 1);
	ck_assert_uint_eq(c.o.iters, 3);
}
END_TEST

START_TEST(test_size_numeric)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-S", "4k"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 4096);
	ck_assert_int_eq(c.o.custom, 1);
	ck_assert_int_eq(c.o.size_all, 0);
	ck_assert_uint_eq(c.o.count, 1000);
	ck_assert_uint_eq(c.o.iters, 1);
	ck_assert_int_eq(PARSE(&c, "-S", "4K"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 4096);
	ck_assert_int_eq(PARSE(&c, "-S", "64"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 64);
	ck_assert_int_eq(PARSE(&c, "-S", "1"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 1);
	ck_assert_int_eq(PARSE(&c, "-S", "3m"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 3u << 20);
	ck_assert_int_eq(PARSE(&c, "-S", "1g"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.size, 1u << 30);
}
END_TEST

START_TEST(test_size_bad)
{
	ASSERT_BAD("-S", "0");
	ASSERT_BAD("-S", "-1");
	ASSERT_BAD("-S", "2g");
	ASSERT_BAD("-S", "1073741825");
	ASSERT_BAD("-S", "abc");
	ASSERT_BAD("-S", "");
	ASSERT_BAD("-S", "4x");
	ASSERT_BAD("-S", "4kk");
	ASSERT_BAD("-S", "k");
	ASSERT_BAD("-S", "99999999999999999999");
}
END_TEST

/* -D, --percentiles, --interval */
START_TEST(test_lat_options)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE0(&c), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.duration_ms, 0);
	ck_assert_uint_eq(c.o.interval_ms, 0);
	ck_assert_int_eq(c.o.percentiles, 0);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "-D", "1.5", "--percentiles",
			       "--interval", "0.25"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.duration_ms, 1500);
	ck_assert_uint_eq(c.o.interval_ms, 250);
	ck_assert_int_eq(c.o.percentiles, 1);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--duration=2"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.duration_ms, 2000);
	/* a server may report progress */
	ck_assert_int_eq(PARSE(&c, "--interval", "1"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.interval_ms, 1000);
	ASSERT_BAD("-s", "h", "-D", "0");
	ASSERT_BAD("-s", "h", "-D", "0.001");
	ASSERT_BAD("-s", "h", "-D", "x");
	ASSERT_BAD("-s", "h", "-D", "86401");
	ASSERT_BAD("-s", "h", "--interval", "0");
	ASSERT_BAD("-s", "h", "--interval", "1s");
	ASSERT_BAD("-D", "1");                       /* a server */
	ASSERT_BAD("--percentiles");                 /* a server */
	ASSERT_BAD("-s", "h", "-D", "1", "-T", "v");
	ASSERT_BAD("-s", "h", "-D", "1", "--no-negotiate");
}
END_TEST

/* --poll-usec: -T a's poll; 0 (never) is the engine's negative, the
 * engine's 0 its default */
START_TEST(test_poll_usec)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-T", "a"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.poll_us, 0);
	ck_assert_int_eq(PARSE(&c, "-T", "a", "--poll-usec", "0"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.poll_us, EVR_POLL_NEVER);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--poll-usec=1000", "-T", "a"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.poll_us, 1000);
	ck_assert_int_eq(PARSE(&c, "-T", "a", "--poll-usec", "100000"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.poll_us, EVR_MAX_POLL_US);
	ASSERT_BAD("-T", "a", "--poll-usec", "100001");
	ASSERT_BAD("-T", "a", "--poll-usec", "-1");
	ASSERT_BAD("-T", "a", "--poll-usec", "1k");
	ASSERT_BAD("-T", "a", "--poll-usec", "");
	ASSERT_BAD("--poll-usec", "5");              /* not -T a */
	ASSERT_BAD("-T", "b", "--poll-usec", "5");
}
END_TEST

/* --check runs nothing; --no-host-check skips the checks before a run */
START_TEST(test_host_check_flags)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-s", "h"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.check, 0);
	ck_assert_int_eq(c.no_host_check, 0);
	ck_assert_int_eq(PARSE(&c, "--check", "-b", "a"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.check, 1);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--no-host-check"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.no_host_check, 1);
	ck_assert_int_eq(c.check, 0);
	ck_assert_int_eq(PARSE(&c, "--no-host-check=1"), RSTREAM_PARSE_USAGE);
}
END_TEST

/*
 * A suffix multiplies the number: one that overflows a long long must be
 * refused, not wrapped round into range (2^34 + 1 GiB is 2^64 + 1 GiB).
 */
START_TEST(test_suffix_overflow)
{
	ASSERT_BAD("-S", "17179869185g");          /* wraps to 1g */
	ASSERT_BAD("-S", "18014398509481985k");    /* wraps to 1k */
	ASSERT_BAD("-S", "9223372036854775807k");
	ASSERT_BAD("-B", "17179869185g");
	ASSERT_BAD("-i", "18014398509481985k");
}
END_TEST

START_TEST(test_iters_count)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-I", "5"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.iters, 5);
	ck_assert_uint_eq(c.o.count, 1000);
	ck_assert_uint_eq(c.o.size, 1000);
	ck_assert_int_eq(c.o.custom, 1);
	ck_assert_int_eq(PARSE(&c, "-C", "7"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.count, 7);
	ck_assert_uint_eq(c.o.iters, 1);
	ck_assert_int_eq(c.o.custom, 1);
	ck_assert_int_eq(PARSE(&c, "-C", "1000000000", "-I", "1000000000"),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.count, 1000000000u);
	ck_assert_uint_eq(c.o.iters, 1000000000u);
	ck_assert_int_eq(PARSE(&c, "-C", "1", "-I", "1", "-S", "100"),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.count, 1);
	ck_assert_uint_eq(c.o.iters, 1);
	ck_assert_uint_eq(c.o.size, 100);
}
END_TEST

START_TEST(test_iters_count_bad)
{
	ASSERT_BAD("-I", "0");
	ASSERT_BAD("-I", "-1");
	ASSERT_BAD("-I", "1000000001");
	ASSERT_BAD("-I", "abc");
	ASSERT_BAD("-I", "1k");   /* counts take no suffix */
	ASSERT_BAD("-C", "0");
	ASSERT_BAD("-C", "-5");
	ASSERT_BAD("-C", "1000000001");
	ASSERT_BAD("-C", "");
	ASSERT_BAD("-C", "10x");
}
END_TEST

/* ---- port, keepalive, format, buffers ---- */

START_TEST(test_port)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-p", "7471"), RSTREAM_PARSE_OK);
	ck_assert_str_eq(c.o.port, "7471");
	ck_assert_int_eq(PARSE(&c, "-p", "1"), RSTREAM_PARSE_OK);
	ck_assert_str_eq(c.o.port, "1");
	ck_assert_int_eq(PARSE(&c, "-p", "65535"), RSTREAM_PARSE_OK);
	ck_assert_str_eq(c.o.port, "65535");
	ck_assert_int_eq(PARSE(&c, "-p", "http"), RSTREAM_PARSE_OK);
	ck_assert_str_eq(c.o.port, "http");
	ASSERT_BAD("-p", "0");
	ASSERT_BAD("-p", "65536");
	ASSERT_BAD("-p", "");
	ASSERT_BAD("-p", "99999999999999999999999");
	/* signed numbers are numbers, not service names */
	ASSERT_BAD("-p", "-1");
	ASSERT_BAD("-p", "-65536");
	ASSERT_BAD("-p", "+0");
	ASSERT_BAD("-p", "-");
}
END_TEST

START_TEST(test_keepalive)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-k", "0"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.keepalive, 0);
	ck_assert_int_eq(PARSE(&c, "-k", "60"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.keepalive, 60);
	ck_assert_int_eq(PARSE(&c, "-k", "32767"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.keepalive, 32767);
	ASSERT_BAD("-k", "32768");
	ASSERT_BAD("-k", "-1");
	ASSERT_BAD("-k", "abc");
	ASSERT_BAD("-k", "1k");
}
END_TEST

START_TEST(test_addr_format)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-f", "name"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_NAME);
	ck_assert_int_eq(c.o.resolve_rdma, 0);
	ck_assert_int_eq(PARSE(&c, "-f", "ip"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_IP);
	ck_assert_int_eq(PARSE(&c, "-f", "IP"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_IP);
	ck_assert_int_eq(PARSE(&c, "-f", "ipv6"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_IPV6);
	ck_assert_int_eq(c.o.resolve_rdma, 0);
	ck_assert_int_eq(PARSE(&c, "-f", "gid"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_GID);
	ck_assert_int_eq(c.o.resolve_rdma, 1);
	/* upstream's prefixes: ip..., gid... */
	ck_assert_int_eq(PARSE(&c, "-f", "ipv4"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_IP);
	ck_assert_int_eq(PARSE(&c, "-f", "IPaddr"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_IP);
	ck_assert_int_eq(PARSE(&c, "-f", "gids"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.addr_fmt, EVR_ADDR_GID);
	ASSERT_BAD("-f", "xyz");
	ASSERT_BAD("-f", "i");
	ASSERT_BAD("-f", "gi");
	ASSERT_BAD("-f", "");
}
END_TEST

START_TEST(test_buffer_inline)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "-B", "0", "-i", "0"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.buffer_size, 0);
	ck_assert_int_eq(c.o.inline_size, 0);
	ck_assert_int_eq(PARSE(&c, "-B", "64k", "-i", "256"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.buffer_size, 65536);
	ck_assert_int_eq(c.o.inline_size, 256);
	ck_assert_int_eq(c.o.custom, 0);
	ASSERT_BAD("-B", "-1");
	ASSERT_BAD("-B", "2g");
	ASSERT_BAD("-i", "65537");
}
END_TEST

/* ---- evrdma's long options ---- */

START_TEST(test_stall_timeout)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "--stall-timeout", "2.5"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.stall_ms, 2500);
	ck_assert_int_eq(PARSE(&c, "--stall-timeout=3"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.stall_ms, 3000);
	ck_assert_int_eq(PARSE(&c, "--stall-timeout", "0.01"), RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.stall_ms, 10);
	ck_assert_int_eq(PARSE(&c, "--stall-timeout", "86400"),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(c.o.stall_ms, 86400000u);
	ASSERT_BAD("--stall-timeout", "0");
	ASSERT_BAD("--stall-timeout", "abc");
	ASSERT_BAD("--stall-timeout", "-1");
	ASSERT_BAD("--stall-timeout", "");
	ASSERT_BAD("--stall-timeout", "2.5s");
	ASSERT_BAD("--stall-timeout", "86401");
	ASSERT_BAD("--stall-timeout", "nan");
}
END_TEST

START_TEST(test_flags)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "--once"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.once, 1);
	ck_assert_int_eq(c.o.no_negotiate, 0);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--no-negotiate"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.no_negotiate, 1);
	ck_assert_int_eq(c.o.once, 0);
	ck_assert_int_eq(PARSE(&c, "-s", "h", "-T", "v", "--negotiate"),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.o.force_negotiate, 1);
	ck_assert_int_eq(c.o.no_negotiate, 0);
	ASSERT_BAD("-s", "h", "--negotiate", "--no-negotiate");
	ASSERT_BAD("--no-negotiate", "--negotiate");
	ck_assert_int_eq(PARSE(&c, "--trace"), RSTREAM_PARSE_OK);
	ck_assert_int_eq(c.trace, 1);
	ASSERT_PARSE(RSTREAM_PARSE_HELP, "--help");
	ASSERT_PARSE(RSTREAM_PARSE_VERSION, "--version");
}
END_TEST

/* One rule for the options of one side: on the other side each is an
 * error naming the option (--per-conn, --negotiate, --no-negotiate on a
 * server and --once on a client were silently accepted). */
START_TEST(test_side_options)
{
	static const char *const client_only[][2] = {
		{ "--per-conn", NULL }, { "--negotiate", NULL },
		{ "--no-negotiate", NULL }, { "--percentiles", NULL },
		{ "-c", "2" }, { "-c", "1" }, { "-D", "1" },
	};
	char buf[256] = "";
	FILE *f;
	size_t i;

	for (i = 0; i < sizeof(client_only) / sizeof(client_only[0]); i++) {
		char *argv[] = { "rstream", (char *)client_only[i][0],
				 (char *)client_only[i][1], NULL };
		struct rstream_cli c;
		int argc = client_only[i][1] ? 3 : 2;

		f = fmemopen(buf, sizeof(buf), "w");
		ck_assert_int_eq(rstream_parse(argc, argv, &c, f),
				 RSTREAM_PARSE_BAD);
		fclose(f);
		ck_assert_msg(strstr(buf, client_only[i][0]) &&
			      strstr(buf, "is a client option (use it with -s)"),
			      "%s: '%s'", client_only[i][0], buf);
		/* and fine on a client */
		{
			char *cargv[] = { "rstream", "-s", "h",
					  (char *)client_only[i][0],
					  (char *)client_only[i][1], NULL };

			f = fmemopen(buf, sizeof(buf), "w");
			ck_assert_int_eq(rstream_parse(argc + 2, cargv, &c, f),
					 RSTREAM_PARSE_OK);
			fclose(f);
		}
	}
	{
		char *argv[] = { "rstream", "-s", "h", "--once", NULL };
		struct rstream_cli c;

		f = fmemopen(buf, sizeof(buf), "w");
		ck_assert_int_eq(rstream_parse(4, argv, &c, f),
				 RSTREAM_PARSE_BAD);
		fclose(f);
		ck_assert_str_eq(buf, "rstream: --once is a server option "
				 "(use it without -s)\n");
	}
}
END_TEST

/* The one-line warning of a verifying client whose custom plan the server
 * is not told of: exactly those clients, nobody else. */
START_TEST(test_plan_warning)
{
	static const struct {
		const char *args[12];
		int warn;
	} cases[] = {
		{ { "-s", "h", "-S", "4096", "-C", "100", "-I", "10", "-T", "v" }, 1 },
		{ { "-s", "h", "-T", "s", "-T", "v", "-S", "1000" }, 1 },
		{ { "-s", "h", "-T", "v", "-C", "5" }, 1 },
		{ { "-s", "h", "-T", "v", "-I", "5" }, 1 },
		{ { "-s", "h", "-T", "v", "-S", "all" }, 1 },
		{ { "-s", "h", "-T", "v", "-S", "all", "-C", "3" }, 1 },
		/* the default run: a default server runs the same series */
		{ { "-s", "h", "-T", "v" }, 0 },
		{ { "-s", "h", "-T", "v", "-S", "4096", "--negotiate" }, 0 },
		{ { "-s", "h", "-T", "v", "-S", "4096", "--no-negotiate" }, 0 },
		{ { "-s", "h", "-T", "v", "-S", "4096", "-c", "2" }, 0 },
		{ { "-s", "h", "-S", "4096", "-C", "100", "-I", "10" }, 0 },
		{ { "-s", "h", "-S", "all" }, 0 },
		/* a server is told by its clients */
		{ { "-T", "v", "-S", "4096" }, 0 },
	};
	struct rstream_cli c;
	const char *w;
	size_t i, j;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static char *argv[16];

		argv[0] = (char *)"rstream";
		for (j = 0; cases[i].args[j]; j++)
			argv[j + 1] = (char *)cases[i].args[j];
		argv[j + 1] = NULL;
		err_f = tmpfile();
		ck_assert_ptr_nonnull(err_f);
		ck_assert_int_eq(rstream_parse((int)j + 1, argv, &c, err_f),
				 RSTREAM_PARSE_OK);
		fclose(err_f);
		err_f = NULL;
		w = rstream_plan_warning(&c);
		ck_assert_msg(!w == !cases[i].warn, "case %zu: %s", i,
			      w ? w : "(no warning)");
		if (w) {
			ck_assert_ptr_null(strchr(w, '\n'));
			ck_assert_ptr_nonnull(strstr(w, "--negotiate"));
			ck_assert_ptr_nonnull(strstr(w, "-S/-C/-I"));
		}
		/* -S all with -C or -I: one custom test, said */
		w = rstream_size_warning(&c);
		ck_assert_msg(!w == (i != 5), "case %zu", i);
		if (i == 5)
			ck_assert_str_eq(w, "-S all with -C or -I runs one "
					 "custom test of 1000 bytes, as "
					 "upstream's does; leave out -C and "
					 "-I for the 33 sizes");
		if (i == 4 || i == 11)
			ck_assert_ptr_null(w);
	}
}
END_TEST

START_TEST(test_unknown_and_missing)
{
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "-x");
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "-h");
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "--bogus");
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "-s");       /* missing argument */
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "-C", "5", "-T");
	ASSERT_PARSE(RSTREAM_PARSE_USAGE, "--once=1");
}
END_TEST

START_TEST(test_positional)
{
	struct rstream_cli c;
	int r;

	ASSERT_BAD("extra");
	ASSERT_BAD("-s", "h", "extra");
	ASSERT_BAD("extra", "-s", "h");
	r = PARSE(&c, "-s", "h", "more");
	ck_assert_int_eq(r, RSTREAM_PARSE_BAD);
	ck_assert_ptr_nonnull(strstr(err_text, "more"));
}
END_TEST

/* ---- the table ---- */

START_TEST(test_header)
{
	const char *h = rstream_header();

	ck_assert_str_eq(h, "name      bytes   xfers   iters   total       "
			    "time     Gb/sec    usec/xfer\n");
	ck_assert_uint_eq(strlen(h), 75); /* 74 columns + newline */
	ck_assert_str_eq(rstream_header(), h);
}
END_TEST

static const char *row(const char *name, uint32_t size, uint32_t count,
		       uint32_t iters, uint64_t bytes, uint64_t ns)
{
	static char buf[256];
	struct evr_result r;

	memset(&r, 0, sizeof(r));
	r.name = name;
	r.size = size;
	r.count = count;
	r.iters = iters;
	r.bytes = bytes;
	r.elapsed_ns = ns;
	memset(buf, 'X', sizeof(buf));
	rstream_format_row(buf, sizeof(buf), &r);
	return buf;
}

START_TEST(test_row_latency)
{
	/* upstream [obs]: 12800000 bytes in 1.18 s: 0.0868 Gb/s and
	 * 1180000 us / 100000 / 2 = 5.90 us per transfer */
	const char *s = row("64_lat", 64, 1, 100000, 12800000, 1180000000ULL);

	ck_assert_str_eq(s, "64_lat    64      1       100k    12m         "
			    "1.18s      0.09       5.90\n");
	ck_assert_uint_eq(strlen(s), 73); /* 72 columns + newline */
}
END_TEST

START_TEST(test_row_bandwidth)
{
	/* 1m_bw: 100 x 1 MiB each way = 200 MiB in 0.06 s:
	 * 209715200*8/(1000*60000) = 27.96 Gb/s, 60000/1/200 = 300.00 us */
	ck_assert_str_eq(row("1m_bw", 1048576, 100, 1, 209715200, 60000000ULL),
			 "1m_bw     1m      100     1       200m        "
			 "0.06s     27.96     300.00\n");
}
END_TEST

START_TEST(test_row_custom)
{
	/* 4k x 100, 1 iteration: 819200 bytes in 24 ms:
	 * 819200*8/(1000*24000) = 0.273, 24000/1/200 = 120.00 */
	ck_assert_str_eq(row("custom", 4096, 100, 1, 819200, 24000000ULL),
			 "custom    4k      100     1       800k        "
			 "0.02s      0.27     120.00\n");
	/* 1000 x 1000: 2000000 bytes ("1.9m") in 123.456 ms:
	 * 16e6/123456000 = 0.1296, 123456/2000 = 61.728 */
	ck_assert_str_eq(row("custom", 1000, 1000, 1, 2000000, 123456000ULL),
			 "custom    1000    1k      1       1.9m        "
			 "0.12s      0.13      61.73\n");
}
END_TEST

START_TEST(test_row_truncated_buffer)
{
	char buf[12];
	struct evr_result r;

	memset(&r, 0, sizeof(r));
	r.name = "64_lat";
	r.size = 64;
	r.count = 1;
	r.iters = 100000;
	r.bytes = 12800000;
	r.elapsed_ns = 1180000000ULL;
	rstream_format_row(buf, sizeof(buf), &r);
	ck_assert_str_eq(buf, "64_lat    6");
}
END_TEST

/* ---- exit statuses ---- */

static struct evr_failure mkfail(int err, enum evr_phase ph)
{
	struct evr_failure f;

	memset(&f, 0, sizeof(f));
	f.err = err;
	f.phase = ph;
	return f;
}

START_TEST(test_exit_status)
{
	struct evr_failure f;

	ck_assert_int_eq(rstream_exit_status(NULL), 0);
	f = mkfail(0, EVR_PH_SEND);
	ck_assert_int_eq(rstream_exit_status(&f), 0);
	f = mkfail(-EVR_E_RESOLVE, EVR_PH_SETUP);
	ck_assert_int_eq(rstream_exit_status(&f), 2);
	f = mkfail(-EVR_E_RESOLVE, EVR_PH_CONNECT);
	ck_assert_int_eq(rstream_exit_status(&f), 2);
	f = mkfail(-ECONNREFUSED, EVR_PH_CONNECT);
	ck_assert_int_eq(rstream_exit_status(&f), 3);
	f = mkfail(-ETIMEDOUT, EVR_PH_CONNECT);
	ck_assert_int_eq(rstream_exit_status(&f), 3);
	f = mkfail(-EVR_E_EOF, EVR_PH_SEND);
	ck_assert_int_eq(rstream_exit_status(&f), 4);
	f = mkfail(-EVR_E_VERIFY, EVR_PH_RECV);
	ck_assert_int_eq(rstream_exit_status(&f), 4);
	f = mkfail(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(rstream_exit_status(&f), 4);
	f = mkfail(-EVR_E_STALL, EVR_PH_SYNC);
	ck_assert_int_eq(rstream_exit_status(&f), 4);
	f = mkfail(-ECONNRESET, EVR_PH_CLOSE);
	ck_assert_int_eq(rstream_exit_status(&f), 4);
	f = mkfail(-EADDRINUSE, EVR_PH_SETUP);
	ck_assert_int_eq(rstream_exit_status(&f), 5);
	f = mkfail(-EVR_E_NOTSUP, EVR_PH_SETUP);
	ck_assert_int_eq(rstream_exit_status(&f), 6);
	f = mkfail(-EVR_E_CANCELLED, EVR_PH_RECV);
	ck_assert_int_eq(rstream_exit_status(&f), 130);
	f = mkfail(-EVR_E_NODEV, EVR_PH_SETUP);
	ck_assert_int_eq(rstream_exit_status(&f), 255);
	ck_assert_int_eq(RSTREAM_EXIT_USAGE, 1);
}
END_TEST

/* ---- failure text ---- */

START_TEST(test_failure_str_eof)
{
	struct evr_failure f;
	char buf[512];

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_EOF;
	f.phase = EVR_PH_RECV;
	strcpy(f.test, "64k_lat");
	f.test_index = 2;
	f.test_total = 4;
	f.iters_done = 10;
	f.iters_total = 1000;
	f.xfers_total = 1;
	strcpy(f.peer, "10.0.0.2:7471");
	f.where = "recv";
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "64k_lat"));
	ck_assert_ptr_nonnull(strstr(buf, "peer closed the connection"));
	ck_assert_ptr_nonnull(strstr(buf, "10.0.0.2:7471"));
	ck_assert_ptr_nonnull(strstr(buf, "3 of 4"));
	ck_assert_ptr_nonnull(strstr(buf, "11 of 1000"));
	ck_assert_ptr_null(strchr(buf, '\n'));
	/* no plan sent: a peer that closes mid-test may run another test
	 * (its stall timeout ended first); with a plan it cannot */
	ck_assert_ptr_nonnull(strstr(buf, "connection (do both sides run the "
				     "same test options?)"));
	f.err = -ECONNRESET;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, " (do both sides run the same test "
				     "options?)"));
	f.negotiated = 1;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_null(strstr(buf, "same test"));
}
END_TEST

START_TEST(test_failure_str_other)
{
	struct evr_failure f;
	char buf[512];

	memset(&f, 0, sizeof(f));
	f.err = -ECONNREFUSED;
	f.phase = EVR_PH_CONNECT;
	f.where = "connect";
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, strerror(ECONNREFUSED)));
	ck_assert_ptr_nonnull(strstr(buf, "connect"));
	ck_assert_ptr_null(strchr(buf, '\n'));

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_REJECTED;
	f.detail = 3; /* EVR_PLAN_E_SIZE */
	f.phase = EVR_PH_NEGOTIATE;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "rejected"));
	ck_assert_ptr_nonnull(strstr(buf, "transfer size"));

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_VERIFY;
	f.phase = EVR_PH_RECV;
	f.bytes_done = 307;
	strcpy(f.test, "custom");
	f.test_total = 1;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "data verification failed byte 307"));

	/* a port lost under the run, and one down before the connection;
	 * a device removed, and one failed */
	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_PORTDOWN;
	f.phase = EVR_PH_CONNECT;
	strcpy(f.device, "rxe0");
	f.port = 1;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "rxe0 port 1 went down"));
	f.detail = 1;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "rxe0 port 1 is down"));
	ck_assert_ptr_null(strstr(buf, "went"));
	f.err = -EVR_E_DEVGONE;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "rxe0 failed (a fatal device error)"));
	f.detail = 0;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "rxe0 was removed"));

	/* a short buffer is cut, still terminated */
	memset(buf, 'X', sizeof(buf));
	evr_failure_str(&f, buf, 8);
	ck_assert_uint_eq(strlen(buf), 7);
}
END_TEST

/* -EVR_E_NOTSUP says what it refused in its detail: the engine's words
 * name its settings, rstream's name the options, and the context around
 * the reason (peer, phase) is the same for both. */
START_TEST(test_failure_notsup_words)
{
	struct evr_failure f;
	char buf[512];

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_NOTSUP;
	f.phase = EVR_PH_NEGOTIATE;
	f.detail = EVR_NOTSUP_DURATION;
	strcpy(f.peer, "127.0.0.1:7471");
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:7471: negotiation: a timed test "
			 "(opts.duration) with a server that does not negotiate "
			 "(an upstream rstream server) is not supported");
	ck_assert_ptr_null(strstr(buf, "--"));
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:7471: negotiation: -D/--duration "
			 "with a server that does not negotiate (an upstream "
			 "rstream server) is not supported");
	evr_failure_format(&f, "why", buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:7471: negotiation: why");
	f.detail = EVR_NOTSUP_CONNS;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:7471: negotiation: many connections "
			 "(opts.conns) with a server that does not negotiate "
			 "(an upstream rstream server serves one connection at "
			 "a time) is not supported");
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "127.0.0.1:7471: negotiation: -c with a server "
			 "that does not negotiate (an upstream rstream server "
			 "serves one connection at a time) is not supported: "
			 "leave out -c against such a server");

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_NOTSUP;
	f.detail = EVR_NOTSUP_GID_TCP;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "GID addressing over TCP (GIDs need the RDMA "
			 "transport) is not supported");
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-f gid over TCP (GIDs need the RDMA "
			 "transport) is not supported");
	f.detail = EVR_NOTSUP_AF_IB;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert(!strncmp(buf, "-f gid (AF_IB addressing) without", 33));
	/* a code rstream has no words of its own for, or out of range */
	f.detail = EVR_NOTSUP_FORK;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fork mode (needs the default libev loop) is "
			 "not supported");
	f.detail = 1000;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "this feature is not supported");
	/* a server's refusal names the option its operator would change */
	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_REJECTED;
	f.phase = EVR_PH_NEGOTIATE;
	f.detail = EVR_REJECT_CONNS;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "negotiation: connection refused: the server "
			 "serves as many connections as it allows (its "
			 "--max-conns): "
			 "try again later");
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_ptr_null(strstr(buf, "--"));
	f.detail = EVR_REJECT_BUDGET;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "(its --max-memory)"));
	f.detail = EVR_REJECT_SIZE;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "negotiation: test plan rejected: transfer size "
			 "zero or beyond the server's limit");
	/* a server's connection that met one of its limits: the engine
	 * says which, rstream names the option and its value */
	{
		struct evr_stream_opts o = { .max_conns = 2 };

		memset(&f, 0, sizeof(f));
		f.err = -ECONNREFUSED;
		f.where = "accept";
		f.detail = EVR_REJECT_CONNS;
		evr_failure_str(&f, buf, sizeof(buf));
		ck_assert_str_eq(buf, "accept (at the server's connection "
				 "limit: new connections are turned away until "
				 "some close): Connection refused");
		rstream_failure_str(&f, &o, buf, sizeof(buf));
		ck_assert_str_eq(buf, "accept (at the --max-conns limit of 2 "
				 "connections: new ones are turned away until "
				 "some close): Connection refused");
		f.err = -ENOBUFS;
		f.where = "buffer";
		f.detail = EVR_REJECT_BUDGET;
		f.phase = EVR_PH_SYNC;
		evr_failure_str(&f, buf, sizeof(buf));
		ck_assert_str_eq(buf, "sync: buffer (the server's memory budget "
				 "is taken): No buffer space available");
		rstream_failure_str(&f, NULL, buf, sizeof(buf));
		ck_assert_str_eq(buf, "sync: buffer (the server's memory budget, "
				 "--max-memory, is taken): No buffer space "
				 "available");
	}
	/* rstream's words are only for NOTSUP and REJECTED */
	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_EOF;
	f.detail = EVR_NOTSUP_DURATION;
	rstream_failure_str(&f, NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "peer closed the connection");
}
END_TEST

/* done() hands f == NULL on success: the text says so instead of
 * crashing, and a NULL or empty buffer is left alone. */
START_TEST(test_failure_str_null)
{
	char buf[64];

	memset(buf, 'X', sizeof(buf));
	evr_failure_str(NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "no failure");
	evr_failure_str(NULL, NULL, 10);
	memset(buf, 'X', sizeof(buf));
	evr_failure_str(NULL, buf, 0);
	ck_assert_int_eq(buf[0], 'X');
	evr_failure_str(NULL, buf, 3);
	ck_assert_str_eq(buf, "no");
}
END_TEST

/* -i over TCP is accepted, as upstream, with a note on what it is. */
START_TEST(test_inline_over_tcp)
{
	char *tcp[] = { "rstream", "-T", "s", "-s", "h", "-i", "1", NULL };
	char *rdma[] = { "rstream", "-s", "h", "-i", "1", NULL };
	struct rstream_cli c;
	char buf[256] = "";
	FILE *f;

	f = fmemopen(buf, sizeof(buf), "w");
	ck_assert_int_eq(rstream_parse(7, tcp, &c, f), RSTREAM_PARSE_OK);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "rstream: note: -i is the RDMA "
				     "inline size and means nothing over TCP"));
	memset(buf, 0, sizeof(buf));
	f = fmemopen(buf, sizeof(buf), "w");
	ck_assert_int_eq(rstream_parse(5, rdma, &c, f), RSTREAM_PARSE_OK);
	fclose(f);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(c.o.inline_size, 1);
}
END_TEST

/* ---- the toolkit (src/cli/parse.c) ---- */

static void num_ok(const char *s, long long min, long long max,
		   unsigned flags, long long want)
{
	long long v = -12345;

	ck_assert_msg(cli_num(s, min, max, flags, &v) == 0 && v == want,
		      "cli_num(\"%s\", %lld, %lld, %#x): %lld, want %lld", s,
		      min, max, flags, v, want);
}

static void num_bad(const char *s, long long min, long long max,
		    unsigned flags)
{
	long long v = -12345;

	ck_assert_msg(cli_num(s, min, max, flags, &v) == -1 && v == -12345,
		      "cli_num(\"%s\", %lld, %lld, %#x) accepted (%lld)", s,
		      min, max, flags, v);
}

START_TEST(test_cli_num)
{
	num_ok("0", 0, 10, 0, 0);
	num_ok("10", 0, 10, 0, 10);
	num_ok("-3", -5, 10, 0, -3);
	num_bad("11", 0, 10, 0);
	num_bad("-1", 0, 10, 0);
	num_bad("", 0, 10, 0);
	num_bad("abc", 0, 10, 0);
	num_bad("5x", 0, 10, 0);
	num_bad("99999999999999999999", 0, LLONG_MAX, 0);   /* ERANGE */
	/* binary suffixes, only when asked for */
	num_ok("3k", 0, 1LL << 40, CLI_SUFFIX, 3072);
	num_ok("3K", 0, 1LL << 40, CLI_SUFFIX, 3072);
	num_ok("2m", 0, 1LL << 40, CLI_SUFFIX, 2LL << 20);
	num_ok("1g", 0, 1LL << 40, CLI_SUFFIX, 1LL << 30);
	num_ok("1024G", 0, 1LL << 40, CLI_SUFFIX, 1LL << 40);
	num_ok("7", 0, 1LL << 40, CLI_SUFFIX, 7);
	num_bad("1025g", 0, 1LL << 40, CLI_SUFFIX);
	num_bad("3k", 0, 1LL << 40, 0);
	num_bad("3kb", 0, 1LL << 40, CLI_SUFFIX);
	num_bad("3t", 0, 1LL << 40, CLI_SUFFIX);
	num_bad("k", 0, 1LL << 40, CLI_SUFFIX);
	num_bad("9223372036854775807k", 0, LLONG_MAX, CLI_SUFFIX);
	num_bad("17179869185g", 0, LLONG_MAX, CLI_SUFFIX);  /* 2^64 + 1g */
	/* strtol's base 0 (upstream mckey's -p), only when asked for */
	num_ok("0x111", 0, 0xffff, CLI_ANY_BASE, 0x111);
	num_ok("010", 0, 0xffff, CLI_ANY_BASE, 8);
	num_ok("010", 0, 0xffff, 0, 10);
	num_bad("0x111", 0, 0xffff, 0);
	num_bad("0x", 0, 0xffff, 0);
}
END_TEST

static void secs_ok(const char *s, double min, double max, long long want)
{
	long long ms = -12345;

	ck_assert_msg(cli_secs_ms(s, min, max, &ms) == 0 && ms == want,
		      "cli_secs_ms(\"%s\"): %lld, want %lld", s, ms, want);
}

static void secs_bad(const char *s, double min, double max)
{
	long long ms = -12345;

	ck_assert_msg(cli_secs_ms(s, min, max, &ms) == -1 && ms == -12345,
		      "cli_secs_ms(\"%s\", %g, %g) accepted (%lld)", s, min,
		      max, ms);
}

START_TEST(test_cli_secs_ms)
{
	secs_ok("2.5", 0.01, 86400, 2500);
	secs_ok("0.01", 0.01, 86400, 10);
	secs_ok("1e-2", 0.01, 86400, 10);
	secs_ok("86400", 0.01, 86400, 86400000);
	secs_ok("1.2346", 0.01, 86400, 1235);        /* to nearest */
	secs_ok("1.2344", 0.01, 86400, 1234);
	secs_ok("0", 0, 3600, 0);
	secs_bad("0", 0.01, 86400);
	secs_bad("0.009", 0.01, 86400);
	secs_bad("86400.5", 0.01, 86400);
	secs_bad("-1", 0, 3600);
	secs_bad("", 0, 3600);
	secs_bad("2s", 0, 3600);
	secs_bad("nan", 0, 3600);
	secs_bad("inf", 0, 3600);
	secs_bad("1e999", 0, 3600);                  /* ERANGE */
}
END_TEST

START_TEST(test_cli_bad)
{
	char buf[128] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	ck_assert_ptr_nonnull(f);
	cli_bad(f, "tool", "-x/--ex", "v 1", "must be sane");
	fclose(f);
	ck_assert_str_eq(buf, "tool: invalid value 'v 1' for -x/--ex: "
			 "must be sane\n");
}
END_TEST

/* A table of every kind, into fields of every size the toolkit stores. */
struct kit {
	int flag;
	const char *str;
	uint64_t big;
	uint16_t port;
	uint16_t guard;             /* next to port: must stay untouched */
	unsigned ms;
	int mode;
	int calls, afters;
	int word;                   /* -w's word */
	int num;                    /* -w's number, --nev's */
};

/* "many", or a number after all */
static int kit_word(void *obj, const char *arg)
{
	if (strcmp(arg, "many"))
		return CLI_SET_NUMBER;
	((struct kit *)obj)->word = 1;
	return 0;
}

static int kit_set(void *obj, const char *arg)
{
	struct kit *k = obj;

	k->calls++;
	return strcmp(arg, "ok") ? -1 : 0;
}

static void kit_after(void *obj)
{
	((struct kit *)obj)->afters++;
}

#define K(m) .off = CLI_FIELD(struct kit, m)
static const struct cli_opt kit_opts[] = {
	{ 'a', NULL, "-a", CLI_FLAG, K(flag) },
	{ 'b', "bee", "-b/--bee", CLI_STR, K(str), .after = kit_after },
	{ 'n', NULL, "-n", CLI_NUM, CLI_SUFFIX, 1, 1LL << 40, K(big),
	  .what = "must be 1 to 1024g" },
	{ 300, "port", "--port", CLI_NUM, 0, 1, 65535, K(port),
	  .what = "must be a port" },
	{ 301, "wait", "--wait", CLI_SECS, 0, 0.5, 10, K(ms),
	  .what = "must be 0.5 to 10 s" },
	{ 302, "udp", "--udp", CLI_CONST, .lo = 3, K(mode) },
	{ 'x', NULL, "-x", CLI_CALL, CLI_BAD_USAGE, .set = kit_set,
	  .what = "only ok" },
	{ 303, "help", "--help", CLI_RETURN, .ret = 7 },
	{ 'w', NULL, "-w", CLI_CALL, 0, 2, 9, K(num), .set = kit_word,
	  .after = kit_after, .what = "many, or 2 to 9" },
	{ 304, "nev", "--nev", CLI_NUM, CLI_ZERO_NEG, 0, 5, K(num),
	  .what = "0 (never) to 5" },
};
#undef K

static int kit_parse(struct kit *k, uint64_t *seen, const char *const *args)
{
	static char *argv[MAX_ARGS + 2];
	int argc = 0, ret;
	size_t n;

	memset(k, 0, sizeof(*k));
	k->guard = 0xbeef;
	argv[argc++] = (char *)"tool";
	while (args[argc - 1]) {
		ck_assert_int_lt(argc, MAX_ARGS);
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	argv[argc] = NULL;
	err_f = tmpfile();
	ck_assert_ptr_nonnull(err_f);
	ret = cli_getopt(argc, argv, kit_opts, CLI_ARRAY_SIZE(kit_opts), k,
			 "tool", err_f, seen);
	rewind(err_f);
	n = fread(err_text, 1, sizeof(err_text) - 1, err_f);
	err_text[n] = 0;
	fclose(err_f);
	err_f = NULL;
	return ret;
}

#define KIT(k, seen, ...) \
	kit_parse((k), (seen), (const char *const[]){ __VA_ARGS__, NULL })

START_TEST(test_cli_getopt)
{
	struct kit k;
	uint64_t seen;

	ck_assert_int_eq(KIT(&k, &seen, "-a", "--bee=B", "-n", "2k",
			     "--port", "65535", "--wait", "1.5", "--udp",
			     "-x", "ok"), CLI_PARSE_DONE);
	ck_assert_str_eq(err_text, "");
	ck_assert_int_eq(k.flag, 1);
	ck_assert_str_eq(k.str, "B");
	ck_assert_uint_eq(k.big, 2048);
	ck_assert_uint_eq(k.port, 65535);
	ck_assert_uint_eq(k.guard, 0xbeef);
	ck_assert_uint_eq(k.ms, 1500);
	ck_assert_int_eq(k.mode, 3);
	ck_assert_int_eq(k.calls, 1);
	ck_assert_int_eq(k.afters, 1);
	ck_assert_uint_eq(seen, 0x7f);              /* rows 0-6, not help */
	/* 64-bit values whole; the short name of a long row; a prefix */
	ck_assert_int_eq(KIT(&k, &seen, "-n", "1024g", "-bx", "--po=1"),
			 CLI_PARSE_DONE);
	ck_assert_uint_eq(k.big, 1ULL << 40);
	ck_assert_str_eq(k.str, "x");
	ck_assert_uint_eq(k.port, 1);
	ck_assert_uint_eq(k.guard, 0xbeef);
	ck_assert_uint_eq(seen, (1u << 1) | (1u << 2) | (1u << 3));
	/* a bad value: one line naming the row, and nothing stored */
	ck_assert_int_eq(KIT(&k, &seen, "--port", "65536"), CLI_PARSE_BAD);
	ck_assert_str_eq(err_text, "tool: invalid value '65536' for --port: "
			 "must be a port\n");
	ck_assert_uint_eq(k.port, 0);
	ck_assert_int_eq(KIT(&k, &seen, "--wait", "0.4"), CLI_PARSE_BAD);
	ck_assert_str_eq(err_text, "tool: invalid value '0.4' for --wait: "
			 "must be 0.5 to 10 s\n");
	ck_assert_int_eq(KIT(&k, &seen, "-b", "s", "-n", "0"), CLI_PARSE_BAD);
	ck_assert_str_eq(err_text, "tool: invalid value '0' for -n: "
			 "must be 1 to 1024g\n");
	/* CLI_BAD_USAGE: the line, then the usage */
	ck_assert_int_eq(KIT(&k, &seen, "-x", "no"), CLI_PARSE_USAGE);
	ck_assert_str_eq(err_text, "tool: invalid value 'no' for -x: only ok\n");
	/* a row's return stops at once */
	ck_assert_int_eq(KIT(&k, &seen, "--help", "-n", "0"), 7);
	ck_assert_str_eq(err_text, "");
	/* what getopt refuses: its own words on stderr, none on err */
	ck_assert_int_eq(KIT(&k, &seen, "-q"), CLI_PARSE_USAGE);
	ck_assert_int_eq(KIT(&k, &seen, "--udp=1"), CLI_PARSE_USAGE);
	ck_assert_int_eq(KIT(&k, &seen, "-n"), CLI_PARSE_USAGE);
	ck_assert_str_eq(err_text, "");
	ck_assert_int_eq(KIT(&k, &seen, "-a", "stray", "-a"), CLI_PARSE_BAD);
	ck_assert_str_eq(err_text, "tool: unexpected argument 'stray'\n");
	/* CLI_SET_NUMBER: a word set() takes whole (no after), else a
	 * number of the row's range, stored, then after */
	ck_assert_int_eq(KIT(&k, &seen, "-w", "many"), CLI_PARSE_DONE);
	ck_assert_int_eq(k.word, 1);
	ck_assert_int_eq(k.num, 0);
	ck_assert_int_eq(k.afters, 0);
	ck_assert_int_eq(KIT(&k, &seen, "-w", "9"), CLI_PARSE_DONE);
	ck_assert_int_eq(k.word, 0);
	ck_assert_int_eq(k.num, 9);
	ck_assert_int_eq(k.afters, 1);
	ck_assert_int_eq(KIT(&k, &seen, "-w", "10"), CLI_PARSE_BAD);
	ck_assert_str_eq(err_text, "tool: invalid value '10' for -w: "
			 "many, or 2 to 9\n");
	ck_assert_int_eq(k.num, 0);
	/* CLI_ZERO_NEG: a 0 given is -1, the others as given */
	ck_assert_int_eq(KIT(&k, &seen, "--nev", "0"), CLI_PARSE_DONE);
	ck_assert_int_eq(k.num, -1);
	ck_assert_int_eq(KIT(&k, &seen, "--nev", "5"), CLI_PARSE_DONE);
	ck_assert_int_eq(k.num, 5);
	ck_assert_int_eq(KIT(&k, &seen, "--nev", "-1"), CLI_PARSE_BAD);
}
END_TEST

/* ---- rstream's rules between options, as a table ---- */

/* Every rule names both of its options in its message, and says
 * something of its own. */
START_TEST(test_exclusion_table)
{
	const struct rstream_exclusion *x;
	size_t n, i, j;

	x = rstream_exclusions(&n);
	ck_assert_uint_ge(n, 4);
	for (i = 0; i < n; i++) {
		ck_assert_msg(x[i].opt && x[i].other && x[i].holds && x[i].msg,
			      "rule %zu is incomplete", i);
		ck_assert_msg(strstr(x[i].msg, x[i].opt) &&
			      strstr(x[i].msg, x[i].other),
			      "rule %zu: \"%s\" does not name %s and %s", i,
			      x[i].msg, x[i].opt, x[i].other);
		ck_assert_ptr_null(strchr(x[i].msg, '\n'));
		for (j = 0; j < i; j++)
			ck_assert_str_ne(x[i].msg, x[j].msg);
	}
}
END_TEST

/* Each rule, in the table's order, refuses the command line that breaks
 * it with its exact line (the words rstream has always used), and no
 * other rule does; the same options without the conflict pass. */
START_TEST(test_exclusion_each)
{
	static const struct {
		const char *args[12];
		const char *line;
		const char *fine[12];
	} cases[] = {
		{ { "-s", "h", "--negotiate", "--no-negotiate" },
		  "rstream: --negotiate and --no-negotiate exclude each other\n",
		  { "-s", "h", "--negotiate" } },
		{ { "-s", "h", "-D", "1", "--no-negotiate" },
		  "rstream: -D/--duration needs plan negotiation; it excludes "
		  "--no-negotiate\n",
		  { "-s", "h", "-D", "1", "--negotiate" } },
		{ { "-s", "h", "-T", "v", "-D", "1" },
		  "rstream: -D/--duration cannot be combined with -T v (its "
		  "iteration mark takes a data byte)\n",
		  { "-s", "h", "-T", "v", "-D", "1", "-T", "x" } },
		{ { "-s", "h", "-c", "2", "-T", "b" },
		  "rstream: -c with -T b: blocking calls serve one connection "
		  "at a time; use -T a or -T n\n",
		  { "-s", "h", "-c", "2", "-T", "b", "-T", "a" } },
		{ { "-s", "h", "--mps", "100", "--split" },
		  "rstream: --mps cannot be combined with --split (--split "
		  "parts a round trip from its send, --mps counts it from its "
		  "schedule)\n",
		  { "-s", "h", "--mps", "100", "--percentiles" } },
		{ { "-s", "h", "--poll-usec", "50" },
		  "rstream: --poll-usec is -T a's poll (-T n always polls, -T b "
		  "never does): add -T a\n",
		  { "-s", "h", "--poll-usec", "50", "-T", "a" } },
	};
	const struct rstream_exclusion *x;
	struct rstream_cli c;
	char want[256];
	size_t n, i;

	x = rstream_exclusions(&n);
	ck_assert_uint_eq(n, CLI_ARRAY_SIZE(cases));
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(parse_v(&c, cases[i].args), RSTREAM_PARSE_BAD);
		ck_assert_str_eq(err_text, cases[i].line);
		snprintf(want, sizeof(want), "rstream: %s\n", x[i].msg);
		ck_assert_str_eq(err_text, want);
		ck_assert_int_eq(x[i].holds(&c.o), 1);
	}
	/* the third's "fine" has a bad -T: it shows the rule is checked
	 * after every value, not when -D is read */
	ck_assert_int_eq(parse_v(&c, cases[2].fine), RSTREAM_PARSE_USAGE);
	for (i = 0; i < n; i++) {
		if (i == 2)
			continue;
		ck_assert_msg(parse_v(&c, cases[i].fine) == RSTREAM_PARSE_OK,
			      "rule %zu: \"%s\"", i, err_text);
	}
}
END_TEST

/* The orders that say which line a command line breaking several rules
 * gets: --negotiate with --no-negotiate before the side rule; of several
 * options on the wrong side, the first of the table; the side rule before
 * the other exclusions; exclusions in their table's order. */
START_TEST(test_rule_order)
{
	struct rstream_cli c;

	ck_assert_int_eq(PARSE(&c, "--no-negotiate", "--negotiate"),
			 RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --negotiate and --no-negotiate "
			 "exclude each other\n");
	ck_assert_int_eq(PARSE(&c, "--negotiate", "--per-conn",
			       "--percentiles", "-D", "1", "-c", "2"),
			 RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: -c is a client option (use it "
			 "with -s); a server serves any number of "
			 "connections\n");
	ck_assert_int_eq(PARSE(&c, "--negotiate", "--per-conn",
			       "--percentiles", "-D", "1"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: -D/--duration is a client option "
			 "(use it with -s); the server follows the client\n");
	ck_assert_int_eq(PARSE(&c, "--negotiate", "--per-conn",
			       "--percentiles"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --percentiles is a client option "
			 "(use it with -s)\n");
	ck_assert_int_eq(PARSE(&c, "--negotiate", "--per-conn"),
			 RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --per-conn is a client option "
			 "(use it with -s)\n");
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--chunk", "4k", "--max-memory",
			       "1m", "--max-conns", "2", "--once"),
			 RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --once is a server option (use it "
			 "without -s)\n");
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--chunk", "4k", "--max-memory",
			       "1m", "--max-conns", "2"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --max-conns is a server option "
			 "(use it without -s)\n");
	ck_assert_int_eq(PARSE(&c, "-s", "h", "--chunk", "4k", "--max-memory",
			       "1m"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: --max-memory is a server option "
			 "(use it without -s)\n");
	/* a server with -D and --no-negotiate: the side rule first */
	ck_assert_int_eq(PARSE(&c, "--no-negotiate", "-D", "1"),
			 RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: -D/--duration is a client option "
			 "(use it with -s); the server follows the client\n");
	ck_assert_int_eq(PARSE(&c, "-s", "h", "-c", "2", "-T", "b", "-T", "v",
			       "-D", "1", "--no-negotiate"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: -D/--duration needs plan "
			 "negotiation; it excludes --no-negotiate\n");
	ck_assert_int_eq(PARSE(&c, "-s", "h", "-c", "2", "-T", "b", "-T", "v",
			       "-D", "1"), RSTREAM_PARSE_BAD);
	ck_assert_str_eq(err_text, "rstream: -D/--duration cannot be combined "
			 "with -T v (its iteration mark takes a data byte)\n");
}
END_TEST

/* --help is written by hand (upstream's usage first, then ours, in an
 * order for people), so nothing ties it to the option tables but this:
 * every option a table takes is in its tool's --help. */
static void assert_help_lists(const struct cli_opt *t, size_t n,
			      void (*usage)(FILE *, const char *))
{
	char *buf = NULL, want[64];
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	usage(f, "tool");
	fclose(f);
	for (i = 0; i < n; i++) {
		if (t[i].lname)
			snprintf(want, sizeof(want), "--%s", t[i].lname);
		else
			snprintf(want, sizeof(want), "-%c", t[i].val);
		ck_assert_msg(strstr(buf, want), "%s is not in --help", want);
	}
	free(buf);
}

START_TEST(test_help_lists_every_option)
{
	const struct cli_opt *t;
	size_t n;

	t = rstream_options(&n);
	ck_assert_uint_gt(n, 20);
	assert_help_lists(t, n, rstream_help);
	t = mckey_options(&n);
	ck_assert_uint_gt(n, 10);
	assert_help_lists(t, n, mckey_help);
}
END_TEST

/* getopt_long names an ambiguous prefix's candidates on stderr in the
 * order of the table it is given: the order rstream has always had. */
START_TEST(test_ambiguous_prefixes)
{
	static const char *const cases[][2] = {
		{ "--n", "'--no-negotiate' '--negotiate'" },
		{ "--p", "'--percentiles' '--per-conn'" },
		{ "--s", "'--stall-timeout' '--settings'" },
		{ "--c", "'--connections' '--chunk'" },
		{ "--max", "'--max-conns' '--max-memory'" },
		{ "--ch", "'--chunk' '--check'" },
	};
	char text[512];
	struct rstream_cli c;
	FILE *cap;
	size_t i, n;
	int saved;

	for (i = 0; i < CLI_ARRAY_SIZE(cases); i++) {
		cap = tmpfile();
		ck_assert_ptr_nonnull(cap);
		fflush(stderr);
		saved = dup(2);
		ck_assert_int_ge(saved, 0);
		ck_assert_int_eq(dup2(fileno(cap), 2), 2);
		ck_assert_int_eq(PARSE(&c, cases[i][0], "1"),
				 RSTREAM_PARSE_USAGE);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		rewind(cap);
		n = fread(text, 1, sizeof(text) - 1, cap);
		text[n] = 0;
		fclose(cap);
		ck_assert_msg(strstr(text, "is ambiguous") &&
			      strstr(text, cases[i][1]),
			      "%s: \"%s\"", cases[i][0], text);
	}
}
END_TEST

/* ---- the option table (EVR_STREAM_OPTIONS) and rstream's parser ---- */

/* A row as this test sees it: whether it has an option, its name in
 * messages, whether it has --help's line, its kind and range. */
struct trow {
	const char *field;
	const char *name;           /* NULL: no option of rstream's */
	const char *lname;
	int letter;
	int has_help;
	int ranged;                 /* NUM or MS */
	double unit;                /* MS: given in seconds */
	long long lo, hi;
	unsigned flags;
};

#define T_CLI(l, ln, nm, what, why) .letter = (l), .lname = (ln), .name = (nm)
#define T_NOCLI .name = NULL
#define T_HELP(syn, text) .has_help = 1
#define T_NOHELP .has_help = 0
#define T_RANGED_NUM 1
#define T_RANGED_MS 1
#define T_RANGED_FLAG 0
#define T_RANGED_STR 0
#define T_RANGED_WORD 0
#define T_UNIT_NUM 1
#define T_UNIT_MS 1000.0
#define T_UNIT_FLAG 1
#define T_UNIT_STR 1
#define T_UNIT_WORD 1
#define T_ROW(f, kind, lo_, hi_, def, fl, side, cli, help, ...) \
	{ #f, T_##cli, T_##help, .ranged = T_RANGED_##kind, \
	  .unit = T_UNIT_##kind, .lo = (long long)(lo_), \
	  .hi = (long long)(hi_), .flags = (fl) },
static const struct trow trows[] = { EVR_STREAM_OPTIONS(T_ROW) };

static const struct cli_opt *option_named(const char *name)
{
	const struct cli_opt *t = NULL;
	size_t n, i;

	t = rstream_options(&n);
	for (i = 0; i < n; i++)
		if (t[i].name && !strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

/* Every row with an option is in the parser once, with --help's line;
 * a row without has neither; the parser has nothing else but rstream's
 * own (--trace, --json, --per-conn, --check, --no-host-check, -T,
 * --help, --version, --fail-if). */
START_TEST(test_table_rows_are_options)
{
	const struct cli_opt *t;
	size_t n, i, j, rows = 0;

	t = rstream_options(&n);
	for (i = 0; i < CLI_ARRAY_SIZE(trows); i++) {
		const struct trow *r = &trows[i];
		const struct cli_opt *o;

		ck_assert_msg(!r->name == !r->has_help,
			      "%s: an option without --help's line, or a "
			      "line without an option", r->field);
		if (!r->name)
			continue;
		rows++;
		o = option_named(r->name);
		ck_assert_msg(o, "%s: %s is no option", r->field, r->name);
		ck_assert_msg(!r->lname || (o->lname &&
					    !strcmp(o->lname, r->lname)),
			      "%s: --%s", r->field, r->lname);
		ck_assert_msg(!r->letter || o->val == r->letter, "%s: -%c",
			      r->field, r->letter);
		/* an option of a range says so when refused */
		ck_assert_msg(!r->ranged || (o->what && o->what[0]),
			      "%s: no bad-value text", r->name);
	}
	ck_assert_uint_eq(n, rows + 9);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			ck_assert_msg(t[i].val != t[j].val, "%s and %s: one value",
				      t[i].name, t[j].name);
			ck_assert_msg(strcmp(t[i].name, t[j].name),
				      "%s twice", t[i].name);
		}
}
END_TEST

/* "--opt VALUE" on a client or server as the option's side wants, in
 * -T a (which --poll-usec needs): what the parser says. */
static int parse_one(const struct cli_opt *o, const char *v)
{
	struct rstream_cli c;
	char opt[64];
	int ret;

	if (o->lname)
		snprintf(opt, sizeof(opt), "--%s", o->lname);
	else
		snprintf(opt, sizeof(opt), "-%c", o->val);
	if (o->side == CLI_CLIENT)
		ret = PARSE(&c, "-T", "a", "-s", "h", opt, v);
	else
		ret = PARSE(&c, "-T", "a", opt, v);
	return ret;
}

static void value_str(char *buf, size_t len, const struct trow *r,
		      long long v)
{
	if (r->unit != 1)
		snprintf(buf, len, "%.3f", (double)v / r->unit);
	else
		snprintf(buf, len, "%lld", v);
}

/* The parser takes each ranged row's ends and refuses one past either
 * (in the option's own unit: MS rows in seconds), as the library and
 * the daemon do (check_stream, check_probed): one range each. */
START_TEST(test_table_ranges_are_the_parsers)
{
	char v[64];
	size_t i, n = 0;

	for (i = 0; i < CLI_ARRAY_SIZE(trows); i++) {
		const struct trow *r = &trows[i];
		const struct cli_opt *o;

		if (!r->name || !r->ranged)
			continue;
		o = option_named(r->name);
		ck_assert_ptr_nonnull(o);
		n++;
		value_str(v, sizeof(v), r, r->lo);
		ck_assert_msg(parse_one(o, v) == RSTREAM_PARSE_OK, "%s %s: %s",
			      r->name, v, err_text);
		value_str(v, sizeof(v), r, r->hi);
		ck_assert_msg(parse_one(o, v) == RSTREAM_PARSE_OK, "%s %s: %s",
			      r->name, v, err_text);
		value_str(v, sizeof(v), r, r->hi + (r->unit != 1 ? 10 : 1));
		ck_assert_msg(parse_one(o, v) == RSTREAM_PARSE_BAD,
			      "%s %s accepted", r->name, v);
		ck_assert_msg(strstr(err_text, o->what), "%s: \"%s\"",
			      r->name, err_text);
		if (r->lo > 0) {
			value_str(v, sizeof(v), r, r->lo - (r->unit != 1 ?
							    5 : 1));
			ck_assert_msg(parse_one(o, v) == RSTREAM_PARSE_BAD,
				      "%s %s accepted", r->name, v);
		}
	}
	ck_assert_uint_ge(n, 12);
}
END_TEST

/* --fail-if: what parses and into what; the worst kept; a threshold no
 * row had fails; the lines. */
START_TEST(test_fail_if)
{
	struct thr_set set;
	double v[THR__COUNT] = { 0 };
	char err[200], line[256];

	memset(&set, 0, sizeof(set));
	ck_assert_int_eq(thr_add(&set, "p99>50us", THR_RSTREAM, err,
				 sizeof(err)), 0);
	ck_assert_int_eq(thr_add(&set, " max < 1.5 ms ", THR_RSTREAM, err,
				 sizeof(err)), 0);
	ck_assert_int_eq(thr_add(&set, "P99.9>2S", THR_RSTREAM, err,
				 sizeof(err)), 0);
	ck_assert_int_eq(thr_add(&set, "gbps<10", THR_RSTREAM, err,
				 sizeof(err)), 0);
	ck_assert_int_eq(thr_add(&set, "usec>5us", THR_RSTREAM, err,
				 sizeof(err)), 0);
	ck_assert_uint_eq(set.n, 5);
	ck_assert(set.t[0].m == THR_P99 && !set.t[0].below);
	ck_assert(set.t[0].limit == 50000.0);
	ck_assert(set.t[1].m == THR_MAX && set.t[1].below);
	ck_assert(set.t[1].limit == 1.5e6);
	ck_assert(set.t[2].m == THR_P999 && set.t[2].limit == 2e9);
	ck_assert(set.t[3].m == THR_GBPS && set.t[3].limit == 10.0);
	ck_assert(set.t[4].m == THR_USEC && set.t[4].limit == 5.0);
	ck_assert(thr_need_lat(&set));
	/* refused: each with its reason, nothing added */
	ck_assert_int_eq(thr_add(&set, "p99>50", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "with its unit"));
	ck_assert_int_eq(thr_add(&set, "loss>1", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "p99>nan us", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "p99>inf us", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "p99>=5us", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_str_eq(err, "p99 must be followed by one > or <, then the "
			 "limit");
	ck_assert_int_eq(thr_add(&set, "gbps<<1", THR_RSTREAM, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "loss>0.5%", THR_MCKEY, err,
				 sizeof(err)), 0);
	ck_assert_int_eq(thr_add(&set, "loss>101", THR_MCKEY, err,
				 sizeof(err)), -1);
	ck_assert_int_eq(thr_add(&set, "p99>5us", THR_MCKEY, err,
				 sizeof(err)), -1);
	ck_assert_uint_eq(set.n, 6);
	set.n = 5;
	/* two rows: the worst of each kept, with its test */
	v[THR_P99] = 40000;
	v[THR_MAX] = 2e6;
	v[THR_P999] = 1e5;
	v[THR_GBPS] = 12;
	v[THR_USEC] = 3;
	thr_observe(&set, v, ~0u, "64_lat");
	ck_assert_uint_eq(thr_failed(&set), 0);
	v[THR_P99] = 73200;
	v[THR_MAX] = 1e6;
	v[THR_GBPS] = 20;
	thr_observe(&set, v, (1u << THR_P99) | (1u << THR_MAX) |
		    (1u << THR_GBPS), "4k_lat");
	ck_assert_uint_eq(thr_failed(&set), 2);
	ck_assert(set.t[0].failed && set.t[0].worst == 73200);
	ck_assert_str_eq(set.t[0].where, "4k_lat");
	ck_assert(set.t[1].failed && set.t[1].worst == 1e6);
	ck_assert(!set.t[3].failed && set.t[3].worst == 12);
	ck_assert_str_eq(set.t[3].where, "64_lat");
	thr_line(&set.t[0], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'p99>50us': failed: 4k_lat p99 "
			 "73.20 us, 1.46 x the limit");
	thr_line(&set.t[3], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'gbps<10': passed (worst: 64_lat "
			 "gbps 12.00 Gb/s)");
	/* how far past the limit, in plain digits at every size */
	set.t[3].failed = 1;
	set.t[3].worst = 0.00094;
	thr_line(&set.t[3], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'gbps<10': failed: 64_lat gbps "
			 "0.00 Gb/s, under 0.01 x the limit");
	set.t[3].worst = 0.1;
	thr_line(&set.t[3], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'gbps<10': failed: 64_lat gbps "
			 "0.10 Gb/s, 0.01 x the limit");
	set.t[0].worst = 123456e3;
	thr_line(&set.t[0], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'p99>50us': failed: 4k_lat p99 "
			 "123.46 ms, 2469 x the limit");
	/* a threshold no row had fails */
	memset(&set, 0, sizeof(set));
	thr_add(&set, "p50>1ms", THR_RSTREAM, err, sizeof(err));
	thr_observe(&set, v, 1u << THR_GBPS, "64_bw");
	ck_assert_uint_eq(thr_failed(&set), 1);
	thr_line(&set.t[0], line, sizeof(line));
	ck_assert_str_eq(line, "--fail-if 'p50>1ms': failed: no result had "
			 "p50");
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc;

	tc = tcase_create("parse");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_client);
	tcase_add_test(tc, test_reparse_resets);
	tcase_add_test(tc, test_topt_letters_and_words);
	tcase_add_test(tc, test_topt_direct);
	tcase_add_test(tc, test_topt_invalid);
	tcase_add_test(tc, test_topt_combinations);
	tcase_add_test(tc, test_topt_fork);
	tcase_add_test(tc, test_size_all);
	tcase_add_test(tc, test_size_numeric);
	tcase_add_test(tc, test_size_bad);
	tcase_add_test(tc, test_lat_options);
	tcase_add_test(tc, test_poll_usec);
	tcase_add_test(tc, test_host_check_flags);
	tcase_add_test(tc, test_suffix_overflow);
	tcase_add_test(tc, test_iters_count);
	tcase_add_test(tc, test_iters_count_bad);
	tcase_add_test(tc, test_port);
	tcase_add_test(tc, test_keepalive);
	tcase_add_test(tc, test_addr_format);
	tcase_add_test(tc, test_buffer_inline);
	tcase_add_test(tc, test_stall_timeout);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_side_options);
	tcase_add_test(tc, test_inline_over_tcp);
	tcase_add_test(tc, test_plan_warning);
	tcase_add_test(tc, test_unknown_and_missing);
	tcase_add_test(tc, test_positional);
	/* last: when it fails without fork it leaves getopt's state behind */
	tcase_add_test(tc, test_reparse_after_bad_cluster);
	suite_add_tcase(s, tc);

	tc = tcase_create("toolkit");
	tcase_add_test(tc, test_fail_if);
	tcase_add_test(tc, test_cli_num);
	tcase_add_test(tc, test_cli_secs_ms);
	tcase_add_test(tc, test_cli_bad);
	tcase_add_test(tc, test_cli_getopt);
	tcase_add_test(tc, test_exclusion_table);
	tcase_add_test(tc, test_exclusion_each);
	tcase_add_test(tc, test_rule_order);
	tcase_add_test(tc, test_ambiguous_prefixes);
	tcase_add_test(tc, test_help_lists_every_option);
	tcase_add_test(tc, test_table_rows_are_options);
	tcase_add_test(tc, test_table_ranges_are_the_parsers);
	suite_add_tcase(s, tc);

	tc = tcase_create("report");
	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_row_latency);
	tcase_add_test(tc, test_row_bandwidth);
	tcase_add_test(tc, test_row_custom);
	tcase_add_test(tc, test_row_truncated_buffer);
	tcase_add_test(tc, test_exit_status);
	tcase_add_test(tc, test_failure_str_eof);
	tcase_add_test(tc, test_failure_str_other);
	tcase_add_test(tc, test_failure_str_null);
	tcase_add_test(tc, test_failure_notsup_words);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
