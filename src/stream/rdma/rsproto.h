/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rsocket SOCK_STREAM wire protocol (librdmacm's rsockets, as rdma-core
 * v44 speaks it; spec/rsocket-protocol.md): its encodings, and the credit,
 * ring and control-slot accounting of one connection, as plain structs and
 * functions with no verbs in them, so that every rule that decides what goes
 * on the wire is unit tested (tests/check_rsproto.c).  rdma_*.c post the work
 * requests these functions describe.
 */
#ifndef EVR_SRC_RSPROTO_H
#define EVR_SRC_RSPROTO_H

#include <stddef.h>
#include <stdint.h>

#define EVR_RS_CONN_DATA_LEN 40   /* struct rs_conn_data on the wire */
#define EVR_RS_AFIB_HDR_LEN 36    /* ib_connect_hdr before it on AF_IB */
#define EVR_RS_VERSION 1
#define EVR_RS_FLAG_NET 0x01      /* "my host is big-endian" */
#define EVR_RS_FLAG_IOMAP 0x02    /* iomap fields valid (always sent) */
#define EVR_RS_SGL_SIZE 2         /* entries of a target SGL */
/* What we accept of a peer's private data (upstream sends 2 entries and
 * half of a ring of at most a few MiB): its target SGL's entries number
 * our SGL writes into it, and its ring half bounds our chunks and is
 * reported doubled, so neither may be whatever 32 bits can say. */
#define EVR_RS_SGL_MAX 256
#define EVR_RS_RBUF_HALF_MAX (1u << 30)
#define EVR_RS_SGE_LEN 16         /* struct rs_sge: addr, key, length */
#define EVR_RS_CTRL_SIZE 4        /* control messages in flight per side */
#define EVR_RS_OLAP_START 2048    /* first chunk of every send call */
#define EVR_RS_MAX_TRANSFER 65536 /* largest chunk */
#define EVR_RS_SNDLOWAT 2048      /* free staging bytes needed to send */
#define EVR_RS_QP_MIN 16
#define EVR_RS_QP_MAX 0xfffe

/* Sizes for many connections: a connection among n of one engine (a
 * client's -c, or how many a server holds when it accepts one) gets the
 * full size (upstream's queue depths, a ring of twice -B) up to
 * EVR_RS_SCALE_FULL connections; beyond, the size shrinks in proportion,
 * never below floor.  The queues are what the device and its CQs hold
 * for every connection at once; the rings, the memory a server spends on
 * each.  Both reach the peer as the rsocket protocol allows: the credits
 * and the ring half in the private data. */
#define EVR_RS_SCALE_FULL 4
#define EVR_RS_RING_MIN 4096
uint32_t evr__rs_scale(uint32_t full, uint32_t floor, unsigned n);

/* The immediate: op in bits 31..29, data in 28..0, big-endian on the wire. */
enum evr_rs_op {
	EVR_RS_OP_DATA = 0,       /* data: bytes written into the peer's ring */
	EVR_RS_OP_WRITE = 2,      /* never an immediate (riowrite's local tag) */
	EVR_RS_OP_SGL = 4,        /* data: the new absolute credit limit */
	EVR_RS_OP_IOMAP_SGL = 6,
	EVR_RS_OP_CTRL = 7,       /* data: one of EVR_RS_CTRL_* */
};

enum {
	EVR_RS_CTRL_DISCONNECT = 0,
	EVR_RS_CTRL_KEEPALIVE = 1,  /* never sent as an immediate */
	EVR_RS_CTRL_SHUTDOWN = 2,
};

#define EVR_RS_DATA_MASK 0x1fffffffu

static inline uint32_t evr__rs_msg(unsigned op, uint32_t data)
{
	return (uint32_t)op << 29 | (data & EVR_RS_DATA_MASK);
}

static inline unsigned evr__rs_msg_op(uint32_t msg)
{
	return msg >> 29;
}

static inline uint32_t evr__rs_msg_data(uint32_t msg)
{
	return msg & EVR_RS_DATA_MASK;
}

/* The value for (or from) ibv_send_wr.imm_data / ibv_wc.imm_data, which
 * verbs carries as is: the message in network order. */
uint32_t evr__rs_imm_encode(uint32_t msg);
uint32_t evr__rs_imm_decode(uint32_t imm);

