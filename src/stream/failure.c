/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Failures become text here, once, at the edge of the engine. */
#include "config.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "evrdma/stream.h"
#include "wire.h"

static const char *phase_name(enum evr_phase p)
{
	switch (p) {
	case EVR_PH_SETUP:
		return "setup";
	case EVR_PH_CONNECT:
		return "connect";
	case EVR_PH_NEGOTIATE:
		return "negotiation";
	case EVR_PH_SYNC:
		return "sync";
	case EVR_PH_SEND:
		return "send";
	case EVR_PH_RECV:
		return "receive";
	case EVR_PH_CLOSE:
		return "close";
	}
	return "?";
}

static void reason(const struct evr_failure *f, char *b, size_t n)
{
	switch (-f->err) {
	case EVR_E_EOF:
		snprintf(b, n, "peer closed the connection");
		break;
	case EVR_E_STALL:
		snprintf(b, n, "no progress for %.1f s (stall timeout)",
			 f->detail / 1000.0);
		break;
	case EVR_E_VERIFY:
		snprintf(b, n, "data verification failed byte %llu",
			 (unsigned long long)f->bytes_done);
		break;
	case EVR_E_REJECTED:
		snprintf(b, n, "%s: %s", f->detail == EVR_PLAN_E_CONNS ?
			 "connection refused" : "test plan rejected",
			 evr__plan_status_str(f->detail));
		break;
	case EVR_E_RESOLVE:
		snprintf(b, n, "cannot resolve %s: %s: %s", f->addr,
			 f->where ? f->where : "getaddrinfo",
			 f->sys_err ? strerror(f->sys_err) :
				      gai_strerror(f->detail));
		break;
	case EVR_E_NODEV:
		snprintf(b, n, "No RDMA devices were detected");
		break;
	case EVR_E_EXTRA:
		snprintf(b, n, "peer sent more data than the test plan holds");
		break;
	case EVR_E_CANCELLED:
		snprintf(b, n, "interrupted");
		break;
	case EVR_E_PROTO:
		snprintf(b, n, "malformed %s message",
			 f->where ? f->where : "negotiation");
		break;
	case EVR_E_NOTSUP:
		snprintf(b, n, "%s is not supported",
			 f->where ? f->where : "this feature");
		break;
	default:
		if (f->err < 0 && f->where && f->addr[0])
			/* "bind 127.0.0.1:7471: Address already in use" */
			snprintf(b, n, "%s %s: %s", f->where, f->addr,
				 strerror(-f->err));
		else if (f->err < 0 && f->where)
			snprintf(b, n, "%s: %s", f->where, strerror(-f->err));
		else
			snprintf(b, n, "%s", strerror(f->err < 0 ? -f->err : f->err));
		break;
	}
}

void evr_failure_str(const struct evr_failure *f, char *buf, size_t len)
{
	char r[192], ctx[192] = "", conn[48] = "";
	int hint = 0;

	if (!buf || !len)
		return;
	if (!f) {
		/* done() hands NULL on success: nothing failed */
		snprintf(buf, len, "no failure");
		return;
	}
	reason(f, r, sizeof(r));
	if (f->test[0]) {
		snprintf(ctx, sizeof(ctx),
			 "test %s (%u of %u), %s, iteration %llu of %llu, "
			 "transfer %llu of %llu: ",
			 f->test, f->test_index + 1, f->test_total,
			 phase_name(f->phase),
			 (unsigned long long)f->iters_done + 1,
			 (unsigned long long)f->iters_total,
			 (unsigned long long)f->xfers_done + 1,
			 (unsigned long long)f->xfers_total);
		hint = f->err == -EVR_E_STALL && !f->negotiated;
	} else if (f->phase != EVR_PH_SETUP &&
		   !(f->where && !strcmp(f->where, phase_name(f->phase)))) {
		/* "connect: connect: ..." says the same thing twice */
		snprintf(ctx, sizeof(ctx), "%s: ", phase_name(f->phase));
	}
	if (f->err == -EVR_E_EXTRA && !f->negotiated)
		hint = 1;
	if (f->conn_total > 1)
		snprintf(conn, sizeof(conn), "connection %u of %u: ",
			 f->conn_index, f->conn_total);
	snprintf(buf, len, "%s%s%s%s%s%s", conn, f->peer[0] ? f->peer : "",
		 f->peer[0] ? ": " : "", ctx, r,
		 hint ? " (do both sides run the same test options?)" : "");
}
