/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "report.h"

const char *rstream_header(void)
{
	static char hdr[96];

	if (!hdr[0])
		snprintf(hdr, sizeof(hdr), "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n",
			 "name", "bytes", "xfers", "iters", "total", "time",
			 "Gb/sec", "usec/xfer");
	return hdr;
}

void rstream_row_figures(const struct evr_result *r, double *gbps,
			 double *xfer_usec)
{
	double usec = r->elapsed_ns / 1000.0;

	*gbps = (r->bytes * 8) / (1000.0 * usec);
	/* usec/xfer is one connection's: with -c N the mean of each one's
	 * own (rstream(1), MANY CONNECTIONS) */
	*xfer_usec = r->nconns ? r->iter_mean_ns / 1000.0 / (r->count * 2.0) :
		     (usec / r->iters) / (r->count * 2.0);
}

double pace_achieved(const struct evr_result *r)
{
	return r->conn_mean_ns ? r->iters * 1e9 / (double)r->conn_mean_ns :
				 0.0;
}

void rstream_format_row(char *buf, size_t len, const struct evr_result *r)
{
	char sz[32], cnt[32], it[32], tot[32], name[32];
	double usec = r->elapsed_ns / 1000.0, gbps, xfer_usec;

	rstream_row_figures(r, &gbps, &xfer_usec);
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
		 sz, cnt, it, tot, usec / 1000000.0, gbps, xfer_usec);
}

/* Append to buf[*n ..) as snprintf does: what fits, always terminated;
 * 0, or -1 once the line is cut (nothing more is appended). */
static int append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n >= len)
		return -1;
	va_start(ap, fmt);
	r = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	*n += (size_t)r;
	return *n < len ? 0 : -1;
}

/* The transport's rows that have a word on the line, those of its
 * keepalive (EVR_SETTING_KEEPALIVE) or the others. */
static int append_rows(char *buf, size_t len, size_t *n,
		       const struct evr_conn_settings *s, unsigned keepalive)
{
	unsigned i;

	for (i = 0; i < s->nrows; i++) {
		const struct evr_setting *r = &s->rows[i];

		if (!r->word || (r->flags & EVR_SETTING_KEEPALIVE) != keepalive)
			continue;
		if (append(buf, len, n, " %s %lld", r->word,
			   (long long)r->value))
			return -1;
	}
	return 0;
}

static int has_keepalive_rows(const struct evr_conn_settings *s)
{
	unsigned i;

	for (i = 0; i < s->nrows; i++)
		if (s->rows[i].word &&
		    (s->rows[i].flags & EVR_SETTING_KEEPALIVE))
			return 1;
	return 0;
}

/* A connection's keepalive, as the settings line ends: off, its idle
 * time alone, or, where the transport has knobs of its own (TCP's
 * interval and probes), the idle time named and then those. */
static void append_keepalive(char *buf, size_t len, size_t *n,
			     const struct evr_conn_settings *s)
{
	if (!s->keepalive_on)
		append(buf, len, n, " keepalive off");
	else if (!has_keepalive_rows(s))
		append(buf, len, n, " keepalive %d", s->keepalive_idle_s);
	else if (!append(buf, len, n, " keepalive idle %d",
			 s->keepalive_idle_s))
		append_rows(buf, len, n, s, EVR_SETTING_KEEPALIVE);
}

void rstream_format_settings(char *buf, size_t len, unsigned conn,
			     const char *peer,
			     const struct evr_conn_settings *s)
{
	const char *name = evr_stream_transport_name(s->transport);
	size_t n = 0;

	if (!len)
		return;
	/* the transport's name, its own settings as it words them, the
	 * keepalive: no transport is named here */
	if (append(buf, len, &n, "settings conn %u local %s peer %s: %s",
		   conn, s->local[0] ? s->local : "-",
		   s->peer[0] ? s->peer : peer && peer[0] ? peer : "-",
		   name ? name : "?") ||
	    append_rows(buf, len, &n, s, 0))
		return;
	append_keepalive(buf, len, &n, s);
	append(buf, len, &n, "\n");
}

/* What the engine refuses in terms of its settings, in the words of the
 * options a user of rstream types. */
