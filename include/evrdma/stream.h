/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma stream engine: rstream's ping-pong tests as loop-driven state
 * machines.  A client engine runs a test plan against a server; a server
 * engine listens and serves every client that connects, concurrently.
 * The engine never prints, never exits and never blocks the loop (except
 * in EVR_IO_BLOCK, which asks for blocking calls); results, progress and
 * failures leave it through the callbacks.
 */
#ifndef EVRDMA_STREAM_H
#define EVRDMA_STREAM_H

#include <stdint.h>
#include <stddef.h>

#include "evrdma/error.h"
#include "evrdma/loop.h"
#include "evrdma/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stream engine's transports (the word and the choice of one enum
 * per engine: evrdma/transport.h).  The values are kept: TCP is 0. */
enum evr_stream_transport {
	EVR_TRANSPORT_TCP = 0,   /* kernel TCP sockets (rstream -T s) */
	EVR_TRANSPORT_RDMA,      /* the rsocket protocol on RDMA CM + verbs */
};

/* How a connection waits for its socket (rstream -T n / a / b). */
enum evr_io_mode {
	EVR_IO_NONBLOCK = 0, /* retry at once from an idle watcher: spins
			      * (sleeps while others want the CPU) */
	EVR_IO_ASYNC,        /* sleep until the loop reports the fd ready */
	EVR_IO_BLOCK,        /* blocking calls */
};

enum evr_addr_fmt {
	EVR_ADDR_NAME = 0,   /* host names or numeric addresses */
	EVR_ADDR_IP,         /* numeric addresses only, any family */
	EVR_ADDR_IPV6,       /* numeric IPv6 only */
	EVR_ADDR_GID,        /* numeric GIDs, AF_IB (RDMA only) */
};

/* Zero-initialise, then set by name: every zero is a default. */
struct evr_stream_opts {
	int server;                 /* 1: listen and serve; 0: client */
	const char *host;           /* client: the server's address */
	const char *bind_addr;      /* server: listen address; client: source */
	const char *port;           /* default "7471" */
	enum evr_stream_transport transport;
	enum evr_io_mode io;        /* a host wants EVR_IO_ASYNC: NONBLOCK
				     * keeps the loop busy (idle watchers),
				     * BLOCK blocks it in socket calls for up
				     * to stall_ms */
	enum evr_addr_fmt addr_fmt;
	int resolve_rdma;           /* -T r: resolve with rdma_getaddrinfo */
	int verify;                 /* -T v */
	int fork;                   /* -T f: server forks per connection;
				     * not for embedding: needs libev's
				     * default loop (else -EVR_E_NOTSUP),
				     * forks the host, and relies on the
				     * SIGCHLD handling libev's default loop
				     * installs (see man 3 evr_stream_new) */
	int buffer_size;            /* -B; 0 = EVR_DEFAULT_BUFFER_SIZE */
	int inline_size;            /* -i; RDMA only */
	int keepalive;              /* -k seconds; 0 = off */
	int custom;                 /* -I, -C or a numeric -S was given */
	uint32_t size, count, iters;
	int size_all;               /* -S all */
	unsigned stall_ms;          /* watchdog; 0 = EVR_DEFAULT_STALL_MS */
	int once;                   /* server: serve one client run, then stop */
	int no_negotiate;           /* client: speak exactly upstream's wire */
	int force_negotiate;        /* client: send the plan even with verify
				     * (only evrdma servers understand it) */
	int percentiles;            /* client: fill evr_result.lat */
	/* client: run each test for this long instead of a fixed number of
	 * iterations (evrdma servers only: the plan says so); 0 = off */
	uint32_t duration_ms;
	/* call cbs.progress every interval_ms during a test; 0 = never */
	uint32_t interval_ms;
	int report_settings;        /* EVR_INFO_SETTINGS per connection */
	/* client: connections per series, run side by side (rstream -c);
	 * 0 or 1: one, as upstream */
	unsigned conns;
	/* client: at most this many connects in flight at a time;
	 * 0 = EVR_DEFAULT_MAX_CONNECTING */
	unsigned max_connecting;
	/* client with conns > 1: a connection starts its tests only once
	 * all conns of its series are connected, so that they are all up at
	 * once (rstream --all-at-once); the wait counts for no stall */
	int all_at_once;
	/* Server limits: what the server holds is bounded by these, never
	 * by what a peer asks for (rstream(1), SERVER LIMITS).
	 * chunk_size: a connection's data buffer is at most this many
	 * bytes; larger transfers stream through it; 0 =
	 * EVR_DEFAULT_CHUNK_SIZE.  max_conns: connections served at once;
	 * more are closed as they arrive (reported through conn_failed);
	 * 0 = EVR_DEFAULT_MAX_SERVER_CONNS.  max_memory: bytes all
	 * connections' data buffers may take together; a plan that would
	 * exceed it is refused (EVR_E_REJECTED), an upstream client's
	 * connection dropped; 0 = EVR_DEFAULT_MAX_MEMORY. */
	uint32_t chunk_size;
	unsigned max_conns;
	uint64_t max_memory;
	/* EVR_IO_ASYNC: how long, in microseconds, a connection in a fast
	 * exchange polls before it sleeps (rstream(1), --poll-usec); 0 =
	 * EVR_DEFAULT_POLL_US, EVR_POLL_NEVER (any negative): never (sleep
	 * at once); at most EVR_MAX_POLL_US */
	int poll_us;
	/* client: tell each round trip in its parts (rstream --split):
	 * evr_result.split, from an evrdma server that stamps its echoes
	 * with its hold (not upstream's; not with verify; tests of 8 bytes
	 * or more).  Implies percentiles' sampling of the parts only. */
	int lat_split;
	/* client: each connection starts an iteration every 1/mps seconds,
	 * on a schedule from the test's start (one whose time came while
	 * the last was still out goes at once), and its round trip counts
	 * from its time on the schedule, not from when it went (rstream
	 * --mps); 0 = off, at most EVR_MAX_MPS.  Implies percentiles. */
	uint32_t mps;
};

