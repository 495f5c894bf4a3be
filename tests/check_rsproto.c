/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rsocket wire protocol without verbs: immediate data, the private
 * data of REQ and REP (against bytes seen on the wire, spec §2.1), SGEs,
 * and the sender's and receiver's accounting: credits, control slots,
 * chunk sizes, the target ring and the half-ring advertisements.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream/rdma/rsproto.h"

/* spec §2.1: a REQ (128 KiB ring, 384 credits) and rstream's REP (1 MiB) */
static const uint8_t req_bytes[40] = {
	0x01, 0x02, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x55, 0x95, 0x95, 0xff, 0xe0, 0x00,
	0x00, 0x00, 0x03, 0xa3,
	0x00, 0x00, 0x00, 0x02,
	0x00, 0x00, 0x7f, 0x7d, 0x70, 0x41, 0x30, 0x00,
	0x00, 0x00, 0x04, 0xf4,
	0x00, 0x01, 0x00, 0x00,
};

static const uint8_t rep_bytes[40] = {
	0x01, 0x02, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x7f, 0x3a, 0xd8, 0x00, 0x30, 0x00,
	0x00, 0x00, 0x06, 0x43,
	0x00, 0x00, 0x00, 0x02,
	0x00, 0x00, 0x7f, 0x3a, 0xdf, 0x38, 0xd0, 0x00,
	0x00, 0x00, 0x07, 0xbd,
	0x00, 0x08, 0x00, 0x00,
};

/* ---- immediate data ---- */

START_TEST(test_imm_values)
{
	/* the immediates seen on the wire (spec §3.1, §10.1) */
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_DATA, 16), 0x00000010);
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_SGL, 384), 0x80000180);
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_SGL, 623), 0x8000026f);
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_CTRL, EVR_RS_CTRL_DISCONNECT),
			  0xe0000000);
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_CTRL, EVR_RS_CTRL_SHUTDOWN),
			  0xe0000002);
	ck_assert_uint_eq(evr__rs_msg_op(0xe0000002), EVR_RS_OP_CTRL);
	ck_assert_uint_eq(evr__rs_msg_data(0xe0000002), 2);
	ck_assert_uint_eq(evr__rs_msg_op(0x80000180), EVR_RS_OP_SGL);
	ck_assert_uint_eq(evr__rs_msg_data(0x80000180), 384);
	/* data is 29 bits: anything above is cut, never leaks into op */
	ck_assert_uint_eq(evr__rs_msg(EVR_RS_OP_DATA, 0xffffffff),
			  0x1fffffff);
}
END_TEST

START_TEST(test_imm_big_endian)
{
	uint32_t imm = evr__rs_imm_encode(0x80000180);
	uint8_t b[4];

	/* verbs carries imm_data as is: it must already be in wire order */
	memcpy(b, &imm, 4);
	ck_assert_uint_eq(b[0], 0x80);
	ck_assert_uint_eq(b[1], 0x00);
	ck_assert_uint_eq(b[2], 0x01);
	ck_assert_uint_eq(b[3], 0x80);
	ck_assert_uint_eq(evr__rs_imm_decode(imm), 0x80000180);
	imm = evr__rs_imm_encode(0x00000010);
	memcpy(b, &imm, 4);
	ck_assert_uint_eq(b[0], 0);
	ck_assert_uint_eq(b[3], 0x10);
}
END_TEST

/* ---- private data ---- */

START_TEST(test_conn_data_req_bytes)
{
	struct evr_rs_conn_data cd;
	uint8_t out[40];

	memset(&cd, 0, sizeof(cd));
	cd.version = 1;
	cd.flags = EVR_RS_FLAG_IOMAP;
	cd.credits = 384;
	cd.target_sgl.addr = 0x559595ffe000ull;
	cd.target_sgl.key = 0x3a3;
	cd.target_sgl.length = 2;
	cd.data_buf.addr = 0x7f7d70413000ull;
	cd.data_buf.key = 0x4f4;
	cd.data_buf.length = 65536;
	evr__rs_conn_data_encode(out, &cd);
	ck_assert_int_eq(memcmp(out, req_bytes, 40), 0);
}
END_TEST

START_TEST(test_conn_data_rep_decode)
{
	struct evr_rs_conn_data cd;

	ck_assert_int_eq(evr__rs_conn_data_decode(rep_bytes, 40, &cd), 0);
	ck_assert_uint_eq(cd.version, 1);
	ck_assert_uint_eq(cd.flags, 0x02);
	ck_assert_uint_eq(cd.credits, 384);
	ck_assert_uint_eq(cd.iomap_size, 0);
	ck_assert_uint_eq(cd.target_sgl.addr, 0x7f3ad8003000ull);
	ck_assert_uint_eq(cd.target_sgl.key, 0x643);
	ck_assert_uint_eq(cd.target_sgl.length, 2);
	ck_assert_uint_eq(cd.data_buf.addr, 0x7f3adf38d000ull);
	ck_assert_uint_eq(cd.data_buf.key, 0x7bd);
	/* rstream's 512 KiB SO_RCVBUF, doubled, advertised in halves */
	ck_assert_uint_eq(cd.data_buf.length, 524288);
}
END_TEST

START_TEST(test_conn_data_round_trip)
{
	struct evr_rs_conn_data a, b;
	uint8_t out[40];

	evr__rs_conn_data_init(&a, 384, 0x1122334455667788ull, 0xaabbccdd,
			       0x0102030405060708ull, 0x99887766, 1 << 20);
	ck_assert_uint_eq(a.version, 1);
	ck_assert_uint_eq(a.flags & EVR_RS_FLAG_IOMAP, EVR_RS_FLAG_IOMAP);
	ck_assert_uint_eq(!!(a.flags & EVR_RS_FLAG_NET),
			  evr__rs_host_big_endian());
	ck_assert_uint_eq(a.target_sgl.length, EVR_RS_SGL_SIZE);
	ck_assert_uint_eq(a.data_buf.length, 1 << 19);
	ck_assert_uint_eq(a.iomap_size, 0);
	evr__rs_conn_data_encode(out, &a);
	ck_assert_uint_eq(out[4] | out[5] | out[6], 0); /* reserved */
	ck_assert_int_eq(evr__rs_conn_data_decode(out, 40, &b), 0);
	ck_assert_int_eq(memcmp(&a.target_sgl, &b.target_sgl,
				sizeof(a.target_sgl)), 0);
	ck_assert_int_eq(memcmp(&a.data_buf, &b.data_buf,
				sizeof(a.data_buf)), 0);
	ck_assert_uint_eq(b.credits, 384);
}
END_TEST