struct evr_rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* struct rs_conn_data: the REQ's and REP's private data, all big-endian. */
struct evr_rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;           /* the sender's receive credits (RQ size) */
	uint8_t iomap_size;         /* scale-encoded; we send 0 */
	struct evr_rs_sge target_sgl; /* length = entries, not bytes */
	struct evr_rs_sge data_buf;   /* the first half of the ring */
};

int evr__rs_host_big_endian(void);
/* Our own: version 1, IOMAP (and NET on a big-endian host), 2 entries. */
void evr__rs_conn_data_init(struct evr_rs_conn_data *cd, uint16_t credits,
			    uint64_t sgl_addr, uint32_t sgl_key,
			    uint64_t rbuf_addr, uint32_t rbuf_key,
			    uint32_t rbuf_size);
void evr__rs_conn_data_encode(uint8_t *out, const struct evr_rs_conn_data *cd);
/* Private data as received: at least 40 bytes (the kernel reports 56 for a
 * REQ and 196 for a REP on RoCE, zero-padded).  Returns 0, -EMSGSIZE when
 * too short, -EPROTONOSUPPORT for another version, -EPROTO for a target
 * SGL of fewer than 2 entries (our updates alternate 1, 0, 1, ...) or more
 * than EVR_RS_SGL_MAX, or a ring half of 0 or over EVR_RS_RBUF_HALF_MAX
 * bytes. */
int evr__rs_conn_data_decode(const uint8_t *in, size_t len,
			     struct evr_rs_conn_data *cd);

/* An rs_sge as written into the peer's target SGL: in the reader's byte
 * order.  swap: the peer's order differs from ours (its NET flag). */
void evr__rs_sge_encode(uint8_t *out, const struct evr_rs_sge *s, int swap);
/* ... and as read from our own target SGL (our order). */
void evr__rs_sge_decode(const uint8_t *in, struct evr_rs_sge *s);

/* ---- the sending side ----
 * Message credits (sseq_no may not reach sseq_comp), the four control
 * slots, send queue entries, the staging ring, and the peer's ring as our
 * target entries: we write at target[cur].addr and move on only when the
 * entry is used up, since the reader places bytes by ring order alone. */
struct evr_rs_tx {
	uint16_t sseq_no, sseq_comp;
	uint16_t ctrl_seqno, ctrl_max;
	uint32_t sqe_avail;         /* send WRs left for DATA */
	uint32_t sbuf_size, sbuf_avail, sbuf_head;
	struct evr_rs_sge target[EVR_RS_SGL_SIZE];
	unsigned target_cur;        /* the entry we fill */
	unsigned target_next;       /* where the peer's next SGE lands */
	uint32_t olen;              /* chunk size within one send call */
	uint32_t sqe_max;           /* sqe_avail with nothing in flight */
	uint32_t sqe_per;           /* send queue entries a write takes: 1,
				     * 2 in the iWARP dialect */
	/* the cork: bytes staged at cork_off that wait to go as one write */
	uint32_t cork_off, cork_len;
	int more;                   /* the caller sends again at once */
};

void evr__rs_tx_init(struct evr_rs_tx *tx, uint32_t data_sqes,
		     uint32_t sbuf_size, const struct evr_rs_conn_data *peer);
/* Credits, a send queue entry and room in the peer's ring: what any
 * write needs. */
static inline int evr__rs_tx_can_write(const struct evr_rs_tx *tx)
{
	return tx->sqe_avail >= tx->sqe_per && tx->sseq_no != tx->sseq_comp &&
	       tx->target[tx->target_cur].length != 0;
}

static inline int evr__rs_tx_ctrl_avail(const struct evr_rs_tx *tx)
{
	return tx->ctrl_seqno != tx->ctrl_max;
}

/* n control slots free (an SGE update of the iWARP dialect takes 2). */
static inline int evr__rs_tx_ctrl_room(const struct evr_rs_tx *tx,
				       unsigned n)
{
	return (uint16_t)(tx->ctrl_max - tx->ctrl_seqno) >= n;
}

static inline int evr__rs_tx_can_send(const struct evr_rs_tx *tx)
{
	uint32_t lowat = tx->sbuf_size < 2 * EVR_RS_SNDLOWAT ?
			 tx->sbuf_size / 2 : EVR_RS_SNDLOWAT;

	return evr__rs_tx_can_write(tx) && tx->sbuf_avail >= lowat;
}

