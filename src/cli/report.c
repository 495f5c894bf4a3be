/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "report.h"
#include "../stream/wire.h"

const char *rstream_header(void)
{
	static char hdr[96];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr), "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n",
			 "name", "bytes", "xfers", "iters", "total", "time",
			 "Gb/sec", "usec/xfer");
	return hdr;
}

void rstream_format_row(char *buf, size_t len, const struct evr_result *r)
{
	char sz[32], cnt[32], it[32], tot[32], name[32];
	double usec = r->elapsed_ns / 1000.0;
	/* usec/xfer is one connection's: with -c N the mean of each one's
	 * own (rstream(1), MANY CONNECTIONS) */
	double xfer_usec = r->nconns ?
			   r->iter_mean_ns / 1000.0 / (r->count * 2.0) :
			   (usec / r->iters) / (r->count * 2.0);

	evr_size_str(sz, sizeof(sz), r->size);
	evr_count_str(cnt, sizeof(cnt), r->count);
	evr_count_str(it, sizeof(it), r->iters);
	evr_size_str(tot, sizeof(tot), (long long)r->bytes);
	/* -c N --per-conn: one connection's row is named test#K */
	if (r->conn_index) {
		size_t n = (size_t)snprintf(name, sizeof(name) - 1, "%s#%u",
					    r->name, r->conn_index);

		/* too long for its column, it still ends in a space */
		if (n >= 10 && n < sizeof(name) - 1)
			strcpy(name + n, " ");
	} else {
		snprintf(name, sizeof(name), "%s", r->name);
	}
	/* Upstream's columns, including the header's 2-column skew over
	 * usec/xfer, so that scripts reading either tool's table agree. */
	snprintf(buf, len, "%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", name,
		 sz, cnt, it, tot, usec / 1000000.0,
		 (r->bytes * 8) / (1000.0 * usec),
		 xfer_usec);
}

void rstream_format_settings(char *buf, size_t len, unsigned conn,
			     const char *peer,
			     const struct evr_conn_settings *s)
{
	char ka[64] = "keepalive off";
	int n;

	if (s->keepalive_on && s->xport == EVR_XPORT_TCP)
		snprintf(ka, sizeof(ka), "keepalive idle %d intvl %d probes %d",
			 s->keepalive_idle_s, s->tcp_keepintvl_s,
			 s->tcp_keepcnt);
	else if (s->keepalive_on)
		snprintf(ka, sizeof(ka), "keepalive %d", s->keepalive_idle_s);
	n = snprintf(buf, len, "settings conn %u local %s peer %s: ", conn,
		     s->local[0] ? s->local : "-",
		     s->peer[0] ? s->peer : peer && peer[0] ? peer : "-");
	if (n < 0 || (size_t)n >= len)
		return;
	if (s->xport == EVR_XPORT_TCP)
		snprintf(buf + n, len - n, "tcp sndbuf %d rcvbuf %d nodelay %d "
			 "mss %d %s\n", s->tcp_sndbuf, s->tcp_rcvbuf,
			 s->tcp_nodelay, s->tcp_mss, ka);
	else
		snprintf(buf + n, len - n, "rdma sbuf %u rbuf %u inline %u "
			 "sq %u rq %u credits %u peer_credits %u "
			 "peer_rbuf %u peer_sgl %u %s\n", s->rdma_sbuf_bytes,
			 s->rdma_rbuf_bytes, s->rdma_inline_bytes,
			 s->rdma_sq_depth, s->rdma_rq_depth,
			 s->rdma_credits_granted, s->rdma_credits_peer,
			 s->rdma_peer_rbuf_bytes, s->rdma_peer_target_sgl, ka);
}

int rstream_exit_status(const struct evr_failure *f)
{
	if (!f || !f->err)
		return RSTREAM_EXIT_OK;
	switch (-f->err) {
	case EVR_E_RESOLVE:
		return RSTREAM_EXIT_RESOLVE;
	case EVR_E_NODEV:
		return RSTREAM_EXIT_NODEV;
	case EVR_E_NOTSUP:
		return RSTREAM_EXIT_NOTSUP;
	case EVR_E_CANCELLED:
		return RSTREAM_EXIT_INTERRUPTED;
	case EVR_E_REJECTED:
		/* a server at its --max-conns refused the connection */
		if (f->detail == EVR_PLAN_E_CONNS)
			return RSTREAM_EXIT_CONNECT;
		break;
	default:
		break;
	}
	switch (f->phase) {
	case EVR_PH_SETUP:
		return RSTREAM_EXIT_LOCAL;
	case EVR_PH_CONNECT:
		return RSTREAM_EXIT_CONNECT;
	default:
		return RSTREAM_EXIT_TEST;
	}
}