START_TEST(test_conn_data_lengths)
{
	struct evr_rs_conn_data cd;
	uint8_t buf[196];

	/* the kernel reports 56 for a REQ and 196 for a REP on RoCE, the
	 * rest zero: >= 40 is what counts */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, req_bytes, 40);
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 56, &cd), 0);
	ck_assert_uint_eq(cd.credits, 384);
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 196, &cd), 0);
	ck_assert_uint_eq(cd.data_buf.length, 65536);
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), 0);
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 39, &cd), -EMSGSIZE);
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 0, &cd), -EMSGSIZE);
	ck_assert_int_eq(evr__rs_conn_data_decode(NULL, 56, &cd), -EMSGSIZE);
}
END_TEST

START_TEST(test_conn_data_version)
{
	struct evr_rs_conn_data cd;
	uint8_t buf[56];

	memset(buf, 0, sizeof(buf));
	/* a peer that sent no private data: zeros, version 0 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 56, &cd),
			 -EPROTONOSUPPORT);
	memcpy(buf, req_bytes, 40);
	buf[0] = 2;
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 56, &cd),
			 -EPROTONOSUPPORT);
	buf[0] = 1;
	buf[1] = 0x01;  /* flags are not validated */
	buf[7] = 0x20;
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 56, &cd), 0);
	ck_assert_uint_eq(cd.flags, 0x01);
	buf[23] = 1;    /* one target entry: our updates go to entry 1 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 56, &cd), -EPROTO);
}
END_TEST

/* The peer's target SGL and ring half are bounded before anything uses
 * them: the entries number our writes into its SGL, the half bounds our
 * chunks and is reported doubled. */
START_TEST(test_conn_data_bounds)
{
	struct evr_rs_conn_data cd;
	uint8_t buf[40];

	memcpy(buf, req_bytes, 40);
	buf[20] = 0; buf[21] = 0; buf[22] = 1; buf[23] = 0;     /* 256 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), 0);
	ck_assert_uint_eq(cd.target_sgl.length, EVR_RS_SGL_MAX);
	buf[23] = 1;                                            /* 257 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), -EPROTO);
	buf[20] = 0xff; buf[21] = 0xff; buf[22] = 0xff; buf[23] = 0xff;
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), -EPROTO);

	memcpy(buf, req_bytes, 40);
	memset(buf + 36, 0, 4);                                 /* 0 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), -EPROTO);
	buf[36] = 0x40;                                         /* 1 GiB */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), 0);
	ck_assert_uint_eq(cd.data_buf.length, EVR_RS_RBUF_HALF_MAX);
	buf[39] = 1;                                            /* + 1 */
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), -EPROTO);
	buf[36] = 0xff;
	ck_assert_int_eq(evr__rs_conn_data_decode(buf, 40, &cd), -EPROTO);
}
END_TEST

/* ---- SGEs ---- */

START_TEST(test_sge_order)
{
	struct evr_rs_sge s = { 0x0102030405060708ull, 0x11223344, 0x00080000 },
			  r;
	uint8_t b[16], w[16];

	/* addr, key, length, in the reader's order */
	evr__rs_sge_encode(b, &s, 0);
	ck_assert_int_eq(memcmp(b, &s.addr, 8), 0);
	ck_assert_int_eq(memcmp(b + 8, &s.key, 4), 0);
	ck_assert_int_eq(memcmp(b + 12, &s.length, 4), 0);
	evr__rs_sge_decode(b, &r);
	ck_assert_uint_eq(r.addr, s.addr);
	ck_assert_uint_eq(r.key, s.key);
	ck_assert_uint_eq(r.length, s.length);
	/* a reader of the other order gets each field byte-swapped */
	evr__rs_sge_encode(w, &s, 1);
	ck_assert_uint_eq(w[0], b[7]);
	ck_assert_uint_eq(w[7], b[0]);
	ck_assert_uint_eq(w[8], b[11]);
	ck_assert_uint_eq(w[12], b[15]);
	if (!evr__rs_host_big_endian()) {
		ck_assert_uint_eq(b[0], 0x08); /* x86 peers: little-endian */
		ck_assert_uint_eq(w[0], 0x01);
	}
}
END_TEST

/* ---- the sending side ---- */

static struct evr_rs_conn_data peer_cd(uint16_t credits, uint32_t half)
{
	struct evr_rs_conn_data cd;

	evr__rs_conn_data_init(&cd, credits, 0x5000, 0x51, 0x100000, 0x77,
			       2 * half);
	return cd;
}

START_TEST(test_tx_init)
{
	struct evr_rs_conn_data cd = peer_cd(384, 524288);
	struct evr_rs_tx tx;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	ck_assert_uint_eq(tx.sseq_comp, 384);
	ck_assert_uint_eq(tx.sseq_no, 0);
	ck_assert_uint_eq(tx.target[0].addr, 0x100000);
	ck_assert_uint_eq(tx.target[0].key, 0x77);
	ck_assert_uint_eq(tx.target[0].length, 524288);
	ck_assert_uint_eq(tx.target[1].length, 0); /* not yet advertised */
	ck_assert_uint_eq(tx.target_next, 1);
	ck_assert(evr__rs_tx_can_send(&tx));
	ck_assert(evr__rs_tx_ctrl_avail(&tx));
}
END_TEST

START_TEST(test_tx_ctrl_slots)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;
	int i;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	for (i = 0; i < EVR_RS_CTRL_SIZE; i++) {
		ck_assert(evr__rs_tx_ctrl_avail(&tx));
		evr__rs_tx_ctrl_post(&tx);
	}
	ck_assert(!evr__rs_tx_ctrl_avail(&tx)); /* at most 4 in flight */
	evr__rs_tx_ctrl_done(&tx);
	ck_assert(evr__rs_tx_ctrl_avail(&tx));
	/* the counters wrap as 16-bit values, as upstream's */
	tx.ctrl_seqno = 0xfffe;
	tx.ctrl_max = 0xfffe;
	ck_assert(!evr__rs_tx_ctrl_avail(&tx));
	evr__rs_tx_ctrl_done(&tx);
	evr__rs_tx_ctrl_done(&tx);
	evr__rs_tx_ctrl_done(&tx);
	ck_assert_uint_eq(tx.ctrl_max, 1);
	for (i = 0; i < 3; i++)
		evr__rs_tx_ctrl_post(&tx);
	ck_assert(!evr__rs_tx_ctrl_avail(&tx));
}
END_TEST

