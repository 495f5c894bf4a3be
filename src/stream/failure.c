/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Failures become text here, once, at the edge of the engine. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "evrdma/stream.h"
#include "../loop/loop.h"
#include "addr.h"
#include "wire.h"

#define ERR_ROW(code, name, text) [EVR_E_##code - EVR_E_BASE] = { name, text },
static const struct {
	const char *name, *text;
} errs[] = { EVR_ERRORS(ERR_ROW) };
#undef ERR_ROW

#define NS_ROW(code, text) [EVR_NOTSUP_##code] = text,
static const char *const notsup[] = { EVR_NOTSUP_LIST(NS_ROW) };
#undef NS_ROW

#define PH_ROW(code, name, word) [EVR_PH_##code] = { name, word },
static const struct {
	const char *name, *word;
} phases[] = { EVR_PHASES(PH_ROW) };
#undef PH_ROW

/* The row of an engine code, NULL for an errno value. */
static unsigned err_row(int err)
{
	unsigned i = (unsigned)-err - EVR_E_BASE;

	return err < 0 && i < EVR__ARRAY_SIZE(errs) && errs[i].name ? i : 0;
}

const char *evr_err_name(int err)
{
	unsigned i = err_row(err);

	return i ? errs[i].name : "system";
}

const char *evr_phase_name(enum evr_phase p)
{
	return (unsigned)p < EVR__ARRAY_SIZE(phases) ? phases[p].name :
						       "unknown";
}

static const char *phase_word(enum evr_phase p)
{
	return (unsigned)p < EVR__ARRAY_SIZE(phases) ? phases[p].word : "?";
}

/* A server's own limit that an errno failure met (its detail). */
static const char *limit_word(int detail)
{
	switch (detail) {
	case EVR_REJECT_BUDGET:
		return "the server's memory budget is taken";
	case EVR_REJECT_CONNS:
		return "at the server's connection limit: new connections "
		       "are turned away until some close";
	default:
		return NULL;
	}
}

/* The reason: the facts a code carries, else its text from EVR_ERRORS. */
static void reason(const struct evr_failure *f, char *b, size_t n)
{
	switch (-f->err) {
	case EVR_E_STALL:
		snprintf(b, n, "no progress for %.1f s (stall timeout)",
			 f->detail / 1000.0);
		return;
	case EVR_E_VERIFY:
		snprintf(b, n, "data verification failed byte %llu",
			 (unsigned long long)f->bytes_done);
		return;
	case EVR_E_REJECTED:
		snprintf(b, n, "%s: %s", f->detail == EVR_PLAN_E_CONNS ?
			 "connection refused" : "test plan rejected",
			 evr__plan_status_str(f->detail));
		return;
	case EVR_E_RESOLVE:
		if (f->detail == EVR__RESOLVE_NO_SCOPE) {
			snprintf(b, n, "%.46s is a link-local address: give "
				 "its interface, as %.46s%%eth0", f->addr,
				 f->addr);
			return;
		}
		snprintf(b, n, "cannot resolve %s: %s: %s", f->addr,
			 f->where ? f->where : "getaddrinfo",
			 f->sys_err ? strerror(f->sys_err) :
				      gai_strerror(f->detail));
		return;
	case EVR_E_PROTO:
		snprintf(b, n, "malformed %s message",
			 f->where ? f->where : "negotiation");
		return;
	case EVR_E_DEVGONE:
		if (!f->device[0])
			break;
		snprintf(b, n, f->detail ? "%s failed (a fatal device error)" :
			 "%s was removed", f->device);
		return;
	case EVR_E_PORTDOWN:
		if (!f->device[0])
			break;
		snprintf(b, n, f->detail ? "%s port %u is down" :
			 "%s port %u went down", f->device, f->port);
		return;
	case EVR_E_NOTSUP:
		snprintf(b, n, "%s is not supported",
			 (unsigned)f->detail < EVR__ARRAY_SIZE(notsup) ?
			 notsup[f->detail] : notsup[EVR_NOTSUP_UNSPEC]);
		return;
	}
	if (err_row(f->err))
		snprintf(b, n, "%s", errs[err_row(f->err)].text);
	else if (f->err < 0 && f->where && limit_word(f->detail))
		/* "buffer (the server's memory budget is taken): ..." */
		snprintf(b, n, "%s (%s): %s", f->where,
			 limit_word(f->detail), strerror(-f->err));
	else if (f->err < 0 && f->where && f->addr[0])
		/* "bind 127.0.0.1:7471: Address already in use" */
		snprintf(b, n, "%s %s: %s", f->where, f->addr,
			 strerror(-f->err));
	else if (f->err < 0 && f->where)
		snprintf(b, n, "%s: %s", f->where, strerror(-f->err));
	else
		snprintf(b, n, "%s", strerror(f->err < 0 ? -f->err : f->err));
}

/* " (the last of N addresses tried)" when a name's N were, else "". */
static void tried_note(const struct evr_failure *f, char *b, size_t n)
{
	if (f->addrs_tried > 1)
		snprintf(b, n, " (the last of %u addresses tried)",
			 f->addrs_tried);
}

void evr_failure_str(const struct evr_failure *f, char *buf, size_t len)
{
	evr_failure_format(f, NULL, buf, len);
}

void evr_failure_format(const struct evr_failure *f, const char *why,
			char *buf, size_t len)
{
	char r[192], ctx[192] = "", conn[48] = "", tried[48] = "";
	int hint = 0;

	if (!buf || !len)
		return;
	if (!f) {
		/* done() hands NULL on success: nothing failed */
		snprintf(buf, len, "no failure");
		return;
	}
	if (why)
		snprintf(r, sizeof(r), "%s", why);
	else
		reason(f, r, sizeof(r));
	if (f->test[0]) {
		snprintf(ctx, sizeof(ctx),
			 "test %s (%u of %u), %s, iteration %llu of %llu, "
			 "transfer %llu of %llu: ",
			 f->test, f->test_index + 1, f->test_total,
			 phase_word(f->phase),
			 (unsigned long long)f->iters_done + 1,
			 (unsigned long long)f->iters_total,
			 (unsigned long long)f->xfers_done + 1,
			 (unsigned long long)f->xfers_total);
		/* Without a plan the peers may run different tests: one
		 * then waits for bytes the other never sends, until its
		 * stall timeout, or the other's, which closes (the peer
		 * closed, or reset: it had unread bytes) */
		hint = !f->negotiated &&
		       (f->err == -EVR_E_STALL || f->err == -EVR_E_EOF ||
			f->err == -ECONNRESET || f->err == -EPIPE);
	} else if (f->phase != EVR_PH_SETUP &&
		   !(f->where && !strcmp(f->where, phase_word(f->phase)))) {
		/* "connect: connect: ..." says the same thing twice */
		snprintf(ctx, sizeof(ctx), "%s: ", phase_word(f->phase));
	}
	if (f->err == -EVR_E_EXTRA && !f->negotiated)
		hint = 1;
	if (f->conn_total > 1 && f->conn_same > 1)
		snprintf(conn, sizeof(conn), "%u of %u connections: ",
			 f->conn_same, f->conn_total);
	else if (f->conn_total > 1)
		snprintf(conn, sizeof(conn), "connection %u of %u: ",
			 f->conn_index, f->conn_total);
	tried_note(f, tried, sizeof(tried));
	snprintf(buf, len, "%s%s%s%s%s%s%s", conn, f->peer[0] ? f->peer : "",
		 f->peer[0] ? ": " : "", ctx, r, tried,
		 hint ? " (do both sides run the same test options?)" : "");
}