#define EVR_DEFAULT_PORT "7471"
#define EVR_DEFAULT_BUFFER_SIZE (1 << 19) /* upstream's 512 KiB */
#define EVR_DEFAULT_STALL_MS 10000u
#define EVR_DEFAULT_MAX_CONNECTING 256u
#define EVR_MAX_CONNS 100000u
#define EVR_MAX_MPS 10000000u
#define EVR_DEFAULT_CHUNK_SIZE (1u << 20)
#define EVR_DEFAULT_MAX_SERVER_CONNS 16384u
#define EVR_DEFAULT_MAX_MEMORY (1ull << 30)
#define EVR_DEFAULT_POLL_US 200
#define EVR_MAX_POLL_US 100000
#define EVR_POLL_NEVER (-1)     /* poll_us: never poll, sleep at once */

/*
 * Every option of struct evr_stream_opts that a program offers, one row
 * each: the one list that evr_stream_opts_resolve()'s defaults and range
 * refusals, rstream's parser, its --help and its --json echo of the
 * options, and evrdma-probed's configuration keys are made from (rstream's
 * own options, --json and the like, are rows of its own parser).  A row:
 *
 *   X(field, kind, lo, hi, def, flags, side, cli, help, json, dkey)
 *
 * field: the member of struct evr_stream_opts.
 * kind:  NUM (a whole number), MS (milliseconds, given in seconds),
 *        FLAG (0 or 1), STR (a string), WORD (a string or a word that
 *        the program's parser reads its own way).
 * lo, hi: NUM and MS: the range of a value given (in the field's unit);
 *        0 is always allowed, for every zero is a default: outside it,
 *        evr_stream_opts_resolve() and evr_stream_new() say -EINVAL.
 * def:   what a zero stands for (0: the zero is a value).
 * flags: EVR_SOPT_*, below.
 * side:  BOTH, CLIENT or SERVER: whose option it is (given to the other
 *        side, rstream refuses it; the --json echo leaves it out there).
 * cli:   CLI(letter, long name, the name messages use, the bad-value
 *        text, why the other side has no use for it) or NOCLI;
 *        letter 0: a long option only; long name NULL: a letter only,
 *        one of upstream rstream's.
 * help:  HELP(synopsis, text): --help's line ("\n" in text goes on to
 *        an indented line; upstream's options: the usage line and the
 *        lines under it); NOHELP with NOCLI.
 * json:  JSON(key, encoding, when) or NOJSON: the key under --json's
 *        "options"; encoding INT, BOOL, SECS (the field's milliseconds
 *        in seconds), STR, STR_NULL or a word of rstream's own (PORT,
 *        ADDR_FMT, TESTS, NEGOTIATE, POLL); when ALWAYS, CUSTOM (a
 *        custom test only), ASYNC (EVR_IO_ASYNC only) or SET (the field
 *        is not 0).  In the order of the rows.
 * dkey:  DKEY(key, whose, dlo, dhi) or NODKEY: evrdma-probed's
 *        configuration key, PROBE (an rstream probe's and a mesh's), RESP
 *        (a responder's) or PROBE_RESP (both), with lo..hi as its range
 *        (MS: seconds) unless dlo or dhi, not 0, narrows it (an agent
 *        runs beside the host's work: a probe's transfer at most 64m,
 *        not rstream's 1g), and the kind's JSON type (NUM: an integer,
 *        FLAG: true/false).
 *
 * The tags (CLI, HELP, JSON, DKEY, the kinds, sides and encodings) are
 * words for the programs that expand the table, not macros.
 */
#define EVR_SOPT_SUFFIX     0x1u /* a k, m or g (1024...) may follow */
#define EVR_SOPT_CUSTOM     0x2u /* given, the test is custom (-S, -C, -I) */
#define EVR_SOPT_CLIENT     0x4u /* given, the program is a client (-s) */
#define EVR_SOPT_ZERO_NEVER 0x8u /* a 0 given is EVR_POLL_NEVER, the
				  * field's 0 being the default */