START_TEST(test_tx_credits)
{
	struct evr_rs_conn_data cd = peer_cd(16, 65536);
	struct evr_rs_tx tx;
	uint64_t a;
	uint32_t k, x;
	int i;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	for (i = 0; i < 16; i++) {
		evr__rs_tx_begin(&tx);
		x = evr__rs_tx_chunk(&tx, 64);
		ck_assert_uint_eq(x, 64);
		evr__rs_tx_commit(&tx, x, &a, &k);
	}
	/* sseq_no == sseq_comp: never one more (the peer's rmsg ring would
	 * silently lose whole messages) */
	ck_assert(!evr__rs_tx_can_send(&tx));
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 64), 0);
	/* a credits-only SGL: the limit is absolute, not an increment */
	evr__rs_tx_sgl(&tx, 16 + 16, NULL);
	ck_assert(evr__rs_tx_can_send(&tx));
	ck_assert_uint_eq(tx.target[1].length, 0);
	/* the limit arrives unreduced (rseq_no + rq_size may pass 65535) */
	tx.sseq_no = 0xfff0;
	evr__rs_tx_sgl(&tx, 0x1fff0, NULL);
	ck_assert_uint_eq(tx.sseq_comp, 0xfff0);
	ck_assert(!evr__rs_tx_can_send(&tx));
	evr__rs_tx_sgl(&tx, 0x10005, NULL);
	ck_assert(evr__rs_tx_can_send(&tx));
	for (i = 0; i < 21; i++) {
		evr__rs_tx_begin(&tx);
		x = evr__rs_tx_chunk(&tx, 1);
		ck_assert_uint_eq(x, 1);
		evr__rs_tx_commit(&tx, x, &a, &k);
		evr__rs_tx_data_done(&tx, 1);
	}
	ck_assert_uint_eq(tx.sseq_no, 5);
	ck_assert(!evr__rs_tx_can_send(&tx));
}
END_TEST

START_TEST(test_tx_resources)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;
	uint64_t a;
	uint32_t k;

	/* no send queue entry left */
	evr__rs_tx_init(&tx, 1, 1 << 20, &cd);
	evr__rs_tx_commit(&tx, evr__rs_tx_chunk(&tx, 10), &a, &k);
	ck_assert(!evr__rs_tx_can_send(&tx));
	evr__rs_tx_data_done(&tx, 10);
	ck_assert(evr__rs_tx_can_send(&tx));
	/* staging space below the low-water mark */
	evr__rs_tx_init(&tx, 380, 8192, &cd);
	evr__rs_tx_begin(&tx);
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 6200), 2048);
	evr__rs_tx_commit(&tx, 2048, &a, &k);
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 4152), 4096);
	evr__rs_tx_commit(&tx, 4096, &a, &k);
	ck_assert_uint_eq(tx.sbuf_avail, 2048);
	ck_assert(evr__rs_tx_can_send(&tx));
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 8), 8);
	evr__rs_tx_commit(&tx, 8, &a, &k);
	ck_assert(!evr__rs_tx_can_send(&tx)); /* 2040 < 2048 */
	evr__rs_tx_data_done(&tx, 2048);
	ck_assert(evr__rs_tx_can_send(&tx));
	/* chunks are capped by what is free in the staging ring */
	evr__rs_tx_begin(&tx);
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 10000), 2048);
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 10000), 4088);
}
END_TEST

/* One 300000-byte send after a 16-byte sync into 64 KiB halves: the write
 * sizes upstream produced on the wire (spec §3.3, [11]), the receiver
 * re-advertising each half as the sender moves to the other. */
START_TEST(test_tx_chunk_sequence)
{
	static const uint32_t want[] = { 2048, 4096, 8192, 16384, 32768, 2032,
					 65536, 65536, 65536, 37872 };
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_sge half1 = { 0x110000, 0x77, 65536 };
	struct evr_rs_sge half0 = { 0x100000, 0x77, 65536 };
	struct evr_rs_tx tx;
	size_t left = 300000;
	uint64_t a, expect_addr;
	uint32_t k, x;
	unsigned i = 0, adv = 0;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	evr__rs_tx_begin(&tx);
	x = evr__rs_tx_chunk(&tx, 16);
	ck_assert_uint_eq(x, 16);
	evr__rs_tx_commit(&tx, x, &a, &k);
	ck_assert_uint_eq(a, 0x100000);
	evr__rs_tx_sgl(&tx, 384, &half1);  /* the peer's first SGL */
	evr__rs_tx_data_done(&tx, 16);
	expect_addr = 0x100000 + 16;
	evr__rs_tx_begin(&tx);
	while (left) {
		x = evr__rs_tx_chunk(&tx, left);
		if (!x) {
			/* the current entry is used up: the peer hands the
			 * other half back, alternating entries 0, 1, ... */
			ck_assert_uint_eq(tx.target[tx.target_cur].length, 0);
			evr__rs_tx_sgl(&tx, 384 + ++adv,
				       tx.target_next ? &half1 : &half0);
			continue;
		}
		ck_assert_uint_lt(i, sizeof(want) / sizeof(want[0]));
		ck_assert_uint_eq(x, want[i]);
		evr__rs_tx_commit(&tx, x, &a, &k);
		/* bytes go exactly where the ring order puts them */
		ck_assert_uint_eq(a, expect_addr);
		ck_assert_uint_eq(k, 0x77);
		expect_addr = a + x;
		if (expect_addr == 0x120000)
			expect_addr = 0x100000;
		evr__rs_tx_data_done(&tx, x);
		left -= x;
		i++;
	}
	ck_assert_uint_eq(i, sizeof(want) / sizeof(want[0]));
	/* the next send call starts at 2048 again */
	evr__rs_tx_begin(&tx);
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 100000), 2048);
}
END_TEST

START_TEST(test_tx_entry_discipline)
{
	struct evr_rs_conn_data cd = peer_cd(384, 4096);
	struct evr_rs_sge e1 = { 0x200000, 0x88, 4096 };
	struct evr_rs_tx tx;
	uint64_t a;
	uint32_t k, x;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	/* the SGE for entry 1 is there early: entry 0 is still used up
	 * first, and a write never spans the two */
	evr__rs_tx_sgl(&tx, 384, &e1);
	evr__rs_tx_begin(&tx);
	x = evr__rs_tx_chunk(&tx, 1000);
	ck_assert_uint_eq(x, 1000);
	evr__rs_tx_commit(&tx, x, &a, &k);
	ck_assert_uint_eq(a, 0x100000);
	x = evr__rs_tx_chunk(&tx, 5000);
	ck_assert_uint_eq(x, 2048);
	evr__rs_tx_commit(&tx, x, &a, &k);
	ck_assert_uint_eq(a, 0x100000 + 1000);
	x = evr__rs_tx_chunk(&tx, 2952);
	ck_assert_uint_eq(x, 1048);     /* the rest of entry 0, no more */
	evr__rs_tx_commit(&tx, x, &a, &k);
	ck_assert_uint_eq(a, 0x100000 + 3048);
	ck_assert_uint_eq(tx.target_cur, 1);
	ck_assert_uint_eq(tx.target[0].length, 0);
	x = evr__rs_tx_chunk(&tx, 1904);
	ck_assert_uint_eq(x, 1904);
	evr__rs_tx_commit(&tx, x, &a, &k);
	ck_assert_uint_eq(a, 0x200000);
	ck_assert_uint_eq(k, 0x88);
	ck_assert_uint_eq(tx.target[1].addr, 0x200000 + 1904);
	ck_assert_uint_eq(tx.target[1].length, 4096 - 1904);
}
END_TEST

