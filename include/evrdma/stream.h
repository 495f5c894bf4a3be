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
#include <sys/socket.h>

#include "evrdma/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

enum evr_xport_kind {
	EVR_XPORT_TCP = 0,   /* kernel TCP sockets (rstream -T s) */
	EVR_XPORT_RDMA,      /* the rsocket protocol on RDMA CM + verbs */
};

/* How a connection waits for its socket (rstream -T n / a / b). */
enum evr_io_mode {
	EVR_IO_NONBLOCK = 0, /* retry at once from an idle watcher: spins */
	EVR_IO_ASYNC,        /* sleep until the loop reports the fd ready */
	EVR_IO_BLOCK,        /* blocking calls */
};

enum evr_addr_fmt {
	EVR_ADDR_NAME = 0,   /* host names or numeric addresses */
	EVR_ADDR_IP,         /* numeric addresses only, any family */
	EVR_ADDR_IPV6,       /* numeric IPv6 only */
	EVR_ADDR_GID,        /* numeric GIDs, AF_IB (RDMA only) */
};

struct evr_stream_opts {
	int server;                 /* 1: listen and serve; 0: client */
	const char *host;           /* client: the server's address */
	const char *bind_addr;      /* server: listen address; client: source */
	const char *port;           /* default "7471" */
	enum evr_xport_kind xport;
	enum evr_io_mode io;
	enum evr_addr_fmt addr_fmt;
	int resolve_rdma;           /* -T r: resolve with rdma_getaddrinfo */
	int verify;                 /* -T v */
	int fork;                   /* -T f: server forks per connection */
	int buffer_size;            /* -B; 0 = 512 KiB */
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
	/* client: connections per series, run side by side (rstream -c);
	 * 0 or 1: one, as upstream */
	unsigned conns;
	/* client: at most this many connects in flight at a time;
	 * 0 = EVR_DEFAULT_MAX_CONNECTING */
	unsigned max_connecting;
};

#define EVR_DEFAULT_PORT "7471"
#define EVR_DEFAULT_STALL_MS 10000u
#define EVR_DEFAULT_MAX_CONNECTING 256u
#define EVR_MAX_CONNS 100000u

/* Failure codes beyond negative errno values. */
enum {
	EVR_E_BASE = 100000,
	EVR_E_EOF,          /* the peer closed the connection */
	EVR_E_STALL,        /* no progress within the stall timeout */
	EVR_E_VERIFY,       /* received data does not match the pattern */
	EVR_E_REJECTED,     /* the server rejected our test plan */
	EVR_E_RESOLVE,      /* name resolution failed (detail: gai code) */
	EVR_E_NODEV,        /* no RDMA device */
	EVR_E_EXTRA,        /* the peer sent more than the plan holds */
	EVR_E_CANCELLED,    /* cancelled by the program */
	EVR_E_PROTO,        /* malformed negotiation message */
	EVR_E_NOTSUP,       /* not supported by this transport or build */
};

enum evr_phase {
	EVR_PH_SETUP = 0,   /* resolve, socket, bind, listen */
	EVR_PH_CONNECT,
	EVR_PH_NEGOTIATE,
	EVR_PH_SYNC,
	EVR_PH_SEND,
	EVR_PH_RECV,
	EVR_PH_CLOSE,
};

struct evr_failure {
	int err;                    /* -errno or -EVR_E_* */
	int detail;                 /* gai code, reject reason, stall ms */
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
	/* client with opts.conns > 1: which connection failed (1..N) */
	unsigned conn_index, conn_total;
};

/* Round-trip latency distribution of one test on one connection: one
 * monotonic timestamp per iteration (client side), nearest-rank
 * percentiles.  Only when evr_stream_opts.percentiles is set. */
struct evr_lat_stats {
	uint64_t samples;
	uint64_t min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns;
	double mean_ns;
};

struct evr_result {
	const char *name;
	uint32_t size, count, iters;
	uint64_t bytes;             /* both directions, as upstream counts */
	uint64_t elapsed_ns;        /* monotonic, after the sync message */
	unsigned conn_id;           /* engine-wide connection number */
	const char *peer;
	const struct evr_lat_stats *lat; /* NULL unless opts.percentiles */
	/* Many connections (opts.conns = N > 1), client only.  A result with
	 * nconns 0 is one connection's, conn_index (1..N) says which; when
	 * all N have finished a test, one more result with nconns = N sums
	 * them up: bytes summed, elapsed_ns from the first connection's
	 * start to the last one's end, conn_mean_ns the mean of their own
	 * elapsed times (lat NULL). */
	unsigned conn_index;
	unsigned nconns;
	uint64_t start_ns;          /* evr_now_ns() when the clock started */
	uint64_t conn_mean_ns;      /* = elapsed_ns for one connection */
};

enum evr_info_kind {
	EVR_INFO_LISTENING = 0,     /* server: the listener is ready */
	EVR_INFO_KEEPALIVE,         /* keepalive set on a socket (-k) */
	EVR_INFO_ACCEPTED,          /* server: a connection came in */
	EVR_INFO_CONN_DONE,         /* server: a connection finished well */
};

struct evr_info {
	enum evr_info_kind kind;
	unsigned conn_id;
	const char *peer;
	int keepalive_on, keepalive_idle;
	int negotiated;             /* the client sent its plan */
};

struct evr_stream_cbs {
	/* One finished test: a row of the table. */
	void (*result)(void *ud, const struct evr_result *r);
	/* Events worth telling the user about. */
	void (*info)(void *ud, const struct evr_info *i);
	/* Server: one connection failed and was dropped; the server goes on. */
	void (*conn_failed)(void *ud, const struct evr_failure *f);
	/* The engine has finished: status 0 or the failure that ended it.
	 * in_child is 1 in a -T f child process, which should exit now. */
	void (*done)(void *ud, int status, const struct evr_failure *f,
		     int in_child);
};

struct evr_stream;

int evr_stream_new(struct evr_stream **out, struct evr_loop *loop,
		   const struct evr_stream_opts *opts,
		   const struct evr_stream_cbs *cbs, void *ud);
/* Resolve, bind/listen or connect: errors found here are returned at once
 * (0 or negative; *f describes them), later ones arrive through done(). */
int evr_stream_start(struct evr_stream *s, struct evr_failure *f);
/* Stop now: close every connection; done() is called with
 * -EVR_E_CANCELLED for a client and 0 for a server. */
void evr_stream_cancel(struct evr_stream *s);
void evr_stream_free(struct evr_stream *s);

/* One line of text for a failure, without the program name or newline. */
void evr_failure_str(const struct evr_failure *f, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
