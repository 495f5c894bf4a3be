/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Writes the binary seeds of the fuzz corpora with the project's own
 * encoders, so that they are what the programs really send:
 *
 *   gen_corpus DIR      (DIR/plan, DIR/rsproto, DIR/mc_payload, DIR/nlmon exist)
 *
 * Run by tests/fuzz/gen-corpus.sh; every file it writes is "seed-*".
 */
#include "config.h"

#include <endian.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcast/payload.h"
#include "stream/plan.h"
#include "stream/rdma/rsproto.h"
#include "stream/wire.h"

static const char *dir;

static void put(const char *target, const char *name, const void *buf,
		size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/seed-%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || (len && fwrite(buf, 1, len, f) != len) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* ---- plan ---- */

static size_t plan_msg(uint8_t *out, const struct evr_conn_plan *cp,
		       uint16_t version, uint16_t flags, uint16_t ci,
		       uint16_t ct)
{
	struct evr_plan_hdr h = {
		.version = version, .flags = flags,
		.ntests = (uint16_t)cp->ntests, .conn_index = ci,
		.conn_total = ct, .pat_send = 0x10, .pat_recv = 0x20,
	};
	unsigned i;

	evr__plan_hdr_encode(out, &h);
	for (i = 0; i < cp->ntests; i++)
		evr__plan_entry_encode(out + EVR_PLAN_HDR_LEN +
				       i * EVR_PLAN_ENTRY_LEN, &cp->tests[i]);
	return EVR_PLAN_HDR_LEN + cp->ntests * EVR_PLAN_ENTRY_LEN;
}

static void plan_seeds(void)
{
	static uint8_t b[EVR_PLAN_HDR_LEN + EVR_PLAN_MAX_TESTS *
			 EVR_PLAN_ENTRY_LEN];
	struct evr_stream_opts o;
	struct evr_plan p;
	size_t n;
	int i;

	/* the default run: latency series, then bandwidth series */
	memset(&o, 0, sizeof(o));
	evr__plan_build(&p, &o);
	put("plan", "default-lat", b, plan_msg(b, &p.conns[0], 1, 0, 0, 0));
	put("plan", "default-bw", b, plan_msg(b, &p.conns[1], 1, 0, 0, 0));
	/* -T v; -D; -c 3 (connection 2 of 3) */
	put("plan", "verify", b, plan_msg(b, &p.conns[0], 1,
					  EVR_PLAN_F_VERIFY, 0, 0));
	put("plan", "duration-v2", b, plan_msg(b, &p.conns[1], 2,
					       EVR_PLAN_F_DURATION, 0, 0));
	put("plan", "conn-2-of-3", b, plan_msg(b, &p.conns[0], 1, 0, 1, 3));
	/* -S all: 33 tests */
	o.size_all = 1;
	evr__plan_build(&p, &o);
	put("plan", "all-bw", b, plan_msg(b, &p.conns[1], 1, 0, 0, 0));
	/* custom -S 1g -C 1000000000 -I 1000000000: the limits */
	memset(&o, 0, sizeof(o));
	o.custom = 1;
	o.size = EVR_MAX_XFER_SIZE;
	o.count = EVR_MAX_COUNT;
	o.iters = EVR_MAX_COUNT;
	evr__plan_build(&p, &o);
	put("plan", "custom-max", b, plan_msg(b, &p.conns[0], 1, 0, 0, 0));
	o.size = 1;
	o.count = 1;
	o.iters = 1;
	evr__plan_build(&p, &o);
	put("plan", "custom-min", b, plan_msg(b, &p.conns[0], 1, 0, 0, 0));

	/* what the server rejects */
	memset(&o, 0, sizeof(o));
	evr__plan_build(&p, &o);
	put("plan", "bad-version3", b, plan_msg(b, &p.conns[0], 3, 0, 0, 0));
	put("plan", "bad-duration-v1", b, plan_msg(b, &p.conns[0], 1,
						   EVR_PLAN_F_DURATION, 0, 0));
	put("plan", "bad-flags", b, plan_msg(b, &p.conns[0], 2, 0x8000, 0, 0));
	p.conns[0].ntests = 0;
	put("plan", "bad-ntests0", b, plan_msg(b, &p.conns[0], 1, 0, 0, 0));
	n = plan_msg(b, &p.conns[1], 1, 0, 0, 0);
	b[8] = 0;
	b[9] = EVR_PLAN_MAX_TESTS + 1;
	put("plan", "bad-ntests65", b, n);
	evr__plan_build(&p, &o);
	n = plan_msg(b, &p.conns[0], 1, 0, 0, 0);
	b[EVR_PLAN_HDR_LEN + 12] = 3;                 /* kind */
	put("plan", "bad-kind", b, n);
	n = plan_msg(b, &p.conns[0], 1, 0, 0, 0);
	memset(b + EVR_PLAN_HDR_LEN + 16, 0, 4);      /* size 0, 2nd entry */
	put("plan", "bad-size0", b, n);
	n = plan_msg(b, &p.conns[0], 1, 0, 0, 0);
	b[EVR_PLAN_HDR_LEN] = 0x40;                   /* size 1g + 64 */
	put("plan", "bad-size-big", b, n);
	n = plan_msg(b, &p.conns[0], 1, 0, 0, 0);
	memset(b + EVR_PLAN_HDR_LEN + 4, 0xff, 4);    /* count */
	put("plan", "bad-count", b, n);
	n = plan_msg(b, &p.conns[0], 1, 0, 0, 0);
	put("plan", "short-entries", b, n - 8);       /* cut in an entry */

	/* replies, as the client reads them */
	for (i = 0; i <= EVR_PLAN_E_MAX; i++) {
		char name[32];

		evr__plan_reply_encode(b, i, EVR_MAX_XFER_SIZE);
		snprintf(name, sizeof(name), "reply-%d", i);
		put("plan", name, b, EVR_PLAN_REPLY_LEN);
	}
	/* the other 16-byte messages of the exchange */
	put("plan", "hello", evr__hello_msg, EVR_SYNC_LEN);
	put("plan", "ack", evr__ack_msg, EVR_SYNC_LEN);
	put("plan", "busy", evr__busy_msg, EVR_SYNC_LEN);
	for (i = 0; i < EVR_SYNC_LEN; i++)
		b[i] = (uint8_t)(0xf8 + i);   /* a -T v sync, wrapping */
	put("plan", "pattern-sync", b, EVR_SYNC_LEN);
	put("plan", "empty", b, 0);
}

/* ---- rsproto ---- */

static void rs_seeds(void)
{
	uint8_t b[512];
	struct evr_rs_conn_data cd;
	struct evr_rs_sge sge = { 0x7f0000010000ull, 0x1234, 32768 };
	size_t n;
	int i;

	evr__rs_conn_data_init(&cd, 255, 0x7f0000020000ull, 0x55,
			       0x7f0000100000ull, 0x66, 131072);
	evr__rs_conn_data_encode(b, &cd);
	put("rsproto", "rep-40", b, EVR_RS_CONN_DATA_LEN);
	memset(b + EVR_RS_CONN_DATA_LEN, 0, 196 - EVR_RS_CONN_DATA_LEN);
	put("rsproto", "rep-196-roce", b, 196);      /* as the kernel pads */
	put("rsproto", "req-56-roce", b, 56);
	memset(b, 0, EVR_RS_AFIB_HDR_LEN);
	evr__rs_conn_data_encode(b + EVR_RS_AFIB_HDR_LEN, &cd);
	put("rsproto", "req-afib", b, EVR_RS_AFIB_HDR_LEN +
	    EVR_RS_CONN_DATA_LEN);
	evr__rs_conn_data_encode(b, &cd);
	put("rsproto", "short-39", b, 39);
	b[0] = 2;
	put("rsproto", "bad-version", b, EVR_RS_CONN_DATA_LEN);
	evr__rs_conn_data_encode(b, &cd);
	b[23] = 1;                                     /* 1 target entry */
	put("rsproto", "bad-sgl1", b, EVR_RS_CONN_DATA_LEN);
	b[22] = 1;                                     /* 257 entries */
	put("rsproto", "bad-sgl257", b, EVR_RS_CONN_DATA_LEN);
	evr__rs_conn_data_encode(b, &cd);
	memset(b + 36, 0, 4);                          /* a ring half of 0 */
	put("rsproto", "bad-half0", b, EVR_RS_CONN_DATA_LEN);
	b[36] = 0x40;
	b[39] = 1;                                     /* 1 GiB + 1 */
	put("rsproto", "bad-half-big", b, EVR_RS_CONN_DATA_LEN);
	evr__rs_conn_data_encode(b, &cd);
	cd.flags |= EVR_RS_FLAG_NET;
	cd.credits = 0;
	evr__rs_conn_data_encode(b, &cd);
	put("rsproto", "net-nocredit", b, EVR_RS_CONN_DATA_LEN);

	/* a connection's traffic after the reply: action byte, then the
	 * immediate as verbs hands it over (network order) */
	evr__rs_conn_data_init(&cd, 8, 0x2000, 7, 0x3000, 9, 8192);
	evr__rs_conn_data_encode(b, &cd);
	n = EVR_RS_CONN_DATA_LEN;
	{
		static const struct { uint8_t act; unsigned op; uint32_t d;
				      int sge; } steps[] = {
			{ 0x05, EVR_RS_OP_DATA, 3000, 0 },   /* recv + send */
			{ 0x1d, EVR_RS_OP_DATA, 100, 0 },    /* + complete, read */
			{ 0x03, EVR_RS_OP_SGL, 16, 1 },      /* SGL with entry */
			{ 0x45, EVR_RS_OP_SGL, 17, 0 },      /* credits only */
			{ 0x3d, EVR_RS_OP_DATA, 0, 0 },      /* 0 bytes: credit */
			{ 0xd9, EVR_RS_OP_DATA, 4096, 0 },
			{ 0x81, EVR_RS_OP_CTRL, EVR_RS_CTRL_SHUTDOWN, 0 },
			{ 0x89, EVR_RS_OP_CTRL, EVR_RS_CTRL_DISCONNECT, 0 },
			{ 0x01, EVR_RS_OP_IOMAP_SGL, 0, 0 },
			{ 0x01, EVR_RS_OP_WRITE, 0, 0 },
		};

		for (i = 0; i < (int)(sizeof(steps) / sizeof(steps[0])); i++) {
			uint32_t w = evr__rs_imm_encode(
				evr__rs_msg(steps[i].op, steps[i].d));

			b[n++] = steps[i].act;
			memcpy(b + n, &w, 4);
			n += 4;
			if (steps[i].sge) {
				evr__rs_sge_encode(b + n, &sge, 0);
				n += EVR_RS_SGE_LEN;
			}
		}
	}
	put("rsproto", "traffic", b, n);
	/* the same in the iWARP dialect (the flags byte's top bit): each
	 * message as its 4 bytes in the sender's order */
	b[1] |= 0x80;
	for (n = EVR_RS_CONN_DATA_LEN; n + 5 <= sizeof(b) && b[n]; ) {
		uint32_t w;

		memcpy(&w, b + n + 1, 4);
		w = evr__rs_imm_decode(w);
		memcpy(b + n + 1, &w, 4);
		n += 5 + ((b[n] & 0x02) ? EVR_RS_SGE_LEN : 0);
	}
	put("rsproto", "traffic-iwarp", b, n);
	b[1] &= 0x7f;
	/* more DATA messages than credits (rq_size + 1 queued) */
	n = EVR_RS_CONN_DATA_LEN;
	for (i = 0; i < 12; i++) {
		uint32_t w = evr__rs_imm_encode(evr__rs_msg(EVR_RS_OP_DATA,
							    64));

		b[n++] = 0x01;
		memcpy(b + n, &w, 4);
		n += 4;
	}
	put("rsproto", "overrun", b, n);
	/* DATA lengths past the ring space offered (the target's ring is
	 * sizes[credits >> 8 & 3], 4096 here: 2048 offered), then within it
	 * after a read and an SGL */
	n = EVR_RS_CONN_DATA_LEN;
	{
		static const struct { uint8_t act; unsigned op; uint32_t d; }
		beyond[] = {
			{ 0x01, EVR_RS_OP_DATA, 2049 },
			{ 0x01, EVR_RS_OP_DATA, EVR_RS_DATA_MASK },
			{ 0x31, EVR_RS_OP_DATA, 2048 },
			{ 0x41, EVR_RS_OP_DATA, 1 },
			{ 0x31, EVR_RS_OP_DATA, 2048 },
		};

		for (i = 0; i < (int)(sizeof(beyond) / sizeof(beyond[0]));
		     i++) {
			uint32_t w = evr__rs_imm_encode(
				evr__rs_msg(beyond[i].op, beyond[i].d));

			b[n++] = beyond[i].act;
			memcpy(b + n, &w, 4);
			n += 4;
		}
	}
	put("rsproto", "beyond-offer", b, n);
	/* sends only: fill the peer's half and the staging ring */
	n = EVR_RS_CONN_DATA_LEN;
	for (i = 0; i < 8; i++) {
		uint32_t w = evr__rs_imm_encode(evr__rs_msg(EVR_RS_OP_DATA,
							    0x3ffff));

		b[n++] = i & 1 ? 0x0c : 0x04;
		memcpy(b + n, &w, 4);
		n += 4;
	}
	put("rsproto", "sends", b, n);
}

/* ---- mc_payload ---- */

static size_t mc_msg(uint8_t *out, uint32_t sender, uint32_t seq,
		     uint32_t count, uint16_t len)
{
	struct evr_mc_hdr h = { sender, seq, count };

	out[0] = (uint8_t)(len >> 8);
	out[1] = (uint8_t)len;
	evr__mc_payload_encode(out + 2, len, &h);
	return 2 + (size_t)len;
}

/* Inputs of fuzz_mc_payload: two bytes for the receiver's limits (0 0:
 * the defaults; see the target), then the messages. */
static void mc_seeds(void)
{
	static uint8_t b[16384];
	size_t n;
	int i;

	b[0] = b[1] = 0;
	n = 2 + mc_msg(b + 2, 0x1234abcd, 0, 10, 100); /* mckey's default -S */
	put("mc_payload", "one", b, n);
	n = 2;
	for (i = 0; i < 10; i++)
		n += mc_msg(b + n, 0x1234abcd, (uint32_t)i, 10, 24);
	put("mc_payload", "ten-in-order", b, n);
	n = 2;
	for (i = 0; i < 5; i++)                        /* -C 5 of 10 */
		n += mc_msg(b + n, 0x1234abcd, (uint32_t)i, 10, 24);
	put("mc_payload", "stopped-early", b, n);
	n = 2;
	n += mc_msg(b + n, 7, 2, 4, 24);
	n += mc_msg(b + n, 7, 0, 4, 24);               /* reordered */
	n += mc_msg(b + n, 7, 2, 4, 24);               /* duplicate */
	n += mc_msg(b + n, 8, 0, 4, 24);               /* second sender */
	n += mc_msg(b + n, 7, 4, 4, 24);               /* seq == count: bad */
	n += mc_msg(b + n, 9, 5, 0, 24);               /* no count: bad */
	n += mc_msg(b + n, 7, 3, 5, 24);               /* count changed: bad */
	n += mc_msg(b + n, 1, 0, 1, 23);               /* too short: bad */
	n += mc_msg(b + n, 1, 0, 1, 3);                /* foreign */
	n += mc_msg(b + n, 1, 0, 1, 0);
	put("mc_payload", "mixed", b, n);
	n = 2;
	for (i = 0; i <= EVR_MC_DEFAULT_MAX_SENDERS; i++) /* one too many */
		n += mc_msg(b + n, (uint32_t)i, 0, 1, 24);
	put("mc_payload", "senders-257", b, n);
	b[0] = 1;                                      /* window 128, */
	b[1] = 2;                                      /* 3 senders */
	n = 2;
	for (i = 0; i < 5; i++)
		n += mc_msg(b + n, (uint32_t)i, 0, 1000, 24);
	n += mc_msg(b + n, 0, 999, 1000, 24);          /* the window moves */
	n += mc_msg(b + n, 0, 900, 1000, 24);          /* in it: reordered */
	n += mc_msg(b + n, 0, 1, 1000, 24);            /* behind it */
	n += mc_msg(b + n, 0, 999, 1000, 24);          /* duplicate */
	put("mc_payload", "small-limits", b, n);
	b[0] = b[1] = 0;
	n = 2;
	for (i = 0; i < 300; i++)                      /* forged, spread */
		n += mc_msg(b + n, 0x5eed0000u + (uint32_t)i * 0x1000u,
			    (uint32_t)i * 333331u % 100000000u, 100000000u,
			    24);
	put("mc_payload", "forged-300", b, n);
	n = 2 + mc_msg(b + 2, 3, 99999999, 100000000, 24); /* -C's limit */
	put("mc_payload", "count-max", b, n);
	n = 2 + mc_msg(b + 2, 3, 0xfffffffeu, 0xffffffffu, 24);
	put("mc_payload", "count-near-2-32", b, n);
	n = 2 + mc_msg(b + 2, 3, 0, 1, 24);
	b[2 + 2 + 4] = 2;                              /* version 2 */
	put("mc_payload", "bad-version", b, n);
	mc_msg(b + 2, 3, 0, 1, 64);
	b[2] = 0xff;                                   /* length says 65507: */
	b[3] = 0xe3;                                   /* the input is cut */
	put("mc_payload", "cut", b, 2 + 2 + 64);
}

/* ---- nlmon's attributes ---- */

static void nl_attr(uint8_t *b, size_t *len, uint16_t type, const void *p,
		    size_t n)
{
	struct nlattr a = { .nla_len = (uint16_t)(sizeof(a) + n),
			    .nla_type = type };

	memcpy(b + *len, &a, sizeof(a));
	memcpy(b + *len + sizeof(a), p, n);
	*len += NLA_ALIGN(sizeof(a) + n);
}

/* ---- nlmon ---- */

/* A monitor message (RDMA_NLDEV_CMD_MONITOR, type 5148) appended to B at
 * *LEN: its event type, the device's index and name, and a netdev name
 * when given. */
static void nl_event(uint8_t *b, size_t *len, uint8_t kind, const char *dev,
		     const char *netdev)
{
	struct nlmsghdr h = { .nlmsg_type = 5148 };
	size_t start = *len;
	uint32_t idx = 3;

	*len += sizeof(h);
	nl_attr(b, len, 102, &kind, 1);
	nl_attr(b, len, 1, &idx, sizeof(idx));
	nl_attr(b, len, 2, dev, strlen(dev) + 1);
	if (netdev)
		nl_attr(b, len, 51, netdev, strlen(netdev) + 1);
	h.nlmsg_len = (uint32_t)(*len - start);
	memcpy(b + start, &h, sizeof(h));
}

static void nl_seeds(void)
{
	uint8_t b[1024];
	size_t n;

	memset(b, 0, sizeof(b));
	n = 0;
	nl_event(b, &n, 0, "rxe0", NULL);
	put("nlmon", "register", b, n);
	n = 0;
	nl_event(b, &n, 1, "rxe0", NULL);
	nl_event(b, &n, 0, "rxe0", NULL);
	nl_event(b, &n, 2, "rxe0", "veth0");
	put("nlmon", "unregister-register-attach", b, n);
	n = 0;
	nl_event(b, &n, 3, "mlx5_0", "enp1s0f0np0");
	nl_event(b, &n, 5, "mlx5_0", "eth4");
	nl_event(b, &n, 9, "mlx5_0", NULL);
	put("nlmon", "detach-rename-unknown", b, n);
	put("nlmon", "cut", b, n - 5);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	plan_seeds();
	rs_seeds();
	mc_seeds();
	nl_seeds();
	return 0;
}