START_TEST(test_tx_stage_wrap)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;
	uint32_t off, l1;

	evr__rs_tx_init(&tx, 380, 8192, &cd);
	evr__rs_tx_stage(&tx, 6000, &off, &l1);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(l1, 6000);
	evr__rs_tx_stage(&tx, 3000, &off, &l1);
	ck_assert_uint_eq(off, 6000);
	ck_assert_uint_eq(l1, 2192); /* then 808 from offset 0 */
	ck_assert_uint_eq(tx.sbuf_head, 808);
	evr__rs_tx_stage(&tx, 7384, &off, &l1);
	ck_assert_uint_eq(off, 808);
	ck_assert_uint_eq(l1, 7384);
	ck_assert_uint_eq(tx.sbuf_head, 0);
}
END_TEST

/* ---- the receiving side ---- */

#define RQ 384
#define RING (1u << 20)
#define RBUF 0x7f0000000000ull

static uint32_t msgbuf[RQ + 17];

static void rx_setup(struct evr_rs_rx *rx)
{
	evr__rs_rx_init(rx, RING, RQ, 2, msgbuf, RQ + 17);
}

/* push n messages of len bytes and consume them all */
static void rx_flow(struct evr_rs_rx *rx, unsigned n, uint32_t len)
{
	uint32_t off, got;
	unsigned i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(evr__rs_rx_push(rx, len), 0);
		got = evr__rs_rx_peek(rx, &off);
		ck_assert_uint_eq(got, len);
		evr__rs_rx_consume(rx, got);
	}
}

START_TEST(test_rx_first_update)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry = 9;
	uint32_t limit;

	rx_setup(&rx);
	ck_assert_uint_eq(rx.rseq_comp, RQ / 2);
	/* right after connect the second half is free and not advertised:
	 * the first SGL carries it, into the peer's entry 1 */
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_SGE);
	limit = evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42, &sge,
				  &entry);
	ck_assert_uint_eq(limit, RQ);   /* imm 0x80000180 */
	ck_assert_uint_eq(entry, 1);
	ck_assert_uint_eq(sge.addr, RBUF + RING / 2);
	ck_assert_uint_eq(sge.key, 0x42);
	ck_assert_uint_eq(sge.length, RING / 2);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
}
END_TEST

/* The transport's gate: no SGL before the peer has written a quarter of
 * the ring, credits meanwhile when due, the SGL as usual after. */
START_TEST(test_rx_first_sgl_gated)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry;

	rx_setup(&rx);
	/* right after connect: due ungated, held back gated */
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_SGE);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_NONE);
	/* many small messages before a quarter: credits still go back */
	rx_flow(&rx, RQ / 2 - 1, 64);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 1, 64);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_CREDITS);
	evr__rs_rx_update(&rx, EVR_RS_UPD_CREDITS, RBUF, 0x42, &sge, &entry);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_NONE);
	/* one byte short of a quarter of the ring, then a quarter */
	rx_flow(&rx, 1, RING / 4 - RQ / 2 * 64 - 1);
	ck_assert_uint_eq(rx.bytes_in, RING / 4 - 1);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_SGE);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 1, 1);
	ck_assert_int_eq(evr__rs_rx_update_gated(&rx), EVR_RS_UPD_SGE);
}
END_TEST

START_TEST(test_rx_half_readvertised)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry;

	rx_setup(&rx);
	evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42, &sge, &entry);
	/* a half is given back only once a half's worth is consumed */
	rx_flow(&rx, 7, 65536);
	ck_assert_uint_eq(rx.bytes_avail, 7 * 65536);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 1, 65535);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 1, 1);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_SGE);
	ck_assert_uint_eq(evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42,
					    &sge, &entry), 9 + RQ);
	ck_assert_uint_eq(entry, 0);    /* 1, 0, 1, 0, ... */
	ck_assert_uint_eq(sge.addr, RBUF);
	ck_assert_uint_eq(sge.length, RING / 2);
	ck_assert_uint_eq(rx.bytes_avail, 0);
	rx_flow(&rx, 8, 65536);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_SGE);
	evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42, &sge, &entry);
	ck_assert_uint_eq(entry, 1);
	ck_assert_uint_eq(sge.addr, RBUF + RING / 2);
	/* the read cursor went round the ring */
	ck_assert_uint_eq(rx.offset, 0);
}
END_TEST

START_TEST(test_rx_credits_only)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry;
	uint32_t limit;

	rx_setup(&rx);
	evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42, &sge, &entry);
	/* small messages: the ring is far from a half, but after rq/2
	 * messages the credits go back in a 0-byte SGL */
	rx_flow(&rx, RQ / 2 - 1, 64);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 1, 64);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_CREDITS);
	entry = 7;
	limit = evr__rs_rx_update(&rx, EVR_RS_UPD_CREDITS, RBUF, 0x42, &sge,
				  &entry);
	ck_assert_uint_eq(limit, RQ / 2 + RQ);
	ck_assert_uint_eq(entry, 7);    /* untouched: no SGE */
	ck_assert_uint_eq(rx.remote_sge, 0);
	ck_assert_uint_eq(rx.rseq_comp, RQ / 2 + RQ / 2);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, 47, 64);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, RQ / 2 - 47, 64);
	ck_assert_uint_eq(evr__rs_rx_update(&rx, EVR_RS_UPD_CREDITS, RBUF, 0x42,
					    &sge, &entry), RQ + RQ);
}
END_TEST

START_TEST(test_rx_partial_consume)
{
	struct evr_rs_rx rx;
	uint32_t off;

	rx_setup(&rx);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 100), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 50), 0);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 100);
	ck_assert_uint_eq(off, 0);
	evr__rs_rx_consume(&rx, 30);
	/* a message is credited only once wholly consumed */
	ck_assert_uint_eq(rx.rseq_no, 0);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 70);
	ck_assert_uint_eq(off, 30);
	evr__rs_rx_consume(&rx, 70);
	ck_assert_uint_eq(rx.rseq_no, 1);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 50);
	ck_assert_uint_eq(off, 100);
	evr__rs_rx_consume(&rx, 50);
	ck_assert_uint_eq(rx.rseq_no, 2);
	ck_assert_uint_eq(rx.bytes_avail, RING / 2 + 150);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 0);
}
END_TEST

