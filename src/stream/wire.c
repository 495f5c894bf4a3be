/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <string.h>

#include "../loop/bytes.h"

#include "wire.h"

/* Printable, so that a packet capture shows what they are. */
const uint8_t evr__hello_msg[EVR_SYNC_LEN] = "evrdma:hello:v1\n";
const uint8_t evr__ack_msg[EVR_SYNC_LEN] = "evrdma:ack---v1\n";
const uint8_t evr__busy_msg[EVR_SYNC_LEN] = "evrdma:busy--v1\n";
static const uint8_t plan_magic[4] = { 'E', 'V', 'P', 'L' };
static const uint8_t reply_magic[4] = { 'E', 'V', 'P', 'R' };

int evr__is_hello(const uint8_t *b)
{
	return !memcmp(b, evr__hello_msg, EVR_SYNC_LEN);
}

int evr__is_ack(const uint8_t *b)
{
	return !memcmp(b, evr__ack_msg, EVR_SYNC_LEN);
}

int evr__is_busy(const uint8_t *b)
{
	return !memcmp(b, evr__busy_msg, EVR_SYNC_LEN);
}

void evr__plan_hdr_encode(uint8_t *out, const struct evr_plan_hdr *h)
{
	memset(out, 0, EVR_PLAN_HDR_LEN);
	memcpy(out, plan_magic, 4);
	evr__put16(out + 4, h->version);
	evr__put16(out + 6, h->flags);
	evr__put16(out + 8, h->ntests);
	evr__put16(out + 10, h->conn_index);
	evr__put16(out + 12, h->conn_total);
	out[14] = h->pat_send;
	out[15] = h->pat_recv;
}

int evr__plan_hdr_decode(const uint8_t *in, struct evr_plan_hdr *h)
{
	if (memcmp(in, plan_magic, 4))
		return -1;
	h->version = evr__get16(in + 4);
	h->flags = evr__get16(in + 6);
	h->ntests = evr__get16(in + 8);
	h->conn_index = evr__get16(in + 10);
	h->conn_total = evr__get16(in + 12);
	h->pat_send = in[14];
	h->pat_recv = in[15];
	if (h->version != EVR_WIRE_VERSION &&
	    h->version != EVR_WIRE_VERSION_DURATION)
		return EVR_PLAN_E_VERSION;
	if ((h->flags & ~EVR_PLAN_F_KNOWN) ||
	    (h->version == EVR_WIRE_VERSION &&
	     (h->flags & EVR_PLAN_F_DURATION)))
		return EVR_PLAN_E_FLAGS;
	if (!h->ntests || h->ntests > EVR_PLAN_MAX_TESTS)
		return EVR_PLAN_E_NTESTS;
	return EVR_PLAN_OK;
}

void evr__plan_entry_encode(uint8_t *out, const struct evr_test *t)
{
	memset(out, 0, EVR_PLAN_ENTRY_LEN);
	evr__put32(out, t->size);
	evr__put32(out + 4, t->count);
	evr__put32(out + 8, t->iters);
	out[12] = t->kind;
	out[13] = t->flags;
}

int evr__plan_entry_decode(const uint8_t *in, struct evr_test *t,
			   uint32_t max_size)
{
	uint32_t size = evr__get32(in), count = evr__get32(in + 4), iters = evr__get32(in + 8);
	uint8_t kind = in[12];

	if (kind > EVR_TEST_BW)
		return EVR_PLAN_E_KIND;
	if (!size || size > max_size)
		return EVR_PLAN_E_SIZE;
	if (!count || count > EVR_MAX_COUNT || !iters || iters > EVR_MAX_COUNT)
		return EVR_PLAN_E_COUNT;
	evr__test_init(t, kind, size, count, iters);
	/* Names come from the kind; counts are the client's.  Flags this
	 * end does not know are dropped: the reply's features say which it
	 * takes. */
	t->count = count;
	t->iters = iters;
	t->flags = in[13] & EVR_TEST_F_HOLD;
	return EVR_PLAN_OK;
}

void evr__plan_reply_encode(uint8_t *out, int status, uint32_t limit)
{
	memset(out, 0, EVR_PLAN_REPLY_LEN);
	memcpy(out, reply_magic, 4);
	evr__put32(out + 4, (uint32_t)status);
	evr__put32(out + 8, limit);
}

void evr__plan_reply_set_features(uint8_t *out, uint32_t features)
{
	evr__put32(out + 12, features);
}

uint32_t evr__plan_reply_features(const uint8_t *in)
{
	return evr__get32(in + 12);
}

int evr__plan_reply_decode(const uint8_t *in, uint32_t *limit)
{
	uint32_t st;

	if (memcmp(in, reply_magic, 4))
		return -1;
	st = evr__get32(in + 4);
	if (limit)
		*limit = evr__get32(in + 8);
	return st > 0x7fffffff ? -1 : (int)st;
}

const char *evr__plan_status_str(int status)
{
#define RJ_ROW(code, value, text) [value] = text,
	static const char *const text[EVR_PLAN_E_MAX] = {
		[EVR_PLAN_OK] = "accepted",
		EVR_REJECTS(RJ_ROW)
	};
#undef RJ_ROW

	return status >= 0 && status < EVR_PLAN_E_MAX && text[status] ?
	       text[status] : "unknown reason";
}

void evr__pattern_fill(struct evr_pattern *p, uint8_t *buf, size_t len)
{
	uint8_t v = p->next;
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = v++;
	p->next = v;
}

int evr__pattern_check(struct evr_pattern *p, const uint8_t *buf, size_t len,
		       uint64_t *bad)
{
	uint8_t v = p->next;
	size_t i;

	for (i = 0; i < len; i++, v++) {
		if (buf[i] != v) {
			if (bad)
				*bad = p->total + i;
			return -1;
		}
	}
	p->next = v;
	p->total += len;
	return 0;
}

int evr__pattern_detect(const uint8_t *b, size_t len, uint8_t *first)
{
	size_t i;

	for (i = 1; i < len; i++)
		if (b[i] != (uint8_t)(b[0] + i))
			return 0;
	if (first)
		*first = b[0];
	return 1;
}