/* A send call starts: chunks start at 2048 again. */
static inline void evr__rs_tx_begin(struct evr_rs_tx *tx)
{
	tx->olen = EVR_RS_OLAP_START;
}

/* The size of the next chunk of a send call with left bytes to go, or 0
 * when nothing may be sent now. */
static inline uint32_t evr__rs_tx_chunk(struct evr_rs_tx *tx, size_t left)
{
	uint32_t xfer;

	if (!left || !evr__rs_tx_can_send(tx))
		return 0;
	if (left <= tx->olen) {
		xfer = (uint32_t)left;
	} else {
		xfer = tx->olen;
		if (tx->olen < EVR_RS_MAX_TRANSFER)
			tx->olen <<= 1;
	}
	if (xfer > tx->sbuf_avail)
		xfer = tx->sbuf_avail;
	if (xfer > tx->target[tx->target_cur].length)
		xfer = tx->target[tx->target_cur].length;
	return xfer;
}

/* Account for a chunk of xfer bytes about to be posted; *raddr and *rkey
 * are where it goes in the peer's ring. */
static inline void evr__rs_tx_commit(struct evr_rs_tx *tx, uint32_t xfer,
				     uint64_t *raddr, uint32_t *rkey)
{
	struct evr_rs_sge *t = &tx->target[tx->target_cur];

	*raddr = t->addr;
	*rkey = t->key;
	t->addr += xfer;
	t->length -= xfer;
	/* Never skip the rest of an entry, never cross into the next. */
	if (!t->length)
		tx->target_cur = (tx->target_cur + 1) % EVR_RS_SGL_SIZE;
	tx->sseq_no++;
	tx->sqe_avail -= tx->sqe_per;
	tx->sbuf_avail -= xfer;
}

/* Take xfer bytes of the staging ring: at *off, *len1 bytes then the rest
 * from offset 0 (a copy that wraps goes out as two SGEs). */
static inline void evr__rs_tx_stage(struct evr_rs_tx *tx, uint32_t xfer,
				    uint32_t *off, uint32_t *len1)
{
	uint32_t room = tx->sbuf_size - tx->sbuf_head;

	*off = tx->sbuf_head;
	*len1 = xfer < room ? xfer : room;
	tx->sbuf_head = (tx->sbuf_head + xfer) % tx->sbuf_size;
}

/* ---- the cork (autocorking, as Linux TCP does it) ----
 * Bytes that need not go at once gather in the staging ring and leave as
 * one write: a 64-byte stream then moves a few large writes instead of
 * thousands of small ones, each of which costs a work request, a packet,
 * a completion and a credit at both ends.  They gather
 *   - when the caller says it sends again at once (tx->more, MSG_MORE:
 *     the engine's session knows the next transfer of a stream follows),
 *   - when nothing may be sent now (credits, send queue, the peer's ring,
 *     staging space),
 *   - for a small send call (under EVR_RS_CORK_SMALL bytes) while
 *     EVR_RS_CORK_INFLIGHT of our writes are unacknowledged (the bytes
 *     would only queue behind them),
 *   - and behind bytes that gather already (the stream's order).
 * A ping-pong says no more and has at most one write of its own in
 * flight: a send that can go now goes now.  The cork leaves once it is
 * worth a full write (EVR_RS_MAX_TRANSFER, all the peer's entry takes,
 * or half the staging ring), and otherwise as soon as nothing holds it
 * (the caller's last send, the writes in flight falling below the mark).
 * The receiver sees an ordinary DATA message, longer than the sends. */
#ifndef EVR_RS_CORK_INFLIGHT
#define EVR_RS_CORK_INFLIGHT 2
#endif
#define EVR_RS_CORK_SMALL EVR_RS_OLAP_START
static inline uint32_t evr__rs_tx_in_flight(const struct evr_rs_tx *tx)
{
	return (tx->sqe_max - tx->sqe_avail) / tx->sqe_per;
}

/* Worth a write of its own: a full one, what the peer's entry takes, or
 * half the staging ring (which must never fill while the cork waits). */
static inline uint32_t evr__rs_tx_cork_full(const struct evr_rs_tx *tx)
{
	uint32_t f = EVR_RS_MAX_TRANSFER;

	if (f > tx->target[tx->target_cur].length)
		f = tx->target[tx->target_cur].length;
	if (f > tx->sbuf_size / 2)
		f = tx->sbuf_size / 2;
	return f;
}