START_TEST(test_rx_overflow)
{
	struct evr_rs_rx rx;
	uint32_t small[4];
	uint32_t off;

	evr__rs_rx_init(&rx, RING, 16, 2, small, 4);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 1), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 2), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 3), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 4), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 5), -ENOBUFS);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 1);
	evr__rs_rx_consume(&rx, 1);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 5), 0);
	/* FIFO across the wrap */
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 2);
	evr__rs_rx_consume(&rx, 2);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 3);
	evr__rs_rx_consume(&rx, 3);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 4);
	evr__rs_rx_consume(&rx, 4);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 5);
	ck_assert_uint_eq(off, 10);
}
END_TEST

/* A DATA message's length is the peer's word for how many bytes it
 * wrote: never more than the ring space we offered it (a half at first,
 * another with each SGL), or we would read bytes it never wrote. */
START_TEST(test_rx_push_beyond_offer)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry;
	uint32_t off;

	rx_setup(&rx);
	ck_assert_int_eq(evr__rs_rx_push(&rx, RING / 2 + 1), -EMSGSIZE);
	ck_assert_int_eq(evr__rs_rx_push(&rx, EVR_RS_DATA_MASK), -EMSGSIZE);
	ck_assert_uint_eq(rx.msg_count, 0);
	ck_assert_uint_eq(evr__rs_rx_peek(&rx, &off), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, RING / 2 - 1), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 1), 0);
	/* the first half is all written: nothing more until the SGL */
	ck_assert_int_eq(evr__rs_rx_push(&rx, 1), -EMSGSIZE);
	evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 1, &sge, &entry);
	ck_assert_int_eq(evr__rs_rx_push(&rx, RING / 2 + 1), -EMSGSIZE);
	ck_assert_int_eq(evr__rs_rx_push(&rx, RING / 2), 0);
	ck_assert_int_eq(evr__rs_rx_push(&rx, 1), -EMSGSIZE);
	ck_assert_uint_eq(rx.msg_count, 3);
	ck_assert_uint_eq(rx.bytes_in, RING);
}
END_TEST

START_TEST(test_rx_seq_wrap)
{
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned entry;
	uint32_t limit;

	rx_setup(&rx);
	evr__rs_rx_update(&rx, EVR_RS_UPD_SGE, RBUF, 0x42, &sge, &entry);
	rx.rseq_no = 0xffff;
	rx.rseq_comp = (uint16_t)(0xffff + RQ / 2);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_NONE);
	rx_flow(&rx, RQ / 2, 8);
	ck_assert_uint_eq(rx.rseq_no, RQ / 2 - 1);
	ck_assert_int_eq(evr__rs_rx_update_due(&rx), EVR_RS_UPD_CREDITS);
	limit = evr__rs_rx_update(&rx, EVR_RS_UPD_CREDITS, RBUF, 0x42, &sge,
				  &entry);
	ck_assert_uint_eq(limit, RQ / 2 - 1 + RQ);
}
END_TEST

/* Sender and receiver accounting together: a receiver that only ever
 * returns what the rules allow keeps the sender within both its credits
 * and the advertised ring, for any message size. */
START_TEST(test_tx_rx_together)
{
	static uint32_t msgs[16 + 17];
	static const uint32_t sizes[] = { 1, 16, 1000, 4096, 65536, 300000 };
	struct evr_rs_conn_data cd;
	struct evr_rs_tx tx;
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned s, round;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t wpos = 0, rpos = 0; /* stream offsets */
		uint32_t ring = 65536 * 2;

		evr__rs_conn_data_init(&cd, 16, 0x5000, 0x51, 0, 0x77, ring);
		evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
		evr__rs_rx_init(&rx, ring, 16, 2, msgs, 16 + 17);
		for (round = 0; round < 200; round++) {
			size_t left = sizes[s];
			uint32_t x, k, off, n;
			uint64_t a;
			enum evr_rs_update u;
			unsigned entry;

			/* the receiver's update, as at every CQ processing */
			u = evr__rs_rx_update_due(&rx);
			if (u != EVR_RS_UPD_NONE) {
				uint32_t lim = evr__rs_rx_update(&rx, u, 0,
								 0x77, &sge,
								 &entry);

				if (u == EVR_RS_UPD_SGE)
					ck_assert_uint_eq(entry,
							  tx.target_next);
				evr__rs_tx_sgl(&tx, lim, u == EVR_RS_UPD_SGE ?
					       &sge : NULL);
			}
			evr__rs_tx_begin(&tx);
			while (left && (x = evr__rs_tx_chunk(&tx, left))) {
				evr__rs_tx_commit(&tx, x, &a, &k);
				/* ring order: the address is the stream
				 * offset modulo the ring */
				ck_assert_uint_eq(a, wpos % ring);
				ck_assert_int_eq(evr__rs_rx_push(&rx, x), 0);
				evr__rs_tx_data_done(&tx, x);
				wpos += x;
				left -= x;
			}
			/* the writer may never be more than a ring ahead */
			ck_assert_uint_le(wpos - rpos, ring);
			/* the reader takes some of it */
			while ((n = evr__rs_rx_peek(&rx, &off)) &&
			       (round & 1)) {
				ck_assert_uint_eq(off, rpos % ring);
				evr__rs_rx_consume(&rx, n);
				rpos += n;
			}
		}
		ck_assert_uint_gt(wpos, 0);
	}
}
END_TEST

/* Sizes for many connections: full up to 64, then in proportion, never
 * below the floor. */
START_TEST(test_scale)
{
	ck_assert_uint_eq(EVR_RS_SCALE_FULL, 4);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 1), 384);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 4), 384);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 8), 192);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 64), 24);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 10000), 16);
	ck_assert_uint_eq(evr__rs_scale(384, EVR_RS_QP_MIN, 0xffffffffu), 16);
	ck_assert_uint_eq(evr__rs_scale(1 << 20, EVR_RS_RING_MIN, 100),
			  (1 << 20) * 4 / 100);
	ck_assert_uint_eq(evr__rs_scale(1 << 20, EVR_RS_RING_MIN, 10000),
			  EVR_RS_RING_MIN);
	/* a full size under the floor stays as it is */
	ck_assert_uint_eq(evr__rs_scale(2048, EVR_RS_RING_MIN, 10000), 2048);
}
END_TEST

/* ---- the cork ---- */

