/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "rsproto.h"
#include "../../loop/bytes.h"

uint32_t evr__rs_imm_encode(uint32_t msg)
{
	return htobe32(msg);
}

uint32_t evr__rs_imm_decode(uint32_t imm)
{
	return be32toh(imm);
}

int evr__rs_host_big_endian(void)
{
	return htobe16(1) == 1;
}

void evr__rs_conn_data_init(struct evr_rs_conn_data *cd, uint16_t credits,
			    uint64_t sgl_addr, uint32_t sgl_key,
			    uint64_t rbuf_addr, uint32_t rbuf_key,
			    uint32_t rbuf_size)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = EVR_RS_VERSION;
	cd->flags = EVR_RS_FLAG_IOMAP |
		    (evr__rs_host_big_endian() ? EVR_RS_FLAG_NET : 0);
	cd->credits = credits;
	cd->iomap_size = 0; /* we accept no iomap writes */
	cd->target_sgl.addr = sgl_addr;
	cd->target_sgl.key = sgl_key;
	cd->target_sgl.length = EVR_RS_SGL_SIZE;
	cd->data_buf.addr = rbuf_addr;
	cd->data_buf.key = rbuf_key;
	cd->data_buf.length = rbuf_size / 2;
}

void evr__rs_conn_data_encode(uint8_t *out, const struct evr_rs_conn_data *cd)
{
	memset(out, 0, EVR_RS_CONN_DATA_LEN);
	out[0] = cd->version;
	out[1] = cd->flags;
	evr__put16(out + 2, cd->credits);
	/* 4..6 reserved */
	out[7] = cd->iomap_size;
	evr__put64(out + 8, cd->target_sgl.addr);
	evr__put32(out + 16, cd->target_sgl.key);
	evr__put32(out + 20, cd->target_sgl.length);
	evr__put64(out + 24, cd->data_buf.addr);
	evr__put32(out + 32, cd->data_buf.key);
	evr__put32(out + 36, cd->data_buf.length);
}

int evr__rs_conn_data_decode(const uint8_t *in, size_t len,
			     struct evr_rs_conn_data *cd)
{
	memset(cd, 0, sizeof(*cd));
	/* Never "== 40": IB CM pads private data to its fixed field sizes. */
	if (!in || len < EVR_RS_CONN_DATA_LEN)
		return -EMSGSIZE;
	cd->version = in[0];
	cd->flags = in[1];
	cd->credits = evr__get16(in + 2);
	cd->iomap_size = in[7];
	cd->target_sgl.addr = evr__get64(in + 8);
	cd->target_sgl.key = evr__get32(in + 16);
	cd->target_sgl.length = evr__get32(in + 20);
	cd->data_buf.addr = evr__get64(in + 24);
	cd->data_buf.key = evr__get32(in + 32);
	cd->data_buf.length = evr__get32(in + 36);
	/* The version is all upstream checks; no peer of ours can do with
	 * fewer than two target entries either. */
	if (cd->version != EVR_RS_VERSION)
		return -EPROTONOSUPPORT;
	if (cd->target_sgl.length < EVR_RS_SGL_SIZE ||
	    cd->target_sgl.length > EVR_RS_SGL_MAX)
		return -EPROTO;
	if (!cd->data_buf.length || cd->data_buf.length > EVR_RS_RBUF_HALF_MAX)
		return -EPROTO;
	return 0;
}

void evr__rs_sge_encode(uint8_t *out, const struct evr_rs_sge *s, int swap)
{
	uint64_t a = s->addr;
	uint32_t k = s->key, l = s->length;

	if (swap) {
		a = __builtin_bswap64(a);
		k = __builtin_bswap32(k);
		l = __builtin_bswap32(l);
	}
	memcpy(out, &a, 8);
	memcpy(out + 8, &k, 4);
	memcpy(out + 12, &l, 4);
}

void evr__rs_sge_decode(const uint8_t *in, struct evr_rs_sge *s)
{
	memcpy(&s->addr, in, 8);
	memcpy(&s->key, in + 8, 4);
	memcpy(&s->length, in + 12, 4);
}

uint32_t evr__rs_scale(uint32_t full, uint32_t floor, unsigned n)
{
	uint64_t v;

	if (n <= EVR_RS_SCALE_FULL || full <= floor)
		return full;
	v = (uint64_t)full * EVR_RS_SCALE_FULL / n;
	return v > floor ? (uint32_t)v : floor;
}

/* ---- sending ---- */

void evr__rs_tx_init(struct evr_rs_tx *tx, uint32_t data_sqes,
		     uint32_t sbuf_size, const struct evr_rs_conn_data *peer)
{
	memset(tx, 0, sizeof(*tx));
	tx->sseq_comp = peer->credits;
	tx->ctrl_max = EVR_RS_CTRL_SIZE;
	tx->sqe_avail = data_sqes;
	tx->sqe_max = data_sqes;
	tx->sbuf_size = sbuf_size;
	tx->sbuf_avail = sbuf_size;
	/* Entry 0 is the half in the private data; the peer's first SGL
	 * fills entry 1. */
	tx->target[0] = peer->data_buf;
	tx->target_next = 1;
	tx->olen = EVR_RS_OLAP_START;
	tx->sqe_per = 1;
}

void evr__rs_tx_msg_send(struct evr_rs_tx *tx)
{
	tx->sqe_per = 2;
}

int evr__rs_msg_recv(const uint8_t *in, uint32_t len, int swap,
		     uint32_t *msg)
{
	uint32_t m;

	*msg = 0;
	if (!in || len != EVR_RS_MSG_LEN)
		return -EPROTO;
	memcpy(&m, in, sizeof(m));
	*msg = swap ? __builtin_bswap32(m) : m;
	return 0;
}

