/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../loop/bytes.h"

#include "payload.h"

static const uint8_t magic[4] = { 'E', 'V', 'M', 'K' };

int evr__mc_payload_encode(uint8_t *buf, size_t len,
			   const struct evr_mc_hdr *h)
{
	size_t i;

	/* A defined fill instead of upstream's uninitialised memory. */
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)i;
	if (len < EVR_MC_HDR_LEN)
		return 0;
	memcpy(buf, magic, 4);
	buf[4] = 1;
	buf[5] = 0;
	buf[6] = buf[7] = 0;
	evr__put32(buf + 8, h->sender);
	evr__put32(buf + 12, h->seq);
	evr__put32(buf + 16, h->count);
	evr__put32(buf + 20, 0);
	return 1;
}

int evr__mc_payload_decode(const uint8_t *buf, size_t len,
			   struct evr_mc_hdr *h)
{
	if (len < EVR_MC_HDR_LEN || memcmp(buf, magic, 4) || buf[4] != 1)
		return 0;
	h->sender = evr__get32(buf + 8);
	h->seq = evr__get32(buf + 12);
	h->count = evr__get32(buf + 16);
	return 1;
}

void evr__mc_acct_init(struct evr_mc_acct *a)
{
	memset(a, 0, sizeof(*a));
}

void evr__mc_acct_fini(struct evr_mc_acct *a)
{
	unsigned i;

	for (i = 0; i < a->nsenders; i++)
		free(a->senders[i].seen);
	memset(a, 0, sizeof(*a));
}

static struct evr_mc_sender_stats *find(struct evr_mc_acct *a,
					const struct evr_mc_hdr *h)
{
	struct evr_mc_sender_stats *s;
	unsigned i;

	for (i = 0; i < a->nsenders; i++)
		if (a->senders[i].sender == h->sender)
			return &a->senders[i];
	if (a->nsenders >= EVR_MC_MAX_SENDERS)
		return NULL;
	s = &a->senders[a->nsenders];
	memset(s, 0, sizeof(*s));
	s->sender = h->sender;
	s->count = h->count;
	/* The bitmap is bounded by the count the sender announced; without
	 * one, duplicates cannot be told apart and are not counted.  The
	 * count comes off the network: bounded too (and the size computed
	 * wide: (count + 7) / 8 in 32 bits made a 0-byte bitmap for a count
	 * near 2^32, which the next message then overflowed). */
	if (h->count && h->count <= EVR_MC_MAX_BITMAP_COUNT)
		s->seen = calloc(((size_t)h->count + 7) / 8, 1);
	a->nsenders++;
	return s;
}

void evr__mc_acct_add(struct evr_mc_acct *a, const uint8_t *buf, size_t len)
{
	struct evr_mc_sender_stats *s;
	struct evr_mc_hdr h;

	if (!evr__mc_payload_decode(buf, len, &h)) {
		a->foreign++;
		return;
	}
	if (h.count && h.seq >= h.count) {
		a->bad++;
		return;
	}
	s = find(a, &h);
	if (!s) {
		a->overflow++;
		return;
	}
	s->received++;
	if (s->seen && h.seq < s->count) {
		uint8_t bit = (uint8_t)(1u << (h.seq & 7));

		if (s->seen[h.seq / 8] & bit) {
			s->duplicates++;
			return;
		}
		s->seen[h.seq / 8] |= bit;
	}
	s->unique++;
	if (s->any && h.seq < s->highest)
		s->reordered++;
	if (!s->any || h.seq > s->highest)
		s->highest = h.seq;
	s->any = 1;
}

uint64_t evr__mc_sender_lost(const struct evr_mc_sender_stats *s)
{
	return s->count > s->unique ? s->count - s->unique : 0;
}