/* Small sends: two go at once (a ping-pong never has more in flight);
 * with two unacknowledged, the next gather and leave as one write when
 * one completes, at the stream's next address. */
START_TEST(test_tx_cork_small)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;
	uint32_t k, x, off, len1, avail;
	uint64_t a;
	int i;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	for (i = 0; i < EVR_RS_CORK_INFLIGHT; i++) {
		ck_assert(!evr__rs_tx_cork_due(&tx, 64));
		x = evr__rs_tx_chunk(&tx, 64);
		ck_assert_uint_eq(x, 64);
		evr__rs_tx_commit(&tx, x, &a, &k);
		ck_assert_uint_eq(a, 0x100000 + 64 * i);
	}
	ck_assert(evr__rs_tx_cork_due(&tx, 64));
	/* a large send call still goes as its own writes */
	ck_assert(!evr__rs_tx_cork_due(&tx, EVR_RS_CORK_SMALL));
	avail = tx.sbuf_avail;
	for (i = 0; i < 10; i++) {
		ck_assert_uint_eq(evr__rs_tx_cork(&tx, 64, &off, &len1), 64);
		ck_assert_uint_eq(off, 64 * i);
		ck_assert_uint_eq(len1, 64);
		ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0);
	}
	ck_assert_uint_eq(tx.sbuf_avail, avail - 640);
	/* behind the cork, even a large send gathers (order) */
	ck_assert(evr__rs_tx_cork_due(&tx, 100000));
	evr__rs_tx_data_done(&tx, 64);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 640);
	evr__rs_tx_cork_commit(&tx, 640, &a, &k, &off, &len1);
	ck_assert_uint_eq(a, 0x100000 + 128);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len1, 640);
	ck_assert_uint_eq(tx.cork_len, 0);
	ck_assert_uint_eq(tx.sseq_no, 3);
	/* one of the first two has completed; the cork's bytes stay taken
	 * until its write completes */
	ck_assert_uint_eq(tx.sbuf_avail, avail - 640 + 64);
	evr__rs_tx_data_done(&tx, 640);
	ck_assert_uint_eq(tx.sbuf_avail, avail + 64);
	ck_assert(!evr__rs_tx_cork_due(&tx, 64));
}
END_TEST

/* A caller that sends more at once (a stream's transfers): even with
 * nothing in flight the bytes gather, up to a full write, which leaves
 * at once; the last send (more = 0) takes the rest.  A small staging ring
 * sends at half of it, so that the cork never fills it. */
START_TEST(test_tx_cork_more)
{
	struct evr_rs_conn_data cd = peer_cd(384, 1 << 20);
	struct evr_rs_tx tx;
	uint32_t k, off, len1, i;
	uint64_t a;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	tx.more = 1;
	for (i = 0; i < 1024; i++) {
		ck_assert(evr__rs_tx_cork_due(&tx, 64));
		ck_assert_uint_eq(evr__rs_tx_cork(&tx, 64, &off, &len1), 64);
		if (i < 1023)
			ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0);
	}
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), EVR_RS_MAX_TRANSFER);
	evr__rs_tx_cork_commit(&tx, EVR_RS_MAX_TRANSFER, &a, &k, &off, &len1);
	ck_assert_uint_eq(a, 0x100000);
	ck_assert_uint_eq(tx.sseq_no, 1);
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 100, &off, &len1), 100);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0);
	tx.more = 0; /* the last send of the stream */
	evr__rs_tx_data_done(&tx, EVR_RS_MAX_TRANSFER);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 100);
	/* a large send with more goes as its own writes, as upstream's */
	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	tx.more = 1;
	ck_assert(!evr__rs_tx_cork_due(&tx, EVR_RS_MAX_TRANSFER));
	ck_assert(evr__rs_tx_cork_due(&tx, EVR_RS_MAX_TRANSFER - 1));
	/* -B 4096: an 8 KiB staging ring, a write at 4 KiB */
	evr__rs_tx_init(&tx, 380, 8192, &cd);
	tx.more = 1;
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 4095, &off, &len1), 4095);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0);
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 10, &off, &len1), 10);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 4096);
}
END_TEST

/* Out of credits, every size gathers; the cork leaves at a full write
 * (EVR_RS_MAX_TRANSFER) or all the peer's entry takes, whatever is in
 * flight, and never without a credit or an entry. */
START_TEST(test_tx_cork_limits)
{
	struct evr_rs_conn_data cd = peer_cd(4, 100000);
	struct evr_rs_tx tx;
	uint32_t k, off, len1;
	uint64_t a;
	int i;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	for (i = 0; i < 4; i++)
		evr__rs_tx_commit(&tx, evr__rs_tx_chunk(&tx, 8), &a, &k);
	ck_assert(evr__rs_tx_cork_due(&tx, 1 << 20));
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 150000, &off, &len1), 150000);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0); /* no credit */
	evr__rs_tx_sgl(&tx, 8, NULL);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), EVR_RS_MAX_TRANSFER);
	evr__rs_tx_cork_commit(&tx, EVR_RS_MAX_TRANSFER, &a, &k, &off,
			       &len1);
	ck_assert_uint_eq(a, 0x100000 + 32);
	/* 100000 - 32 - 65536 left in the entry: it takes that, no more */
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 100000 - 32 - 65536);
	evr__rs_tx_cork_commit(&tx, 100000 - 32 - 65536, &a, &k, &off,
			       &len1);
	ck_assert_uint_eq(tx.target_cur, 1);
	ck_assert_uint_eq(evr__rs_tx_cork_chunk(&tx), 0); /* no entry yet */
	ck_assert_uint_eq(tx.cork_len, 150000 - 100000 + 32);
	/* the staging ring bounds what gathers */
	evr__rs_tx_init(&tx, 380, 4096, &cd);
	for (i = 0; i < 4; i++)
		evr__rs_tx_commit(&tx, evr__rs_tx_chunk(&tx, 8), &a, &k);
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 5000, &off, &len1), 4096 - 32);
	ck_assert_uint_eq(evr__rs_tx_cork(&tx, 1, &off, &len1), 0);
}
END_TEST

/* A byte-level model of one connection: sends of random sizes, each as
 * r_send makes them (writes of their own, then the cork), the cork's
 * writes, completions in order (a write's bytes are read from the
 * staging ring only when it completes, as the HCA may), credits and
 * ring halves coming back as the reader consumes.  Every byte arrives
 * once, in order, at its ring address, and no staged byte is overwritten
 * before its write completes. */
#define MODEL_Q 64
struct model_wr {
	uint32_t len, off, len1;
	uint64_t raddr;
	int inl;
	uint8_t inl_data[64];
};