#define EVR_STREAM_OPTIONS(X) \
	X(host, STR, 0, 0, 0, EVR_SOPT_CLIENT, CLIENT, \
	  CLI('s', NULL, "-s", NULL, NULL), \
	  HELP("[-s server_address]", NULL), \
	  JSON("server", STR, ALWAYS), NODKEY) \
	X(bind_addr, STR, 0, 0, 0, 0, BOTH, \
	  CLI('b', NULL, "-b", NULL, NULL), \
	  HELP("[-b bind_address]", NULL), \
	  JSON("bind", STR_NULL, ALWAYS), NODKEY) \
	X(port, WORD, 0, 0, EVR_DEFAULT_PORT, 0, BOTH, \
	  CLI('p', NULL, "-p", "port must be 1 to 65535 or a service name", \
	      NULL), \
	  HELP("[-p port_number]", NULL), \
	  JSON("port", PORT, ALWAYS), NODKEY) \
	X(addr_fmt, WORD, 0, 0, 0, 0, BOTH, \
	  CLI('f', NULL, "-f", "use name, ip (or any ip... word, as " \
	      "upstream), ipv6 or gid", NULL), \
	  HELP("[-f address_format]", "    name, ip, ipv6, or gid"), \
	  JSON("address_format", ADDR_FMT, ALWAYS), NODKEY) \
	X(size_all, FLAG, 0, 0, 0, 0, BOTH, NOCLI, NOHELP, \
	  JSON("tests", TESTS, ALWAYS), NODKEY) \
	X(size, NUM, 1, EVR_MAX_XFER_SIZE, 0, \
	  EVR_SOPT_SUFFIX | EVR_SOPT_CUSTOM, BOTH, \
	  CLI('S', NULL, "-S", "transfer size must be 1 to 1g, or all", NULL), \
	  HELP("[-S transfer_size or all]", NULL), \
	  JSON("bytes_per_xfer", INT, CUSTOM), \
	  DKEY("size", PROBE_RESP, 0, 64u << 20)) \
	X(count, NUM, 1, EVR_MAX_COUNT, 0, EVR_SOPT_CUSTOM, BOTH, \
	  CLI('C', NULL, "-C", "transfer count must be 1 to 1000000000", \
	      NULL), \
	  HELP("[-C transfer_count]", NULL), \
	  JSON("xfers_per_iter", INT, CUSTOM), DKEY("count", PROBE_RESP, 0, 0)) \
	X(iters, NUM, 1, EVR_MAX_COUNT, 0, EVR_SOPT_CUSTOM, BOTH, \
	  CLI('I', NULL, "-I", "iterations must be 1 to 1000000000", NULL), \
	  HELP("[-I iterations]", NULL), \
	  JSON("iters", INT, CUSTOM), DKEY("iters", PROBE_RESP, 0, 0)) \
	X(buffer_size, NUM, 0, 1 << 30, EVR_DEFAULT_BUFFER_SIZE, \
	  EVR_SOPT_SUFFIX, BOTH, \
	  CLI('B', NULL, "-B", "buffer size must be 0 (default) to 1g", NULL), \
	  HELP("[-B buffer_size]", NULL), \
	  JSON("buffer_bytes", INT, ALWAYS), NODKEY) \
	X(inline_size, NUM, 0, 65536, 0, EVR_SOPT_SUFFIX, BOTH, \
	  CLI('i', NULL, "-i", "inline size must be 0 to 65536", NULL), \
	  HELP("[-i inline_size]", NULL), \
	  JSON("inline_bytes", INT, ALWAYS), NODKEY) \
	X(keepalive, NUM, 0, 32767, 0, 0, BOTH, \
	  CLI('k', NULL, "-k", "keepalive time must be 0 (off) to 32767 " \
	      "seconds", NULL), \
	  HELP("[-k keepalive_time]", NULL), \
	  JSON("keepalive_s", INT, ALWAYS), NODKEY) \
	X(verify, FLAG, 0, 0, 0, 0, BOTH, NOCLI, NOHELP, \
	  JSON("verify", BOOL, ALWAYS), DKEY("verify", PROBE, 0, 0)) \
	X(fork, FLAG, 0, 0, 0, 0, BOTH, NOCLI, NOHELP, \
	  JSON("fork", BOOL, ALWAYS), NODKEY) \
	X(resolve_rdma, FLAG, 0, 0, 0, 0, BOTH, NOCLI, NOHELP, \
	  JSON("resolve_rdma", BOOL, ALWAYS), NODKEY) \
	X(stall_ms, MS, 10, 86400000, EVR_DEFAULT_STALL_MS, 0, BOTH, \
	  CLI(0, "stall-timeout", "--stall-timeout", \
	      "must be 0.01 to 86400 seconds", NULL), \
	  HELP("--stall-timeout SEC", "fail a connection that makes no " \
	       "progress for SEC seconds (default 10)"), \
	  JSON("stall_timeout_s", SECS, ALWAYS), \
	  DKEY("stall_timeout_s", RESP, 100, 3600000)) \
	X(once, FLAG, 0, 0, 0, 0, SERVER, \
	  CLI(0, "once", "--once", NULL, NULL), \
	  HELP("--once", "server: serve one client run, then exit (as " \
	       "upstream)"), \
	  JSON("once", BOOL, ALWAYS), NODKEY) \
	X(chunk_size, NUM, 1024, EVR_MAX_XFER_SIZE, EVR_DEFAULT_CHUNK_SIZE, \
	  EVR_SOPT_SUFFIX, SERVER, \
	  CLI(0, "chunk", "--chunk", "must be 1k to 1g", NULL), \
	  HELP("--chunk SIZE", "server: a connection's buffer, through " \
	       "which larger\ntransfers stream (default 1m)"), \
	  JSON("chunk_bytes", INT, ALWAYS), NODKEY) \
	X(max_conns, NUM, 1, EVR_MAX_CONNS, EVR_DEFAULT_MAX_SERVER_CONNS, 0, \
	  SERVER, \
	  CLI(0, "max-conns", "--max-conns", "must be 1 to 100000", NULL), \
	  HELP("--max-conns N", "server: serve at most N connections at " \
	       "once (default 16384)"), \
	  JSON("max_conns", INT, ALWAYS), DKEY("max_conns", RESP, 0, 0)) \
	X(max_memory, NUM, 1024, 1ull << 40, EVR_DEFAULT_MAX_MEMORY, \
	  EVR_SOPT_SUFFIX, SERVER, \
	  CLI(0, "max-memory", "--max-memory", "must be 1k to 1024g", NULL), \
	  HELP("--max-memory SIZE", "server: at most SIZE bytes of " \
	       "connection buffers\nin all (default 1g)"), \
	  JSON("max_memory_bytes", INT, ALWAYS), \
	  DKEY("max_memory", RESP, 4096, 0)) \
	X(no_negotiate, FLAG, 0, 0, 0, 0, CLIENT, \
	  CLI(0, "no-negotiate", "--no-negotiate", NULL, \
	      "a server speaks upstream's wire to every client that does"), \
	  HELP("--no-negotiate", "client: do not send the test plan; speak " \
	       "exactly upstream's wire"), \
	  JSON("negotiate", NEGOTIATE, ALWAYS), NODKEY) \
	X(force_negotiate, FLAG, 0, 0, 0, 0, CLIENT, \
	  CLI(0, "negotiate", "--negotiate", NULL, \
	      "a server negotiates with every client that asks"), \
	  HELP("--negotiate", "client: send the test plan even with -T v " \
	       "(evrdma servers only)"), \
	  NOJSON, DKEY("negotiate", PROBE, 0, 0)) \
	X(report_settings, FLAG, 0, 0, 0, 0, BOTH, \
	  CLI(0, "settings", "--settings", NULL, NULL), \
	  HELP("--settings", "report each connection's effective settings"), \
	  JSON("settings", BOOL, ALWAYS), NODKEY) \
	X(all_at_once, FLAG, 0, 0, 0, 0, CLIENT, \
	  CLI(0, "all-at-once", "--all-at-once", NULL, NULL), \
	  HELP("--all-at-once", "with -c: tests start once the server has " \
	       "taken all N"), \
	  JSON("all_at_once", BOOL, ALWAYS), NODKEY) \
	X(duration_ms, MS, 10, 86400000, 0, 0, CLIENT, \
	  CLI('D', "duration", "-D/--duration", \
	      "must be 0.01 to 86400 seconds", \
	      "the server follows the client"), \
	  HELP("-D, --duration SEC", "client: run each test for SEC seconds " \
	       "instead of its\ncount (evrdma servers only)"), \
	  JSON("duration_s", SECS, ALWAYS), NODKEY) \
	X(percentiles, FLAG, 0, 0, 0, 0, CLIENT, \
	  CLI(0, "percentiles", "--percentiles", NULL, NULL), \
	  HELP("--percentiles", "client: after the table, round-trip " \
	       "latency per test:\nmin, p50, p90, p99, p99.9, max, mean " \
	       "(usec)"), \
	  JSON("percentiles", BOOL, ALWAYS), NODKEY) \
	X(lat_split, FLAG, 0, 0, 0, 0, CLIENT, \
	  CLI(0, "split", "--split", NULL, NULL), \
	  HELP("--split", "client: after the table, each test's round trip " \
	       "in its\nparts: network, server hold, local delay (usec;\n" \
	       "evrdma servers only)"), \
	  JSON("split", BOOL, ALWAYS), NODKEY) \
	X(interval_ms, MS, 10, 86400000, 0, 0, BOTH, \
	  CLI(0, "interval", "--interval", "must be 0.01 to 86400 seconds", \
	      NULL), \
	  HELP("--interval SEC", "report progress on stderr every SEC " \
	       "seconds"), \
	  JSON("interval_s", SECS, ALWAYS), NODKEY) \
	X(poll_us, NUM, 0, EVR_MAX_POLL_US, EVR_DEFAULT_POLL_US, \
	  EVR_SOPT_ZERO_NEVER, BOTH, \
	  CLI(0, "poll-usec", "--poll-usec", \
	      "must be 0 (never poll) to 100000 microseconds", NULL), \
	  HELP("--poll-usec N", "-T a: poll up to N usec before sleeping " \
	       "while the\nexchange is fast (default 200; 0 never polls)"), \
	  JSON("poll_usec", POLL, ASYNC), DKEY("poll_us", PROBE, 0, 0)) \
	X(conns, NUM, 1, EVR_MAX_CONNS, 1, 0, CLIENT, \
	  CLI('c', "connections", "-c", "connections must be 1 to 100000", \
	      "a server serves any number of connections"), \
	  HELP("-c, --connections N", "client: N connections side by side " \
	       "per series (1 to 100000),\none aggregate row per test"), \
	  NOJSON, NODKEY) \
	X(max_connecting, NUM, 1, 0xffffffffu, EVR_DEFAULT_MAX_CONNECTING, 0, \
	  CLIENT, NOCLI, NOHELP, NOJSON, NODKEY) \
	X(mps, NUM, 1, EVR_MAX_MPS, 0, 0, CLIENT, \
	  CLI(0, "mps", "--mps", "must be 1 to 10000000 requests a second", \
	      "the client sets the pace"), \
	  HELP("--mps RATE", "client: RATE iterations a second per " \
	       "connection, each on\nits schedule; round trips from each " \
	       "one's time\n(with --percentiles' table)"), \
	  JSON("mps", INT, SET), NODKEY)