/* Whether the next left bytes of a send call are to gather. */
static inline int evr__rs_tx_cork_due(const struct evr_rs_tx *tx,
				      size_t left)
{
	return tx->cork_len || !evr__rs_tx_can_send(tx) ||
	       (tx->more && left < evr__rs_tx_cork_full(tx)) ||
	       (left < EVR_RS_CORK_SMALL &&
		evr__rs_tx_in_flight(tx) >= EVR_RS_CORK_INFLIGHT);
}

/* Stage up to left bytes behind the cork: returns how many (0 when the
 * staging ring is full), *off and *len1 as evr__rs_tx_stage. */
uint32_t evr__rs_tx_cork(struct evr_rs_tx *tx, size_t left, uint32_t *off,
			 uint32_t *len1);
/* The size of the cork's next write, or 0 when it waits (for resources,
 * or for more bytes while writes are in flight). */
uint32_t evr__rs_tx_cork_chunk(const struct evr_rs_tx *tx);
/* Account for that write, as evr__rs_tx_commit; its bytes are at *off
 * (*len1 of them, then the rest from offset 0). */
void evr__rs_tx_cork_commit(struct evr_rs_tx *tx, uint32_t xfer,
			    uint64_t *raddr, uint32_t *rkey, uint32_t *off,
			    uint32_t *len1);
/* A DATA write completed (in the iWARP dialect: its send, which
 * completes after the write and stands for both). */
void evr__rs_tx_data_done(struct evr_rs_tx *tx, uint32_t len);
void evr__rs_tx_ctrl_post(struct evr_rs_tx *tx);
void evr__rs_tx_ctrl_done(struct evr_rs_tx *tx);
/* An SGL message arrived: its credit limit, and with sge (16 bytes
 * written) the new entry of our target SGL. */
void evr__rs_tx_sgl(struct evr_rs_tx *tx, uint32_t data,
		    const struct evr_rs_sge *sge);

/* ---- the iWARP dialect (rsockets' RS_OPT_MSG_SEND, spec §6) ----
 * iWARP has no write with immediate.  A message is then a send of its 4
 * bytes, in the sender's byte order (rsockets send it unconverted), after
 * a plain RDMA write of its bytes when it has any; the receiver's
 * receives each hold one 4-byte message.  Each side picks the dialect
 * from its own device (the two ends of an iWARP connection both are):
 * nothing on the wire says which.  A transfer takes two send queue
 * entries, an SGE update two control slots. */
#define EVR_RS_MSG_LEN 4

/* From now on tx speaks the iWARP dialect. */
void evr__rs_tx_msg_send(struct evr_rs_tx *tx);
/* A message as a receive got it: len bytes (the completion's byte_len)
 * at in, in the sender's order (swap: not ours, as its private data's
 * NET flag says).  0 and *msg, or -EPROTO when it is not 4 bytes. */
int evr__rs_msg_recv(const uint8_t *in, uint32_t len, int swap,
		     uint32_t *msg);
/* An SGL message of the iWARP dialect cannot say whether the peer wrote
 * a new entry into our target SGL before it: the entry at in (as the
 * peer wrote it, in our order) says.  1 and *s when it holds one, whose
 * length is then cleared in memory so that a later credits-only message
 * does not take it again (the peer writes that entry again only after
 * we have used this one up); 0 when it holds none; -EPROTO for a length
 * beyond EVR_RS_RBUF_HALF_MAX, which no peer's half can be. */
int evr__rs_sgl_take(uint8_t *in, struct evr_rs_sge *s);

/* ---- the receiving side ----
 * Our ring is advertised in halves: the first in the private data, the
 * second by the first SGL (held back until the peer has written a quarter
 * of the ring: evr__rs_rx_update_gated), and each half again only once
 * the application has consumed a half's worth since the previous
 * advertisement (so the writer's entry for it is surely used up).
 * Message credits go back as the absolute limit rseq_no + rq_size;
 * rseq_no counts messages fully consumed, so at most rq_size are ever
 * queued. */