static void post_model(struct model_wr *q, unsigned qh, unsigned *qn,
		       uint32_t len, uint64_t raddr, uint32_t off,
		       uint32_t len1, const uint8_t *inl)
{
	struct model_wr *w = &q[(qh + *qn) % MODEL_Q];

	ck_assert_uint_lt(*qn, MODEL_Q);
	w->len = len;
	w->raddr = raddr;
	w->off = off;
	w->len1 = len1;
	w->inl = inl != NULL;
	if (inl)
		memcpy(w->inl_data, inl, len);
	(*qn)++;
}

START_TEST(test_tx_cork_stream)
{
	enum { M_SBUF = 8192, M_RING = 8192, M_RQ = 16, M_MAXQ = MODEL_Q, M_INL = 64 };
	static uint8_t sbuf[M_SBUF], ring[M_RING], src[4096];
	static uint32_t msgs[M_RQ + 1];
	static struct model_wr q[M_MAXQ];
	struct evr_rs_conn_data cd;
	struct evr_rs_tx tx;
	struct evr_rs_rx rx;
	struct evr_rs_sge sge;
	unsigned qh = 0, qn = 0, step, corked = 0, writes = 0, bad = 0;
	uint64_t sent = 0, got = 0, rnd = 12345, a;
	uint32_t k, x, off, len1, n;

	evr__rs_conn_data_init(&cd, M_RQ, 0x5000, 0x51, 0, 0x77, M_RING);
	evr__rs_tx_init(&tx, M_MAXQ, M_SBUF, &cd);
	evr__rs_rx_init(&rx, M_RING, M_RQ, 2, msgs, M_RQ + 1);
#define RND() (rnd = rnd * 6364136223846793005ull + 1442695040888963407ull, \
	       (uint32_t)(rnd >> 33))
	for (step = 0; step < 200000 && (step < 150000 || qn || tx.cork_len ||
					 got < sent); step++) {
		uint32_t r = RND() % 8;

		if (r < 3 && step < 150000) {
			/* the application sends 1..3000 bytes */
			size_t len = 1 + RND() % (r ? 64 : 3000), done = 0;
			uint32_t i;

			for (i = 0; i < len; i++)
				src[i] = (uint8_t)(sent + i);
			/* three sends in four say more follows */
			tx.more = RND() % 4 != 0;
			evr__rs_tx_begin(&tx);
			while (done < len &&
			       !evr__rs_tx_cork_due(&tx, len - done) &&
			       (x = evr__rs_tx_chunk(&tx, len - done))) {
				evr__rs_tx_commit(&tx, x, &a, &k);
				if (x <= M_INL) {
					post_model(q, qh, &qn, x, a, 0, 0, src + done);
					writes++;
				} else {
					evr__rs_tx_stage(&tx, x, &off, &len1);
					memcpy(sbuf + off, src + done, len1);
					if (len1 < x)
						memcpy(sbuf, src + done + len1,
						       x - len1);
					post_model(q, qh, &qn, x, a, off, len1, NULL);
					writes++;
				}
				done += x;
			}
			if (done < len &&
			    (x = evr__rs_tx_cork(&tx, len - done, &off,
						 &len1))) {
				memcpy(sbuf + off, src + done, len1);
				if (len1 < x)
					memcpy(sbuf, src + done + len1,
					       x - len1);
				done += x;
				corked += x;
			}
			sent += done;
		} else if (r < 5 && qn) {
			/* the oldest write completes: its bytes are read now */
			struct model_wr *w = &q[qh];
			uint32_t i;

			ck_assert_uint_le(w->raddr + w->len, M_RING);
			for (i = 0; i < w->len; i++)
				ring[w->raddr + i] = w->inl ? w->inl_data[i] :
					sbuf[(w->off + i) % M_SBUF];
			ck_assert_int_eq(evr__rs_rx_push(&rx, w->len), 0);
			evr__rs_tx_data_done(&tx, w->len);
			qh = (qh + 1) % M_MAXQ;
			qn--;
		} else if (r < 7) {
			/* the reader takes some; updates go back */
			uint32_t want = 1 + RND() % 5000, i;
			enum evr_rs_update u;
			unsigned entry;

			while (want && (n = evr__rs_rx_peek(&rx, &off))) {
				if (n > want)
					n = want;
				for (i = 0; i < n; i++)
					bad += ring[off + i] !=
					       (uint8_t)(got + i);
				evr__rs_rx_consume(&rx, n);
				got += n;
				want -= n;
			}
			u = evr__rs_rx_update_due(&rx);
			if (u != EVR_RS_UPD_NONE) {
				uint32_t lim = evr__rs_rx_update(&rx, u, 0,
								 0x77, &sge,
								 &entry);
				evr__rs_tx_sgl(&tx, lim, u == EVR_RS_UPD_SGE ?
					       &sge : NULL);
			}
		}
		if (step >= 150000)
			tx.more = 0; /* the last send, or a receive */
		/* the cork's writes, as every pass over the CQ makes them */
		while ((x = evr__rs_tx_cork_chunk(&tx))) {
			evr__rs_tx_cork_commit(&tx, x, &a, &k, &off, &len1);
			/* a write that wraps takes the ring's end first */
			if (len1 < x && off + len1 != M_SBUF)
				bad++;
			post_model(q, qh, &qn, x, a, off, len1, NULL);
			writes++;
		}
	}
#undef RND
	ck_assert_uint_eq(bad, 0);
	ck_assert_uint_gt(sent, 1000000);
	ck_assert_uint_eq(got, sent);
	ck_assert_uint_eq(tx.cork_len, 0);
	ck_assert_uint_eq(tx.sbuf_avail, M_SBUF);
	/* it did gather, and into fewer writes than sends */
	ck_assert_uint_gt(corked, sent / 4);
	ck_assert_uint_lt(writes, step / 2);
}
END_TEST

/* ---- the iWARP dialect ---- */

/* A transfer takes two send queue entries (the write and the send); the
 * cork's "in flight" still counts writes. */
START_TEST(test_msg_tx_sqes)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;
	uint64_t raddr;
	uint32_t rkey;

	evr__rs_tx_init(&tx, 5, 1 << 20, &cd);
	evr__rs_tx_msg_send(&tx);
	ck_assert(evr__rs_tx_can_write(&tx));
	evr__rs_tx_commit(&tx, 64, &raddr, &rkey);
	ck_assert_uint_eq(tx.sqe_avail, 3);
	ck_assert_uint_eq(evr__rs_tx_in_flight(&tx), 1);
	evr__rs_tx_commit(&tx, 64, &raddr, &rkey);
	ck_assert_uint_eq(tx.sqe_avail, 1);
	ck_assert_uint_eq(evr__rs_tx_in_flight(&tx), 2);
	/* one entry left is not a transfer */
	ck_assert(!evr__rs_tx_can_write(&tx));
	ck_assert_uint_eq(evr__rs_tx_chunk(&tx, 64), 0);
	/* the send's completion gives back both */
	evr__rs_tx_data_done(&tx, 64);
	ck_assert_uint_eq(tx.sqe_avail, 3);
	ck_assert(evr__rs_tx_can_write(&tx));
	ck_assert_uint_eq(tx.sbuf_avail, (1u << 20) - 64);
}
END_TEST