int evr__rs_sgl_take(uint8_t *in, struct evr_rs_sge *s)
{
	static const uint32_t none;

	evr__rs_sge_decode(in, s);
	if (!s->length)
		return 0;
	if (s->length > EVR_RS_RBUF_HALF_MAX)
		return -EPROTO;
	memcpy(in + 12, &none, sizeof(none));
	return 1;
}

/* What holds a cork short of a full write back. */
static int cork_held(const struct evr_rs_tx *tx)
{
	return tx->more || evr__rs_tx_in_flight(tx) >= EVR_RS_CORK_INFLIGHT;
}

uint32_t evr__rs_tx_cork(struct evr_rs_tx *tx, size_t left, uint32_t *off,
			 uint32_t *len1)
{
	uint32_t n = left < tx->sbuf_avail ? (uint32_t)left : tx->sbuf_avail;

	*off = *len1 = 0;
	if (!n)
		return 0;
	if (!tx->cork_len)
		tx->cork_off = tx->sbuf_head;
	evr__rs_tx_stage(tx, n, off, len1);
	tx->sbuf_avail -= n;      /* taken now; the write's completion
				   * gives it back */
	tx->cork_len += n;
	return n;
}

uint32_t evr__rs_tx_cork_chunk(const struct evr_rs_tx *tx)
{
	uint32_t full = evr__rs_tx_cork_full(tx);

	if (!tx->cork_len || !evr__rs_tx_can_write(tx))
		return 0;
	if (tx->cork_len >= full)
		return full;
	return cork_held(tx) ? 0 : tx->cork_len;
}

void evr__rs_tx_cork_commit(struct evr_rs_tx *tx, uint32_t xfer,
			    uint64_t *raddr, uint32_t *rkey, uint32_t *off,
			    uint32_t *len1)
{
	uint32_t room = tx->sbuf_size - tx->cork_off;

	*off = tx->cork_off;
	*len1 = xfer < room ? xfer : room;
	tx->cork_off = (tx->cork_off + xfer) % tx->sbuf_size;
	tx->cork_len -= xfer;
	/* the staging space was taken when the bytes gathered */
	tx->sbuf_avail += xfer;
	evr__rs_tx_commit(tx, xfer, raddr, rkey);
}

void evr__rs_tx_data_done(struct evr_rs_tx *tx, uint32_t len)
{
	tx->sqe_avail += tx->sqe_per;
	tx->sbuf_avail += len;
}

void evr__rs_tx_ctrl_post(struct evr_rs_tx *tx)
{
	tx->ctrl_seqno++;
}

void evr__rs_tx_ctrl_done(struct evr_rs_tx *tx)
{
	tx->ctrl_max++;
}

void evr__rs_tx_sgl(struct evr_rs_tx *tx, uint32_t data,
		    const struct evr_rs_sge *sge)
{
	/* an absolute limit, kept modulo 2^16 as the peer counts */
	tx->sseq_comp = (uint16_t)data;
	if (sge) {
		tx->target[tx->target_next] = *sge;
		tx->target_next = (tx->target_next + 1) % EVR_RS_SGL_SIZE;
	}
}

/* ---- receiving ---- */

void evr__rs_rx_init(struct evr_rs_rx *rx, uint32_t rbuf_size,
		     uint16_t rq_size, unsigned peer_sgl_len, uint32_t *msgbuf,
		     unsigned msg_cap)
{
	memset(rx, 0, sizeof(*rx));
	rx->rbuf_size = rbuf_size;
	rx->half = rbuf_size / 2;
	/* The first half went out in the private data; the second is free
	 * and not yet advertised. */
	rx->free_offset = rx->half;
	rx->bytes_avail = rx->half;
	rx->advertised = rx->half;
	rx->rq_size = rq_size;
	rx->rseq_comp = rq_size / 2;
	rx->remote_sge = 1;
	rx->remote_sgl_len = peer_sgl_len ? peer_sgl_len : EVR_RS_SGL_SIZE;
	rx->msg = msgbuf;
	rx->msg_cap = msg_cap;
}

int evr__rs_rx_push(struct evr_rs_rx *rx, uint32_t len)
{
	if (len > rx->advertised - rx->bytes_in)
		return -EMSGSIZE;
	if (rx->msg_count >= rx->msg_cap)
		return -ENOBUFS;
	rx->msg[(rx->msg_head + rx->msg_count) % rx->msg_cap] = len;
	rx->msg_count++;
	rx->bytes_in += len;
	return 0;
}

uint32_t evr__rs_rx_update(struct evr_rs_rx *rx, enum evr_rs_update kind,
			   uint64_t rbuf_addr, uint32_t rkey,
			   struct evr_rs_sge *sge, unsigned *entry)
{
	/* upstream sends the sum unreduced; the peer keeps 16 bits */
	uint32_t limit = (uint32_t)rx->rseq_no + rx->rq_size;

	if (kind == EVR_RS_UPD_SGE) {
		sge->addr = rbuf_addr + rx->free_offset;
		sge->key = rkey;
		sge->length = rx->half;
		*entry = rx->remote_sge;
		rx->remote_sge = (rx->remote_sge + 1) % rx->remote_sgl_len;
		rx->bytes_avail -= rx->half;
		rx->advertised += rx->half;
		rx->free_offset += rx->half;
		if (rx->free_offset >= rx->rbuf_size)
			rx->free_offset = 0;
	}
	rx->rseq_comp = (uint16_t)(rx->rseq_no + rx->rq_size / 2);
	return limit;
}