/* The options as the engine runs them, in *out (out may be in): every
 * zero that stands for a default replaced by it (port, buffer_size,
 * stall_ms, conns, max_connecting, chunk_size, max_conns, max_memory,
 * poll_us; a negative poll_us becomes EVR_POLL_NEVER), and the same
 * checks as evr_stream_new(): 0, or its -EINVAL for options that make
 * no plan.  Idempotent.  Strings are not copied.  One zero says more
 * than its default: an RDMA client given buffer_size 0 and conns > 1
 * shrinks each connection's rings (man 3 evr_stream_opts_resolve). */
int evr_stream_opts_resolve(const struct evr_stream_opts *in,
			    struct evr_stream_opts *out);

/* What an -EVR_E_NOTSUP failure refused, in its detail: X(CODE, text)
 * gives EVR_NOTSUP_CODE and the words evr_failure_str() uses ("... is
 * not supported").  They name the engine's settings, never a program's
 * options: a program that wants its own words passes them to
 * evr_failure_format(). */
#define EVR_NOTSUP_LIST(X) \
	X(UNSPEC, "this feature") \
	X(DURATION, "a timed test (opts.duration) with a server that does " \
	  "not negotiate (an upstream rstream server)") \
	X(AF_IB, "AF_IB addressing without an InfiniBand port (RoCE and " \
	  "iWARP devices have none)") \
	X(FORK, "fork mode (needs the default libev loop)") \
	X(GID_TCP, "GID addressing over TCP (GIDs need the RDMA transport)") \
	X(TCP_FAMILY, "this address family over TCP") \
	X(CONNS, "many connections (opts.conns) with a server that does " \
	  "not negotiate (an upstream rstream server serves one " \
	  "connection at a time)")

