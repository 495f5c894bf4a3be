/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Between the two halves of the session machine (session.h): session.c
 * runs it and the tests, negotiate.c the negotiation before the first
 * test.  Internal to those two files; nothing here is exported.
 */
#ifndef EVR_SRC_NEGOTIATE_H
#define EVR_SRC_NEGOTIATE_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* negotiate.c: the negotiation's step (HELLO_SEND to REPLY_SEND) whose
 * bytes have all moved: what comes next (as session.c's op_done()). */
enum evr_sess_want evr__sess_negotiate_done(struct evr_sess *s);

/* session.c: the machine's steps the negotiation takes too. */
void evr__sess_set_state(struct evr_sess *s, enum evr_sess_state st);
/* The next operation: st, sending or receiving len bytes at buf. */
void evr__sess_op(struct evr_sess *s, enum evr_sess_state st, int send,
		  uint8_t *buf, size_t len);
/* FAILED, s->fail filled in (where: what failed); EVR_WANT_NONE. */
enum evr_sess_want evr__sess_fail(struct evr_sess *s, int err, int detail,
				  const char *where);
/* -1 (FAILED) if -V's pattern does not hold in b[0..len). */
int evr__sess_check_pattern(struct evr_sess *s, const uint8_t *b,
			    size_t len);
void evr__sess_sync_send(struct evr_sess *s);
/* The current test (s->ti) from its sync. */
void evr__sess_begin_test(struct evr_sess *s);
/* After the sync: the clock starts and the client sends first. */
enum evr_sess_want evr__sess_start_data(struct evr_sess *s);
/* Grow the buffer to size: 0, -ENOMEM, or -ENOBUFS (the budget). */
int evr__sess_ensure_buf(struct evr_sess *s, size_t size);

#endif