struct evr_rs_rx {
	uint32_t rbuf_size, half;
	uint32_t offset;            /* read cursor */
	uint32_t free_offset;       /* the next half to advertise */
	uint32_t bytes_avail;       /* consumed and not yet advertised */
	uint16_t rseq_no, rseq_comp, rq_size;
	unsigned remote_sge;        /* the peer's entry for our next SGE */
	unsigned remote_sgl_len;
	uint64_t bytes_in;          /* DATA bytes placed since connecting */
	uint64_t advertised;        /* ring bytes offered to the peer since
				     * connecting: bytes_in may not pass it */
	uint32_t *msg;              /* lengths of queued DATA messages */
	unsigned msg_cap, msg_head, msg_count;
};

enum evr_rs_update {
	EVR_RS_UPD_NONE = 0,
	EVR_RS_UPD_CREDITS,         /* a 0-byte SGL: credits only */
	EVR_RS_UPD_SGE,             /* a 16-byte SGL: a half and credits */
};

void evr__rs_rx_init(struct evr_rs_rx *rx, uint32_t rbuf_size,
		     uint16_t rq_size, unsigned peer_sgl_len, uint32_t *msgbuf,
		     unsigned msg_cap);
/* A DATA message of len bytes was placed: 0, -ENOBUFS when the peer
 * sent more messages than it had credits for, or -EMSGSIZE when it
 * claims more bytes than the ring space we offered it (nothing queued
 * then: the length would have us read bytes it never wrote). */
int evr__rs_rx_push(struct evr_rs_rx *rx, uint32_t len);
static inline int evr__rs_rx_credits_due(const struct evr_rs_rx *rx)
{
	return (int16_t)(uint16_t)(rx->rseq_no - rx->rseq_comp) >= 0;
}

/* Contiguous bytes readable now, at ring offset *off (0: nothing queued). */
static inline uint32_t evr__rs_rx_peek(const struct evr_rs_rx *rx,
				       uint32_t *off)
{
	uint32_t n, room;

	*off = rx->offset;
	if (!rx->msg_count)
		return 0;
	n = rx->msg[rx->msg_head];
	room = rx->rbuf_size - rx->offset;
	return n < room ? n : room;
}

/* n bytes (at most what peek returned) have been copied out. */
static inline void evr__rs_rx_consume(struct evr_rs_rx *rx, uint32_t n)
{
	uint32_t *head;

	if (!rx->msg_count)
		return;
	head = &rx->msg[rx->msg_head];
	if (n > *head)
		n = *head;
	*head -= n;
	rx->offset += n;
	if (rx->offset >= rx->rbuf_size)
		rx->offset -= rx->rbuf_size;
	rx->bytes_avail += n;
	if (!*head) {
		/* a message is credited back once wholly consumed */
		rx->msg_head = (rx->msg_head + 1) % rx->msg_cap;
		rx->msg_count--;
		rx->rseq_no++;
	}
}

static inline enum evr_rs_update
evr__rs_rx_update_due(const struct evr_rs_rx *rx)
{
	if (rx->bytes_avail >= rx->half)
		return EVR_RS_UPD_SGE;
	return evr__rs_rx_credits_due(rx) ? EVR_RS_UPD_CREDITS : EVR_RS_UPD_NONE;
}

/* What the RDMA transport sends: as evr__rs_rx_update_due, except that
 * the first SGL (the ring's second half) waits until the peer has written
 * a quarter of the ring, credits going back meanwhile when due.  Written
 * at ESTABLISHED, that SGL could reach an rsocket client closing right
 * after connecting, whose close then hung on Soft-RoCE (see
 * src/stream/rdma_conn.c); the peer needs it only once the first half is full. */
static inline enum evr_rs_update
evr__rs_rx_update_gated(const struct evr_rs_rx *rx)
{
	enum evr_rs_update k = evr__rs_rx_update_due(rx);

	if (k != EVR_RS_UPD_SGE || rx->bytes_in >= rx->half / 2)
		return k;
	return evr__rs_rx_credits_due(rx) ? EVR_RS_UPD_CREDITS : EVR_RS_UPD_NONE;
}

/* Build the due update (kind from update_due): returns the SGL message's
 * data (the credit limit); with EVR_RS_UPD_SGE fills *sge (a half of the
 * ring at rbuf_addr) and *entry (the peer's target entry to write). */
uint32_t evr__rs_rx_update(struct evr_rs_rx *rx, enum evr_rs_update kind,
			   uint64_t rbuf_addr, uint32_t rkey,
			   struct evr_rs_sge *sge, unsigned *entry);

#endif