enum evr_notsup {
#define EVR__NS_ENUM(code, text) EVR_NOTSUP_##code,
	EVR_NOTSUP_LIST(EVR__NS_ENUM)
#undef EVR__NS_ENUM
};

/* Why a server refused a test plan or a connection: the status it sent,
 * in an -EVR_E_REJECTED failure's detail.  X(CODE, value, text): the
 * values are the wire's (rstream(1), PLAN NEGOTIATION), the text what
 * evr_failure_str() says after "test plan rejected: ". */
#define EVR_REJECTS(X) \
	X(VERSION, 1, "unsupported negotiation version") \
	X(NTESTS, 2, "bad number of tests") \
	X(SIZE, 3, "transfer size zero or beyond the server's limit") \
	X(COUNT, 4, "bad transfer count or iterations") \
	X(KIND, 5, "unknown test kind") \
	X(NOMEM, 6, "server out of memory") \
	X(FLAGS, 7, "unsupported plan flags") \
	X(BUDGET, 8, "the server's memory budget for connection buffers is " \
	  "taken: try again later or with fewer connections") \
	X(CONNS, 9, "the server serves as many connections as it allows: " \
	  "try again later")

enum evr_reject {
#define EVR__RJ_ENUM(code, value, text) EVR_REJECT_##code = value,
	EVR_REJECTS(EVR__RJ_ENUM)
#undef EVR__RJ_ENUM
};

/* Where a connection stood when it failed: X(CODE, name, word) gives
 * EVR_PH_CODE, the stable name evr_phase_name() returns (--json's
 * "phase") and the word evr_failure_str() uses in its sentence.
 * SETUP: resolve, socket, bind, listen. */
#define EVR_PHASES(X) \
	X(SETUP, "setup", "setup") \
	X(CONNECT, "connect", "connect") \
	X(NEGOTIATE, "negotiate", "negotiation") \
	X(SYNC, "sync", "sync") \
	X(SEND, "send", "send") \
	X(RECV, "recv", "receive") \
	X(CLOSE, "close", "close")

enum evr_phase {
#define EVR__PH_ENUM(code, name, word) EVR_PH_##code,
	EVR_PHASES(EVR__PH_ENUM)
#undef EVR__PH_ENUM
};

