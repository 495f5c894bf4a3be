/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session suites' shared fakes (tests/fakesess.c): an in-memory byte
 * queue, a mock transport over two of them, an owner that records the
 * results, and the fixtures: one machine against a scripted peer (setup,
 * the feed and take helpers), or two back to back (pair_setup, pump).
 * Used by check_session (the machine, session.c), check_negotiate (its
 * negotiation, negotiate.c) and check_sessdrive (the driver,
 * sessdrive.c); the CPU the mock's held receives take is fakecpu.h's.
 */
#ifndef EVR_TESTS_FAKESESS_H
#define EVR_TESTS_FAKESESS_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stream/plan.h"
#include "stream/session/session.h"
#include "stream/transport.h"
#include "stream/wire.h"

/* ------------------------------------------------------------------ */
/* an in-memory byte queue                                             */

struct bq {
	uint8_t *d;
	size_t rd, wr, cap;
	size_t limit;   /* at most this many unread bytes; 0: no limit */
	int eof;        /* the writer has shut down */
	unsigned gen;   /* bumped by every push and pop */
};

/* ------------------------------------------------------------------ */
/* the mock transport (the CPU's: fakecpu.h)                          */

#define SCRIPT_MAX 8

struct mock {
	struct evr_conn c;      /* first: the session holds &c */
	struct bq *rx, *tx;     /* what we receive / what we send */
	size_t chunk;           /* partial I/O: at most this per call */
	int recv_script[SCRIPT_MAX]; /* one-shot results, used in order */
	unsigned recv_nscript, recv_iscript;
	int send_script[SCRIPT_MAX];
	unsigned send_nscript, send_iscript;
	int send_block;         /* sends return -EAGAIN while set */
	int send_err;           /* sends return this while set */
	int recv_err;           /* receives return this while set */
	unsigned sends, recvs, shutdowns, closes;
	size_t max_len;         /* the largest send or receive asked for */
	/* sends' more flag: bytes offered with it; a send with it pending
	 * (the transport may hold its bytes); receives or shutdowns that
	 * came while one was pending (the session's contract says never) */
	uint64_t more_bytes;
	int more_pending;
	unsigned more_broken;
	uint64_t skipped;       /* bytes received with buf NULL (can_skip) */
	/* the ready op (mock_ready_ops): -1 tells the truth (the queues
	 * moved since the last -EAGAIN), 0 or 1 is said every time */
	int ready_says;
	unsigned readies;       /* calls of ready */
	unsigned rx_gen, tx_gen; /* the queues at the last -EAGAIN */
	int eagain_seen;
	unsigned wasted;        /* calls that returned -EAGAIN with nothing
				 * moved since the last one did */
	/* receives return -EAGAIN until evr_now_ns() reaches this (a peer
	 * whose reply takes that long); the first and last such calls */
	uint64_t hold_until, held_first, held_last;
	/* while it holds: once, in the first call after the session's
	 * sched_yield numbered off_cpu_after (0: never), another task has
	 * taken the CPU (fake_taken): a preemption between two offers */
	unsigned off_cpu_after;
};

/* ------------------------------------------------------------------ */
/* results, through the owner callbacks                                */

#define REC_MAX 70

struct rec {
	unsigned n;
	struct evr_test t[REC_MAX];
	uint64_t ns[REC_MAX];
	enum evr_sess_state state_at_result[REC_MAX];
	unsigned plan_done;
	enum evr_sess_state state_at_plan_done;
	unsigned results_at_plan_done;
	uint64_t lat_samples[REC_MAX]; /* 0 when no latency stats came */
	int split_valid[REC_MAX];      /* --split: the parts came */
	struct evr_lat_split split[REC_MAX];
};

/* ------------------------------------------------------------------ */
/* two machines back to back                                           */

struct end {
	struct evr_sess s;
	struct mock m;
	struct rec rec;
	int live;
};


