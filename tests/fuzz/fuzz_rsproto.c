/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rsocket wire protocol (rsproto.c) as a peer drives it:
 *
 *  - the connect private data, as the reply's (the whole input, as
 *    on_established() decodes it) and as a request to an AF_IB listener
 *    (after the 36-byte header, as on_request() does); what decodes
 *    re-encodes to the same 40 bytes but the reserved 4..6;
 *  - then, from byte 40 on, steps of one action byte and one 32-bit
 *    immediate (plus 16 bytes of target SGE when the action says the SGL
 *    message carried one), handled as rdma_dev.c's recv_wc() does, with the
 *    local side sending, completing, consuming and advertising in
 *    between.  The accounting must keep every offset and length inside
 *    the rings whatever the peer says.
 *  - in the iWARP dialect (flags byte's top bit), the same steps with
 *    the message as a receive gets it (4 bytes in the sender's order:
 *    every other length refused) and the SGE written into our target
 *    entry ahead of the SGL message (taken once, cleared, range-checked).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "stream/rdma/rsproto.h"

#define SQES 12
#define RQ_SIZE 8
#define MSG_CAP (RQ_SIZE + 1)

static const uint32_t sizes[4] = { 4096, 65536, 131072, 5000 };

static int conn_data(const uint8_t *in, size_t len,
		     struct evr_rs_conn_data *cd)
{
	struct evr_rs_conn_data again;
	uint8_t enc[EVR_RS_CONN_DATA_LEN];
	int ret = evr__rs_conn_data_decode(in, len, cd);

	FUZZ_CHECK(ret == 0 || ret == -EMSGSIZE || ret == -EPROTONOSUPPORT ||
		   ret == -EPROTO);
	if (ret == -EMSGSIZE) {
		FUZZ_CHECK(len < EVR_RS_CONN_DATA_LEN);
		return ret;
	}
	FUZZ_CHECK(len >= EVR_RS_CONN_DATA_LEN);
	FUZZ_CHECK(ret != 0 || (cd->version == EVR_RS_VERSION &&
				cd->target_sgl.length >= EVR_RS_SGL_SIZE &&
				cd->target_sgl.length <= EVR_RS_SGL_MAX &&
				cd->data_buf.length &&
				cd->data_buf.length <= EVR_RS_RBUF_HALF_MAX));
	/* every field was read whatever the verdict */
	evr__rs_conn_data_encode(enc, cd);
	FUZZ_CHECK(!memcmp(enc, in, 4));
	FUZZ_CHECK(!enc[4] && !enc[5] && !enc[6]);
	FUZZ_CHECK(!memcmp(enc + 7, in + 7, EVR_RS_CONN_DATA_LEN - 7));
	FUZZ_CHECK(evr__rs_conn_data_decode(enc, sizeof(enc), &again) == ret);
	FUZZ_CHECK(!memcmp(&again, cd, sizeof(again)));
	return ret;
}

static void check_imm(uint32_t w)
{
	uint32_t msg = evr__rs_imm_decode(w);

	FUZZ_CHECK(evr__rs_imm_encode(msg) == w);
	FUZZ_CHECK(evr__rs_msg_op(msg) < 8);
	FUZZ_CHECK(evr__rs_msg_data(msg) <= EVR_RS_DATA_MASK);
	FUZZ_CHECK(evr__rs_msg(evr__rs_msg_op(msg), evr__rs_msg_data(msg)) ==
		   msg);
}

static void check_sge(const uint8_t *in)
{
	struct evr_rs_sge s, t;
	uint8_t out[EVR_RS_SGE_LEN];

	evr__rs_sge_decode(in, &s);
	evr__rs_sge_encode(out, &s, 0);
	FUZZ_CHECK(!memcmp(out, in, EVR_RS_SGE_LEN));
	evr__rs_sge_encode(out, &s, 1);
	evr__rs_sge_decode(out, &t);
	FUZZ_CHECK(t.addr == __builtin_bswap64(s.addr) &&
		   t.key == __builtin_bswap32(s.key) &&
		   t.length == __builtin_bswap32(s.length));
}

struct sim {
	struct evr_rs_tx tx;
	struct evr_rs_rx rx;
	uint32_t rmsg[MSG_CAP];
	uint32_t inflight[SQES];    /* DATA sends not yet completed */
	unsigned nflight, ctrl_out;
	int peer_disc;
	int msg, swap;                 /* the iWARP dialect, its order */
	int refused;                   /* the last SGL message was */
	uint8_t entry[EVR_RS_SGE_LEN]; /* our target entry, as written */
};

static void tx_check(const struct sim *s)
{
	const struct evr_rs_tx *tx = &s->tx;

	FUZZ_CHECK(tx->sbuf_avail <= tx->sbuf_size);
	FUZZ_CHECK(tx->sbuf_head < tx->sbuf_size);
	FUZZ_CHECK(tx->target_cur < EVR_RS_SGL_SIZE);
	FUZZ_CHECK(tx->target_next < EVR_RS_SGL_SIZE);
	FUZZ_CHECK(tx->sqe_avail + s->nflight * tx->sqe_per == SQES);
}

static void rx_check(const struct sim *s)
{
	const struct evr_rs_rx *rx = &s->rx;

	FUZZ_CHECK(rx->offset < rx->rbuf_size);
	FUZZ_CHECK(rx->free_offset < rx->rbuf_size);
	FUZZ_CHECK(rx->free_offset % rx->half == 0);
	FUZZ_CHECK(rx->msg_count <= rx->msg_cap);
	FUZZ_CHECK(rx->msg_head < rx->msg_cap);
	FUZZ_CHECK(rx->remote_sge < rx->remote_sgl_len);
	/* the peer never has us read more than it could have written */
	FUZZ_CHECK(rx->bytes_in <= rx->advertised);
	{
		uint64_t q = 0;
		unsigned i;

		for (i = 0; i < rx->msg_count; i++)
			q += rx->msg[(rx->msg_head + i) % rx->msg_cap];
		FUZZ_CHECK(q <= rx->rbuf_size);
	}
}

/* The SGL message of the iWARP dialect: the entry says whether the
 * peer wrote one. */
static void peer_sgl_msg(struct sim *s, uint32_t data)
{
	struct evr_rs_sge e;
	uint32_t len;
	int r;

	memcpy(&len, s->entry + 12, 4);
	r = evr__rs_sgl_take(s->entry, &e);
	FUZZ_CHECK(r == (!len ? 0 : len > EVR_RS_RBUF_HALF_MAX ? -EPROTO : 1));
	if (r == 1) {
		memcpy(&len, s->entry + 12, 4);
		FUZZ_CHECK(!len);  /* taken once */
		FUZZ_CHECK(evr__rs_sgl_take(s->entry, &e) == 0);
	}
	if (r >= 0)
		evr__rs_tx_sgl(&s->tx, data, r ? &e : NULL);
	s->refused = r < 0;
}

/* One message from the peer, as recv_wc() handles it. */
static void peer_msg(struct sim *s, uint32_t msg, const uint8_t *sge)
{
	uint32_t data = evr__rs_msg_data(msg);
	unsigned count = s->rx.msg_count;
	struct evr_rs_sge e;

	switch (evr__rs_msg_op(msg)) {
	case EVR_RS_OP_SGL:
		if (s->msg) {
			peer_sgl_msg(s, data);
		} else if (sge) {
			evr__rs_sge_decode(sge, &e);
			evr__rs_tx_sgl(&s->tx, data, &e);
		} else {
			evr__rs_tx_sgl(&s->tx, data, NULL);
		}
		/* a refused entry (iWARP) ends the connection: no credits */
		FUZZ_CHECK(s->tx.sseq_comp == (uint16_t)data || s->refused);
		FUZZ_CHECK(s->rx.msg_count == count);
		break;
	case EVR_RS_OP_CTRL:
		if (data == EVR_RS_CTRL_DISCONNECT)
			s->peer_disc = 1;
		break;
	case EVR_RS_OP_IOMAP_SGL:
	case EVR_RS_OP_WRITE:
		break;
	default:
		if (s->peer_disc)
			break;
		if (!data) {
			s->rx.rseq_no++;
			break;
		}
		{
			uint64_t room = s->rx.advertised - s->rx.bytes_in;
			int r = evr__rs_rx_push(&s->rx, data);

			FUZZ_CHECK(r == 0 || r == -ENOBUFS || r == -EMSGSIZE);
			if (r == -EMSGSIZE)
				FUZZ_CHECK(data > room &&
					   s->rx.msg_count == count);
			else if (r)
				FUZZ_CHECK(data <= room &&
					   count == s->rx.msg_cap);
			else
				FUZZ_CHECK(data <= room &&
					   s->rx.msg_count == count + 1);
		}
		break;
	}
}

/* A step's message: its immediate, or in the iWARP dialect its 4 bytes
 * as a receive got them (and an SGE the peer wrote into our entry). */
static void peer_step(struct sim *s, uint32_t w, const uint8_t *raw,
		      const uint8_t *sge)
{
	uint32_t msg, m;
	unsigned len;

	if (!s->msg) {
		peer_msg(s, evr__rs_imm_decode(w), sge);
		return;
	}
	for (len = 0; len <= 8; len++)
		FUZZ_CHECK((evr__rs_msg_recv(raw, len, s->swap, &m) == 0) ==
			   (len == EVR_RS_MSG_LEN));
	FUZZ_CHECK(evr__rs_msg_recv(raw, EVR_RS_MSG_LEN, s->swap, &msg) == 0);
	FUZZ_CHECK(evr__rs_msg_recv(raw, EVR_RS_MSG_LEN, !s->swap, &m) == 0);
	FUZZ_CHECK(m == __builtin_bswap32(msg));
	if (sge)
		memcpy(s->entry, sge, EVR_RS_SGE_LEN);
	peer_msg(s, msg, NULL);
}

static void local_send(struct sim *s, uint32_t left)
{
	struct evr_rs_tx *tx = &s->tx;
	uint32_t xfer, off, len1, rkey, tlen, avail;
	uint64_t raddr, taddr;

	evr__rs_tx_begin(tx);
	while (left) {
		tlen = tx->target[tx->target_cur].length;
		taddr = tx->target[tx->target_cur].addr;
		avail = tx->sbuf_avail;
		xfer = evr__rs_tx_chunk(tx, left);
		if (!xfer)
			break;
		FUZZ_CHECK(s->nflight * tx->sqe_per < SQES);
		FUZZ_CHECK(xfer <= left && xfer <= avail && xfer <= tlen &&
			   xfer <= EVR_RS_MAX_TRANSFER);
		evr__rs_tx_commit(tx, xfer, &raddr, &rkey);
		FUZZ_CHECK(raddr == taddr);
		evr__rs_tx_stage(tx, xfer, &off, &len1);
		FUZZ_CHECK(off < tx->sbuf_size && len1 <= xfer &&
			   len1 <= tx->sbuf_size - off);
		FUZZ_CHECK(len1 == xfer || off + len1 == tx->sbuf_size);
		FUZZ_CHECK(xfer - len1 <= off);   /* the wrap fits before off */
		s->inflight[s->nflight++] = xfer;
		left -= xfer;
		tx_check(s);
	}
}

static void local_complete(struct sim *s)
{
	unsigned i;

	/* completions come in order */
	if (!s->nflight)
		return;
	evr__rs_tx_data_done(&s->tx, s->inflight[0]);
	for (i = 1; i < s->nflight; i++)
		s->inflight[i - 1] = s->inflight[i];
	s->nflight--;
}

static void local_read(struct sim *s, uint32_t want)
{
	uint32_t off, n;

	n = evr__rs_rx_peek(&s->rx, &off);
	FUZZ_CHECK(off < s->rx.rbuf_size);
	FUZZ_CHECK(n <= s->rx.rbuf_size - off);
	FUZZ_CHECK(!n == !s->rx.msg_count);
	if (want < n)
		n = want;
	evr__rs_rx_consume(&s->rx, n);
}

static void local_update(struct sim *s)
{
	enum evr_rs_update kind = evr__rs_rx_update_due(&s->rx);
	struct evr_rs_sge sge = { 0, 0, 0 };
	uint32_t fo = s->rx.free_offset, limit;
	unsigned entry = ~0u;

	if (kind == EVR_RS_UPD_NONE)
		return;
	limit = evr__rs_rx_update(&s->rx, kind, 0x10000000, 0x1234, &sge,
				  &entry);
	FUZZ_CHECK((uint16_t)limit == (uint16_t)(s->rx.rseq_no +
						  s->rx.rq_size));
	if (kind == EVR_RS_UPD_SGE) {
		FUZZ_CHECK(sge.addr == 0x10000000 + (uint64_t)fo);
		FUZZ_CHECK(sge.length == s->rx.half);
		FUZZ_CHECK(fo + sge.length <= s->rx.rbuf_size);
		FUZZ_CHECK(entry < s->rx.remote_sgl_len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_rs_conn_data cd, cd2;
	struct sim s;
	size_t pos;
	int ret;

	ret = conn_data(data, size, &cd);
	/* on_request() on an AF_IB listener; shorter is -EMSGSIZE there */
	if (size >= EVR_RS_AFIB_HDR_LEN)
		(void)conn_data(data + EVR_RS_AFIB_HDR_LEN,
				size - EVR_RS_AFIB_HDR_LEN, &cd2);
	if (size < EVR_RS_CONN_DATA_LEN)
		return 0;
	if (ret) {
		/* refused: drive the rest against a peer like ourselves */
		evr__rs_conn_data_init(&cd, RQ_SIZE, 0x2000, 7, 0x3000, 9,
				       sizes[data[0] & 3]);
	}

	memset(&s, 0, sizeof(s));
	evr__rs_tx_init(&s.tx, SQES, sizes[data[1] & 3], &cd);
	s.msg = !!(data[1] & 0x80);
	s.swap = !!(data[1] & 0x40);
	if (s.msg)
		evr__rs_tx_msg_send(&s.tx);
	evr__rs_rx_init(&s.rx, sizes[data[2] & 3], RQ_SIZE,
			cd.target_sgl.length, s.rmsg, MSG_CAP);
	tx_check(&s);
	rx_check(&s);

	pos = EVR_RS_CONN_DATA_LEN;
	while (size - pos >= 5) {
		uint8_t act = data[pos];
		uint32_t w;
		const uint8_t *sge = NULL;

		memcpy(&w, data + pos + 1, 4);
		pos += 5;
		check_imm(w);
		if ((act & 0x02) && size - pos >= EVR_RS_SGE_LEN) {
			sge = data + pos;
			check_sge(sge);
			pos += EVR_RS_SGE_LEN;
		}
		if (act & 0x01)
			peer_step(&s, w, data + pos - EVR_RS_MSG_LEN -
				  (sge ? EVR_RS_SGE_LEN : 0), sge);
		if (act & 0x04)
			local_send(&s, evr__rs_msg_data(evr__rs_imm_decode(w))
				       & 0x3ffff);
		if (act & 0x08)
			local_complete(&s);
		if (act & 0x10)
			local_read(&s, (act & 0x20) ? 0xffffffffu :
				       evr__rs_msg_data(w) & 0xffff);
		if (act & 0x40)
			local_update(&s);
		if ((act & 0x80) && evr__rs_tx_ctrl_avail(&s.tx)) {
			evr__rs_tx_ctrl_post(&s.tx);
			s.ctrl_out++;
		} else if ((act & 0x80) && s.ctrl_out) {
			evr__rs_tx_ctrl_done(&s.tx);
			s.ctrl_out--;
		}
		FUZZ_CHECK(s.ctrl_out <= EVR_RS_CTRL_SIZE);
		tx_check(&s);
		rx_check(&s);
	}
	while (s.nflight)
		local_complete(&s);
	FUZZ_CHECK(s.tx.sbuf_avail == s.tx.sbuf_size);
	return 0;
}