/* An -EIO failure's detail over RDMA: the work completion that failed
 * blamed the peer or its path (IBV_WC_RETRY_EXC_ERR, RNR_RETRY_EXC_ERR,
 * REM_*_ERR, or a send flushed while the connection was live: its QP
 * put in error under it), or a connect whose QP could not take the
 * peer's reply (librdmacm's CONNECT_ERROR), not this host.  The text stays upstream's ("Input/output
 * error"); a monitor tells the two apart by this. */
#define EVR_EIO_PEER 1

struct evr_failure {
	int err;                    /* -errno or -EVR_E_* */
	int detail;                 /* gai code, EVR_REJECT_* (also the
				     * server limit an errno failure met),
				     * EVR_NOTSUP_*, stall ms */
	enum evr_phase phase;
	char test[16];              /* test name, "" before the first test */
	unsigned test_index, test_total;
	uint64_t iters_done, iters_total;
	uint64_t xfers_done, xfers_total; /* transfers within the iteration */
	uint64_t bytes_done;        /* bytes moved on this connection */
	char peer[64];              /* "addr:port" or "" */
	const char *where;          /* the call that failed, e.g. "connect" */
	int negotiated;             /* the peer knew our test plan */
	int sys_err;                /* errno behind a resolution failure */
	char addr[96];              /* the address that failed to resolve */
	unsigned conn_id;           /* the connection's evr_result.conn_id
				     * (0 before one exists) */
	/* client with opts.conns > 1: which connection failed (1..N); when
	 * several failed the same way at set-up or connect, conn_same says
	 * how many (conn_index the lowest of them), else 1 */
	unsigned conn_index, conn_total, conn_same;
	/* RDMA: the device and port the connection ran on ("" and 0 when
	 * it had none yet); for -EVR_E_DEVGONE, detail is 1 when the device
	 * reported a fatal error rather than its removal; for -EIO, detail
	 * is EVR_EIO_PEER when the failed work completion says the peer or
	 * its path failed (its acknowledgements stopped, it had no receive
	 * for us, or it refused our request), 0 when it was our side's */
	char device[64];
	unsigned port;
	/* a client whose server name has several addresses, failing to
	 * connect before any connection was made: how many it tried in
	 * turn (the failure is the last one's), else 0 */
	unsigned addrs_tried;
};

/* Round-trip latency distribution of one test on one connection: one
 * monotonic timestamp per iteration (client side), nearest-rank
 * percentiles.  Only when evr_stream_opts.percentiles is set. */
struct evr_lat_stats {
	uint64_t samples;
	uint64_t min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns;
	double mean_ns;
};

/* A round trip in its parts (opts.lat_split): net + peer + local. */
enum evr_split_part {
	/* the network's: the round trip less the two ends' delays */
	EVR_SPLIT_NET = 0,
	/* the server's hold: from its kernel's receipt of the request's
	 * last bytes to the send of the echo (its own clock) */
	EVR_SPLIT_PEER,
	/* this end's: from the kernel's receipt of the echo's last bytes to
	 * their read; only where the transport has receive timestamps
	 * (TCP; not RDMA, whose samples are then 0 in number) */
	EVR_SPLIT_LOCAL,
	EVR_SPLIT_PARTS
};

struct evr_lat_split {
	struct evr_lat_stats part[EVR_SPLIT_PARTS];
	/* iterations whose parts did not fit in their round trip (a clock
	 * step, a server that lies): left out of all three */
	uint64_t rejected;
};

struct evr_latsplit;

struct evr_result {
	const char *name;
	uint32_t size, count, iters;
	uint64_t bytes;             /* both directions, as upstream counts */
	uint64_t elapsed_ns;        /* monotonic, after the sync message */
	unsigned conn_id;           /* engine-wide connection number, from 1 */
	const char *peer;
	const struct evr_lat_stats *lat; /* NULL unless opts.percentiles */
	/* Many connections (opts.conns = N > 1), client only.  A result with
	 * nconns 0 is one connection's, conn_index (1..N) says which; when
	 * all N have finished a test, one more result with nconns = N sums
	 * them up (rstream(1), MANY CONNECTIONS): bytes summed; iters the
	 * mean per connection, rounded to nearest (with a fixed count, each
	 * one's); start_ns the first connection's start and elapsed_ns from
	 * there to the last one's end; conn_mean_ns the mean of their own
	 * elapsed times; iter_mean_ns the mean of their own elapsed_ns /
	 * iters; and, with opts.percentiles, lat the distribution of all N
	 * connections' samples merged (exact nearest rank up to 10^6
	 * samples, the histogram's 0.4 % bound beyond). */
	unsigned conn_index;
	unsigned nconns;
	uint64_t start_ns;          /* evr_now_ns() when the clock started */
	uint64_t conn_mean_ns;      /* = elapsed_ns for one connection */
	/* time per iteration: = elapsed_ns / iters for one connection; for
	 * an aggregate the mean of the connections' own, so that usec/xfer
	 * = iter_mean_ns / 1000 / (2 * count) is the mean of theirs */
	double iter_mean_ns;
	/* With opts.percentiles: the samples behind lat, every iteration's
	 * round trip, for evr_result_lat_walk().  Opaque; valid during the
	 * callback only; NULL when lat is. */
	const struct evr_latstats *lat_samples;
	/* With opts.lat_split and a server that stamps its echoes: the
	 * parts of the round trips (an aggregate's merged), else NULL; and
	 * the samples behind them, for evr_result_split_walk() */
	const struct evr_lat_split *split;
	const struct evr_latsplit *split_samples;
	/* With opts.mps: the rate asked (per connection), the iterations
	 * that went late (their time came while the one before was still
	 * out) and the furthest behind one went; an aggregate's late are
	 * summed, late_max_ns the largest.  The rate achieved is iters
	 * over conn_mean_ns. */
	uint32_t mps;
	uint64_t late, late_max_ns;
	/* -T n (opts.io EVR_IO_NONBLOCK): how often this test's waits went
	 * to sleep rather than spin, because the CPU watch found the thread's
	 * CPU wanted by another task (evr_stream_new(3), "-T n on a busy
	 * host"); an aggregate's summed.  0 when it never did, and for the
	 * other modes. */
	uint64_t spin_sleeps;
};