/* ------------------------------------------------------------------ */
/* the byte queue's and the mock's operations                          */

size_t bq_avail(const struct bq *q);
void bq_push(struct bq *q, const void *p, size_t n);
size_t bq_pop(struct bq *q, void *p, size_t n);
void bq_free(struct bq *q);

/* mock_ops has no ready op; mock_ready_ops has one (ready_says) */
extern const struct evr_conn_ops mock_ops;
extern const struct evr_conn_ops mock_ready_ops;
void mock_init(struct mock *mk, struct bq *rx, struct bq *tx,
	       const char *peer);
void script_recv(struct mock *mk, int ret);
void script_send(struct mock *mk, int ret);

/* the recording owner: result() and plan_done() into owner_ud's rec */
void rec_result(struct evr_sess *x, const struct evr_test *t, uint64_t ns);
void rec_plan_done(struct evr_sess *x);
extern const struct evr_sess_owner rec_owner;
void assert_result(const struct rec *r, unsigned i, const char *name,
		   uint32_t size, uint32_t count, uint32_t iters);

/* ------------------------------------------------------------------ */
/* fixture: a loop, two queues, a mock and a session (setup, teardown) */

extern struct evr_loop *loop;
extern struct bq q_in, q_out;   /* q_in: peer -> us, q_out: us -> peer */
extern struct mock m;
extern struct evr_sess s;
extern struct rec rec;
extern int s_live;

void setup(void);
void teardown(void);
void reset_fixture(void);
void base_opts(struct evr_stream_opts *o);
void custom_plan(struct evr_conn_plan *cp, uint32_t size, uint32_t count,
		 uint32_t iters);
void lat2_plan(struct evr_conn_plan *cp);
void default_lat_plan(struct evr_conn_plan *cp);
void start_sess(int client, const struct evr_conn_plan *cp,
		const struct evr_stream_opts *o);
enum evr_sess_want ev(enum evr_sess_event e, int arg);
enum evr_sess_want ready(void);
enum evr_sess_want settle(void);

/* s's wish and state */
#define ASSERT_AT(want_w, got_w, st) do { \
	enum evr_sess_want w__ = (got_w); \
	ck_assert_msg(w__ == (want_w), "want %d, got %d (state %s)", \
		      (int)(want_w), (int)w__, \
		      evr__sess_state_name(s.state)); \
	ck_assert_msg(s.state == (st), "state %s, expected %s", \
		      evr__sess_state_name(s.state), \
		      evr__sess_state_name(st)); \
} while (0)

void feed(const void *p, size_t n);
void feed_zeros(size_t n);
void feed_pattern(struct evr_pattern *p, size_t n);
void take(void *p, size_t n);
void take_discard(size_t n);
void take_expect_pattern(struct evr_pattern *p, size_t n);
void feed_hdr(uint16_t version, uint16_t flags, uint16_t ntests,
	      uint16_t idx, uint16_t total);
void feed_entry_f(uint32_t size, uint32_t count, uint32_t iters,
		  uint8_t kind, uint8_t flags);
void feed_entry(uint32_t size, uint32_t count, uint32_t iters, uint8_t kind);
void feed_reply_f(int status, uint32_t features);
void feed_reply(int status);
void assert_failed(int err, enum evr_phase ph);
void assert_terminal_sticks(void);
void client_to_reply_recv(const struct evr_conn_plan *cp,
			  const struct evr_stream_opts *o);
void server_to_plan_hdr(const struct evr_stream_opts *o);

/* ------------------------------------------------------------------ */
/* two machines back to back (pair_setup, pair_teardown)               */

extern struct bq q_c2s, q_s2c;
extern struct end cl, sv;

void pair_setup(void);
void pair_teardown(void);
void end_start(struct end *e, int client, const struct evr_conn_plan *cp,
	       const struct evr_stream_opts *o);
int term(const struct evr_sess *x);
unsigned pump(void);
void assert_both_done(void);

#endif
