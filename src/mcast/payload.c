/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

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
	buf[4] = EVR_MC_HDR_VERSION;
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
	struct evr_mc_hdr d;

	/* Our own fill never starts with the magic (it starts 0, 1, 2),
	 * nor, but by a 2^-32 chance, does an upstream sender's garbage:
	 * the magic on anything unusable is a broken evrdma header. */
	if (len < 4 || memcmp(buf, magic, 4))
		return EVR_MC_DEC_NONE;
	if (len < EVR_MC_HDR_LEN || buf[4] != EVR_MC_HDR_VERSION)
		return EVR_MC_DEC_BAD;
	d.sender = evr__get32(buf + 8);
	d.seq = evr__get32(buf + 12);
	d.count = evr__get32(buf + 16);
	/* A sender that sends nothing sends no header; a sequence number
	 * must be one of those announced. */
	if (!d.count || d.seq >= d.count)
		return EVR_MC_DEC_BAD;
	*h = d;
	return EVR_MC_DEC_OK;
}

unsigned evr__mc_window(unsigned w)
{
	if (!w)
		w = EVR_MC_DEFAULT_WINDOW;
	if (w < EVR_MC_MIN_WINDOW)
		w = EVR_MC_MIN_WINDOW;
	if (w > EVR_MC_MAX_WINDOW)
		w = EVR_MC_MAX_WINDOW;
	return (w + 63) & ~63u;
}

unsigned evr__mc_max_senders(unsigned n)
{
	if (!n)
		return EVR_MC_DEFAULT_MAX_SENDERS;
	return n > EVR_MC_MAX_MAX_SENDERS ? EVR_MC_MAX_MAX_SENDERS : n;
}

size_t evr__mc_acct_max_bytes(unsigned window, unsigned max_senders)
{
	size_t n = evr__mc_max_senders(max_senders);

	return n * (sizeof(struct evr_mc_sender_stats) +
		    evr__mc_window(window) / 8);
}

void evr__mc_acct_init(struct evr_mc_acct *a, unsigned window,
		       unsigned max_senders)
{
	memset(a, 0, sizeof(*a));
	a->window = evr__mc_window(window);
	a->max_senders = evr__mc_max_senders(max_senders);
}

void evr__mc_acct_fini(struct evr_mc_acct *a)
{
	unsigned i, window = a->window, max_senders = a->max_senders;

	for (i = 0; i < a->nsenders; i++)
		free(a->senders[i].win);
	free(a->senders);
	memset(a, 0, sizeof(*a));
	a->window = window;
	a->max_senders = max_senders;
}

/* The table grows as senders appear (doubling, up to max_senders), so a
 * receiver that hears one sender holds one entry, not max_senders. */
static struct evr_mc_sender_stats *track(struct evr_mc_acct *a,
					 const struct evr_mc_hdr *h)
{
	struct evr_mc_sender_stats *s;
	uint64_t *win;

	if (a->nsenders >= a->max_senders)
		return NULL;
	if (a->nsenders == a->alloc) {
		unsigned n = a->alloc ? a->alloc * 2 : 4;

		if (n > a->max_senders)
			n = a->max_senders;
		s = realloc(a->senders, (size_t)n * sizeof(*s));
		if (!s)
			return NULL;
		a->bytes += (size_t)(n - a->alloc) * sizeof(*s);
		a->senders = s;
		a->alloc = n;
	}
	win = calloc(a->window / 64, sizeof(*win));
	if (!win)
		return NULL;
	a->bytes += a->window / 8;
	s = &a->senders[a->nsenders];
	memset(s, 0, sizeof(*s));
	s->sender = h->sender;
	s->count = h->count;
	s->highest = h->seq;
	s->win = win;
	a->last = a->nsenders++;
	return s;
}

static struct evr_mc_sender_stats *find(struct evr_mc_acct *a, uint32_t id)
{
	unsigned i;

	if (a->last < a->nsenders && a->senders[a->last].sender == id)
		return &a->senders[a->last];
	for (i = 0; i < a->nsenders; i++)
		if (a->senders[i].sender == id) {
			a->last = i;
			return &a->senders[i];
		}
	return NULL;
}

/* Clear n bits of the ring from sequence number from on, a word at a
 * time where aligned: a sender's jump costs window / 64 steps at most. */
static void clear_bits(uint64_t *win, unsigned window, uint32_t from,
		       uint64_t n)
{
	unsigned i = from % window;

	if (n >= window) {
		memset(win, 0, window / 8);
		return;
	}
	while (n) {
		if (!(i & 63) && n >= 64) {
			win[i / 64] = 0;
			i += 64;
			n -= 64;
		} else {
			win[i / 64] &= ~(UINT64_C(1) << (i & 63));
			i++;
			n--;
		}
		if (i == window)
			i = 0;
	}
}

void evr__mc_acct_add(struct evr_mc_acct *a, const uint8_t *buf, size_t len)
{
	struct evr_mc_sender_stats *s;
	struct evr_mc_hdr h;
	uint64_t bit;
	unsigned i;

	switch (evr__mc_payload_decode(buf, len, &h)) {
	case EVR_MC_DEC_NONE:
		a->foreign++;
		return;
	case EVR_MC_DEC_BAD:
		a->bad++;
		return;
	}
	s = find(a, h.sender);
	if (!s) {
		s = track(a, &h);
		if (!s) {
			a->untracked++;
			return;
		}
		/* the first message opens the window at its sequence */
	} else if (h.count != s->count) {
		/* a sender's count never changes: one that does is forged,
		 * or a sender id clash; either way it is not this sender */
		a->bad++;
		return;
	} else if (h.seq > s->highest) {
		clear_bits(s->win, a->window, s->highest + 1,
			   (uint64_t)h.seq - s->highest);
		s->highest = h.seq;
	} else if (s->highest - h.seq >= a->window) {
		/* its bit is gone: a duplicate cannot be told from a late
		 * arrival, so it is neither; it stays among the lost */
		s->received++;
		s->out_of_window++;
		return;
	}
	s->received++;
	i = h.seq % a->window;
	bit = UINT64_C(1) << (i & 63);
	if (s->win[i / 64] & bit) {
		s->duplicates++;
		return;
	}
	s->win[i / 64] |= bit;
	s->unique++;
	if (h.seq < s->highest)
		s->reordered++;
}

uint64_t evr__mc_sender_lost(const struct evr_mc_sender_stats *s)
{
	/* unique counts distinct sequence numbers <= highest only */
	return (uint64_t)s->highest + 1 - s->unique;
}

uint64_t evr__mc_sender_not_received(const struct evr_mc_sender_stats *s)
{
	return (uint64_t)s->count - 1 - s->highest;
}

uint32_t evr__mc_sender_base(void)
{
	struct timespec ts;
	uint32_t b;

	if (getrandom(&b, sizeof(b), 0) != sizeof(b)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		b = (uint32_t)getpid() << 12 ^ (uint32_t)ts.tv_nsec;
	}
	return b & ~0xfffu;
}