/* Walk every iteration's round trip behind r->lat (a result given to
 * result() with opts.percentiles; an aggregate holds all N connections'):
 * fn(ud, lo_ns, hi_ns, n) says n samples lie in [lo_ns, hi_ns].  Up to
 * 10^6 samples each is exact (lo_ns == hi_ns, n == 1); beyond, the
 * log-linear histogram's non-empty buckets (hi_ns - lo_ns within 0.4 % of
 * lo_ns), ascending; exact samples come in no particular order.  Returns
 * the number of samples walked: r->lat->samples, less any lost to
 * ENOMEM; 0 when r->lat is NULL.  Call it from result() only. */
uint64_t evr_result_lat_walk(const struct evr_result *r,
			     void (*fn)(void *ud, uint64_t lo_ns,
					uint64_t hi_ns, uint64_t n),
			     void *ud);

/* The same walk over one part's samples behind r->split (0 samples
 * when r->split is NULL). */
uint64_t evr_result_split_walk(const struct evr_result *r,
			       enum evr_split_part part,
			       void (*fn)(void *ud, uint64_t lo_ns,
					  uint64_t hi_ns, uint64_t n),
			       void *ud);

enum evr_info_kind {
	EVR_INFO_LISTENING = 0,     /* server: the listener is ready */
	EVR_INFO_KEEPALIVE,         /* keepalive set on a socket (-k) */
	EVR_INFO_ACCEPTED,          /* server: a connection came in */
	EVR_INFO_CONN_DONE,         /* server: a connection finished well */
	EVR_INFO_SETTINGS,          /* a connection is set up: what it got
				     * (only with opts.report_settings) */
	EVR_INFO_TURNED_AWAY,       /* server: a connection closed as it
				     * came, opts.max_conns being served
				     * (each one; conn_failed says it once
				     * until one is served again) */
};

/* A connection's effective settings, as the kernel or the device set them
 * and, over RDMA, as negotiated with the peer: what every transport has,
 * then the transport's own, as rows it fills itself (man 3
 * evr_stream_new lists each transport's keys). */
struct evr_conn_settings {
	enum evr_stream_transport transport;
	char local[64];             /* "addr:port" or "" */
	char peer[64];
	int keepalive_on;           /* SO_KEEPALIVE / -k timer running */
	int keepalive_idle_s;       /* TCP_KEEPIDLE, or -k over RDMA */
	unsigned nrows;             /* rows[0 .. nrows) */
	struct evr_setting rows[EVR_SETTINGS_MAX];
};

struct evr_info {
	enum evr_info_kind kind;
	unsigned conn_id;
	const char *peer;
	int keepalive_on, keepalive_idle;
	int negotiated;             /* the client sent its plan */
	/* EVR_INFO_LISTENING: the address listened on, "addr:port" ("" if
	 * the transport cannot say) */
	const char *local;
	/* EVR_INFO_SETTINGS: valid during the callback only */
	const struct evr_conn_settings *settings;
};

/* A test in progress, every opts.interval_ms (server: per connection). */
struct evr_progress {
	unsigned conn_id;
	const char *peer;
	int server;
	const char *test;           /* test name */
	unsigned test_index, test_total;
	uint64_t elapsed_ns;        /* since the test's sync */
	uint64_t iters_done;
	uint64_t iters_total;       /* 0 in duration mode */
	uint64_t duration_ns;       /* duration mode: the target, else 0 */
	uint64_t bytes;             /* moved in this test, both directions */
	double gbps;                /* over the last interval */
	/* client with opts.conns = N > 1: which connection (1..N) of N;
	 * 0 otherwise */
	unsigned conn_index, conn_total;
};