static const struct {
	int notsup;
	const char *reason;
} notsup_words[] = {
	{ EVR_NOTSUP_DURATION, "-D/--duration with a server that does not "
	  "negotiate (an upstream rstream server) is not supported" },
	{ EVR_NOTSUP_AF_IB, "-f gid (AF_IB addressing) without an InfiniBand "
	  "port (RoCE and iWARP devices have none) is not supported" },
	{ EVR_NOTSUP_GID_TCP, "-f gid over TCP (GIDs need the RDMA "
	  "transport) is not supported" },
	{ EVR_NOTSUP_CONNS, "-c with a server that does not negotiate (an "
	  "upstream rstream server serves one connection at a time) is not "
	  "supported: leave out -c against such a server" },
};

/* A server's refusal: the option its operator would change. */
static const struct {
	int reject;
	const char *reason;
} reject_words[] = {
	{ EVR_REJECT_BUDGET, "test plan rejected: the server's memory budget "
	  "for connection buffers is taken (its --max-memory): try again "
	  "later or with fewer connections" },
	{ EVR_REJECT_CONNS, "connection refused: the server serves as many "
	  "connections as it allows (its --max-conns): try again later" },
};

/* A server's connection that met one of its limits: the limit, in buf,
 * in the words of the option that sets it; NULL for any other failure. */
static const char *server_limit(const struct evr_failure *f,
				const struct evr_stream_opts *o, char *buf,
				size_t len)
{
	struct evr_stream_opts eff = { 0 };

	if (!f || f->err >= 0 || !f->where || -f->err >= EVR_E_BASE)
		return NULL;
	if (f->detail == EVR_REJECT_BUDGET) {
		snprintf(buf, len, "%s (the server's memory budget, "
			 "--max-memory, is taken): %s", f->where,
			 strerror(-f->err));
		return buf;
	}
	if (f->detail != EVR_REJECT_CONNS)
		return NULL;
	if (o)
		eff = *o;
	evr_stream_opts_resolve(&eff, &eff);
	snprintf(buf, len, "%s (at the --max-conns limit of %u connections: "
		 "new ones are turned away until some close): %s", f->where,
		 eff.max_conns, strerror(-f->err));
	return buf;
}

/* A refusal's reason from the tables above, or NULL if they have none. */
static const char *option_words(const struct evr_failure *f)
{
	const char *why = NULL;
	size_t i;

	for (i = 0; f->err == -EVR_E_NOTSUP &&
		    i < CLI_ARRAY_SIZE(notsup_words); i++)
		if (f->detail == notsup_words[i].notsup)
			why = notsup_words[i].reason;
	for (i = 0; f->err == -EVR_E_REJECTED &&
		    i < CLI_ARRAY_SIZE(reject_words); i++)
		if (f->detail == reject_words[i].reject)
			why = reject_words[i].reason;
	return why;
}

void rstream_failure_str(const struct evr_failure *f,
			 const struct evr_stream_opts *o, char *buf, size_t len)
{
	const char *why, *words;
	char limit[256];

	why = server_limit(f, o, limit, sizeof(limit));
	words = f ? option_words(f) : NULL;
	if (words)
		why = words;
	evr_failure_format(f, why, buf, len);
}

/* rstream.1 EXIT STATUS: the engine codes with a status of their own;
 * every other failure's status is its phase's. */
static const struct {
	int code, status;
} code_status[] = {
	{ EVR_E_RESOLVE, RSTREAM_EXIT_RESOLVE },
	{ EVR_E_NODEV, RSTREAM_EXIT_NODEV },
	{ EVR_E_NOTSUP, RSTREAM_EXIT_NOTSUP },
	{ EVR_E_CANCELLED, RSTREAM_EXIT_INTERRUPTED },
	{ EVR_E_DEVGONE, RSTREAM_EXIT_DEVICE },
	{ EVR_E_PORTDOWN, RSTREAM_EXIT_DEVICE },
};

int rstream_exit_status(const struct evr_failure *f)
{
	size_t i;

	if (!f || !f->err)
		return RSTREAM_EXIT_OK;
	for (i = 0; i < CLI_ARRAY_SIZE(code_status); i++)
		if (-f->err == code_status[i].code)
			return code_status[i].status;
	/* a server at its --max-conns refused the connection */
	if (f->err == -EVR_E_REJECTED && f->detail == EVR_REJECT_CONNS)
		return RSTREAM_EXIT_CONNECT;
	switch (f->phase) {
	case EVR_PH_SETUP:
		return RSTREAM_EXIT_LOCAL;
	case EVR_PH_CONNECT:
		return RSTREAM_EXIT_CONNECT;
	default:
		return RSTREAM_EXIT_TEST;
	}
}