/* An SGE update takes two control slots: it waits for two free. */
START_TEST(test_msg_ctrl_room)
{
	struct evr_rs_conn_data cd = peer_cd(384, 65536);
	struct evr_rs_tx tx;

	evr__rs_tx_init(&tx, 380, 1 << 20, &cd);
	ck_assert(evr__rs_tx_ctrl_room(&tx, 2));
	evr__rs_tx_ctrl_post(&tx);
	evr__rs_tx_ctrl_post(&tx);
	evr__rs_tx_ctrl_post(&tx);
	ck_assert(!evr__rs_tx_ctrl_room(&tx, 2));
	ck_assert(evr__rs_tx_ctrl_room(&tx, 1));
	evr__rs_tx_ctrl_done(&tx);
	ck_assert(evr__rs_tx_ctrl_room(&tx, 2));
	/* across the 16-bit wrap */
	tx.ctrl_seqno = 0xffff;
	tx.ctrl_max = 0x0002;
	ck_assert(evr__rs_tx_ctrl_room(&tx, 3));
	ck_assert(!evr__rs_tx_ctrl_room(&tx, 4));
}
END_TEST

/* The message is 4 bytes in the sender's order; anything else is the
 * peer's error. */
START_TEST(test_msg_recv)
{
	uint32_t m = evr__rs_msg(EVR_RS_OP_SGL, 384), got = 1;
	uint8_t b[8];

	memcpy(b, &m, 4);
	ck_assert_int_eq(evr__rs_msg_recv(b, 4, 0, &got), 0);
	ck_assert_uint_eq(got, m);
	ck_assert_uint_eq(evr__rs_msg_op(got), EVR_RS_OP_SGL);
	ck_assert_uint_eq(evr__rs_msg_data(got), 384);
	ck_assert_int_eq(evr__rs_msg_recv(b, 4, 1, &got), 0);
	ck_assert_uint_eq(got, __builtin_bswap32(m));
	ck_assert_int_eq(evr__rs_msg_recv(b, 3, 0, &got), -EPROTO);
	ck_assert_int_eq(evr__rs_msg_recv(b, 5, 0, &got), -EPROTO);
	ck_assert_int_eq(evr__rs_msg_recv(b, 0, 0, &got), -EPROTO);
	ck_assert_int_eq(evr__rs_msg_recv(NULL, 4, 0, &got), -EPROTO);
	ck_assert_uint_eq(got, 0);
}
END_TEST

/* The target SGL's entry: taken once, then cleared; a length no ring
 * half can have is refused. */
START_TEST(test_msg_sgl_take)
{
	struct evr_rs_sge in = { 0x7000, 0x42, 65536 }, out;
	uint8_t e[EVR_RS_SGE_LEN] = { 0 };

	ck_assert_int_eq(evr__rs_sgl_take(e, &out), 0);
	evr__rs_sge_encode(e, &in, 0);
	ck_assert_int_eq(evr__rs_sgl_take(e, &out), 1);
	ck_assert_uint_eq(out.addr, 0x7000);
	ck_assert_uint_eq(out.key, 0x42);
	ck_assert_uint_eq(out.length, 65536);
	/* a credits-only message after it finds none */
	ck_assert_int_eq(evr__rs_sgl_take(e, &out), 0);
	in.length = EVR_RS_RBUF_HALF_MAX + 1u;
	evr__rs_sge_encode(e, &in, 0);
	ck_assert_int_eq(evr__rs_sgl_take(e, &out), -EPROTO);
	in.length = EVR_RS_RBUF_HALF_MAX;
	evr__rs_sge_encode(e, &in, 0);
	ck_assert_int_eq(evr__rs_sgl_take(e, &out), 1);
}
END_TEST

static Suite *rsproto_suite(void)
{
	Suite *s = suite_create("rsproto");
	TCase *tc;

	tc = tcase_create("imm");
	tcase_add_test(tc, test_imm_values);
	tcase_add_test(tc, test_imm_big_endian);
	suite_add_tcase(s, tc);

	tc = tcase_create("conn_data");
	tcase_add_test(tc, test_conn_data_req_bytes);
	tcase_add_test(tc, test_conn_data_rep_decode);
	tcase_add_test(tc, test_conn_data_round_trip);
	tcase_add_test(tc, test_conn_data_lengths);
	tcase_add_test(tc, test_conn_data_version);
	tcase_add_test(tc, test_conn_data_bounds);
	tcase_add_test(tc, test_sge_order);
	suite_add_tcase(s, tc);

	tc = tcase_create("tx");
	tcase_add_test(tc, test_tx_init);
	tcase_add_test(tc, test_tx_ctrl_slots);
	tcase_add_test(tc, test_tx_credits);
	tcase_add_test(tc, test_tx_resources);
	tcase_add_test(tc, test_tx_chunk_sequence);
	tcase_add_test(tc, test_tx_entry_discipline);
	tcase_add_test(tc, test_tx_stage_wrap);
	tcase_add_test(tc, test_scale);
	tcase_add_test(tc, test_tx_cork_small);
	tcase_add_test(tc, test_tx_cork_limits);
	tcase_add_test(tc, test_tx_cork_more);
	tcase_add_test(tc, test_tx_cork_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("rx");
	tcase_add_test(tc, test_rx_first_update);
	tcase_add_test(tc, test_rx_first_sgl_gated);
	tcase_add_test(tc, test_rx_half_readvertised);
	tcase_add_test(tc, test_rx_credits_only);
	tcase_add_test(tc, test_rx_partial_consume);
	tcase_add_test(tc, test_rx_overflow);
	tcase_add_test(tc, test_rx_push_beyond_offer);
	tcase_add_test(tc, test_rx_seq_wrap);
	tcase_add_test(tc, test_tx_rx_together);
	suite_add_tcase(s, tc);

	tc = tcase_create("iwarp");
	tcase_add_test(tc, test_msg_tx_sqes);
	tcase_add_test(tc, test_msg_ctrl_room);
	tcase_add_test(tc, test_msg_recv);
	tcase_add_test(tc, test_msg_sgl_take);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rsproto_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