/* Any member may be NULL.  The struct is copied by evr_stream_new(). */
struct evr_stream_cbs {
	/* One finished test: a row of the table. */
	void (*result)(void *ud, const struct evr_result *r);
	/* Events worth telling the user about. */
	void (*info)(void *ud, const struct evr_info *i);
	/* Server: one connection failed and was dropped; the server goes on. */
	void (*conn_failed)(void *ud, const struct evr_failure *f);
	/* The engine has finished: status 0 or the failure that ended it
	 * (f is NULL when there is nothing to tell: always with status 0,
	 * and for a client cancelled before it had a connection; otherwise
	 * valid during the callback only).  Exactly once after a
	 * successful evr_stream_start(), always from the loop, never from
	 * inside an evr_* call, and as the engine's last act: the callback
	 * may evr_stream_free() it.  in_child is 1 in a -T f child process,
	 * which should _exit() now. */
	void (*done)(void *ud, int status, const struct evr_failure *f,
		     int in_child);
	/* Optional: a test in progress, every opts.interval_ms. */
	void (*progress)(void *ud, const struct evr_progress *p);
};

struct evr_stream;

/*
 * Create an engine on loop in *out.  opts and cbs are copied (strings
 * too): the caller may free or reuse them at once.  ud goes to every
 * callback.  Nothing happens on the loop until evr_stream_start().
 * Returns 0, -ENOMEM, or -EINVAL for options that make no plan.
 */
int evr_stream_new(struct evr_stream **out, struct evr_loop *loop,
		   const struct evr_stream_opts *opts,
		   const struct evr_stream_cbs *cbs, void *ud);
/*
 * Start it, once: resolve, bind/listen or connect.  Errors found here are
 * returned at once (a negative code; *f, when not NULL, describes them)
 * and then done() will not be called; free the engine.  After a 0 return
 * the rest comes through the callbacks, ending with done().  info() may
 * be called before this returns (a server's EVR_INFO_LISTENING, a
 * client's EVR_INFO_KEEPALIVE); done() never is.  A host or bind address
 * that is a name is looked up on the loop, without blocking it: this then
 * returns 0 at once, and a name that does not resolve (-EVR_E_RESOLVE) or
 * a bind/listen/connect failure after it comes through done().
 */
int evr_stream_start(struct evr_stream *s, struct evr_failure *f);
/*
 * Stop: close every connection (a server also stops listening and sends
 * SIGTERM to its -T f children).  done() follows from the loop with
 * -EVR_E_CANCELLED for a client and 0 for a server (or with how it ended,
 * had it ended first); no result, info or conn_failed comes after this
 * call.  Does nothing once the engine has
 * finished.  Allowed from any callback, this engine's own included (it
 * then takes effect from the loop just after the callback returns).
 */
void evr_stream_cancel(struct evr_stream *s);
/*
 * Free the engine and all it owns, at once: watchers stopped, sockets
 * closed without waiting for the peer, no callback called.  From outside
 * callbacks, from the engine's own done(), or from another engine's
 * callbacks; not from this engine's result/info/conn_failed.  NULL is
 * allowed.
 */
void evr_stream_free(struct evr_stream *s);

/* One line of text for a failure, without the program name or newline,
 * truncated to len.  f NULL (done()'s on success) gives "no failure";
 * buf NULL or len 0 writes nothing. */
void evr_failure_str(const struct evr_failure *f, char *buf, size_t len);
/* The same line with reason in place of the engine's words for what went
 * wrong (NULL: the engine's); the context around it (connection, peer,
 * test, phase) is evr_failure_str()'s. */
void evr_failure_format(const struct evr_failure *f, const char *reason,
			char *buf, size_t len);
/* The stable name of a phase: "negotiate" for EVR_PH_NEGOTIATE
 * (EVR_PHASES), "unknown" for a value outside the enum. */
const char *evr_phase_name(enum evr_phase phase);
/* The stable name of a transport: "tcp" for EVR_TRANSPORT_TCP, "rdma" for
 * EVR_TRANSPORT_RDMA; NULL for a kind no transport has (the kinds are 0, 1,
 * ...: a program lists the transports by asking from 0 until NULL). */
const char *evr_stream_transport_name(enum evr_stream_transport kind);
/* Whether this host can run a transport: 0, -EVR_E_NODEV when it needs
 * an RDMA device and there is none, -EINVAL for an unknown kind. */
int evr_stream_transport_check(enum evr_stream_transport kind);
/* The file descriptors a program needs for conns connections of a
 * transport, the engine's own and a margin included: what to raise
 * RLIMIT_NOFILE to before a client of many connections starts. */
unsigned long evr_stream_transport_fds(enum evr_stream_transport kind,
				       unsigned conns);
/* What a transport can do or needs: EVR_TRANSPORT_CAP_* (evrdma/
 * transport.h); 0 for a kind no transport has. */
unsigned evr_stream_transport_caps(enum evr_stream_transport kind);

/* Upstream rstream's table, for a program that prints its rows (see
 * man 3 evr_size_str): sizes in binary units, one decimal while below
 * ten ("64", "1.5k", "12m"), counts in decimal ones ("100k", "1b"),
 * truncated to len.  The largest transfer size and count (-C, -I) a
 * test may have. */
#define EVR_MAX_XFER_SIZE (1u << 30)
#define EVR_MAX_COUNT 1000000000u
void evr_size_str(char *buf, size_t len, long long size);
void evr_count_str(char *buf, size_t len, long long count);

#ifdef __cplusplus
}
#endif
#endif
