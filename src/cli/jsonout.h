/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * --json: JSON Lines on stdout, one record (object) a line, built with
 * jansson.  Every record starts with "type"; every number names its unit
 * in its key.  The builders return a new reference (NULL on allocation
 * failure) so that tests can look at a record before it is written; the
 * schema is documented in rstream.1 and mckey.1 (JSON OUTPUT).
 *
 * To add a record type: a builder jo_<type>() that starts with
 * jo_record("<type>"), then jo_emit() it from the program; document it in
 * the man page's JSON OUTPUT and in doc/<tool>.schema.json (rstream's:
 * doc/rstream.schema.json.in; schema.sh checks every record against
 * it).  -c N's rows are "result" records
 * with "conn" and "conn_index"; its aggregate is a "result" with
 * "connections"; --interval's lines are "progress" records.
 */
#ifndef EVR_CLI_JSONOUT_H
#define EVR_CLI_JSONOUT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "evrdma/mcast.h"
#include "evrdma/stream.h"

struct rstream_cli;
struct mckey_cli;

/* Write rec as one compact line, flush, and drop the reference.  A NULL
 * rec (a failed allocation) writes nothing.  0 or -1. */
int jo_emit(FILE *out, json_t *rec);
/* {"type": type} */
json_t *jo_record(const char *type);

/* ---- rstream ---- */
json_t *jo_rstream_start(const struct rstream_cli *cli, const char *version);
/* The JSON Schema of the start record's "options": a key per row of
 * EVR_STREAM_OPTIONS that is echoed, required when it always is (the
 * build puts it into doc/rstream.schema.json). */
json_t *jo_rstream_options_schema(void);
/* {"type":"result", test, conn, peer, bytes_per_xfer, ...} */
json_t *jo_result(const struct evr_result *r);
/* The same with "start_ns": r->start_ns - run_t0 (the program's start on
 * evr_now_ns()'s clock); run_t0 0 leaves it out. */
json_t *jo_result_since(const struct evr_result *r, uint64_t run_t0);
/* The latency object of a result (nanoseconds). */
json_t *jo_lat(const struct evr_lat_stats *l);
/* --interval: one progress report */
json_t *jo_progress(const struct evr_progress *p);
/* listening, keepalive, accepted, conn_done, settings; NULL for a kind
 * that has no record. */
json_t *jo_info(const struct evr_info *i);
json_t *jo_settings(unsigned conn, const char *peer,
		    const struct evr_conn_settings *s);
/* type "conn_failed" or "error", with message the line the program
 * printed for f (rstream_failure_str); exit_status < 0 leaves it out. */
json_t *jo_failure(const char *type, const struct evr_failure *f,
		   const char *message, int exit_status);
/* {"type":"error", message, exit_status} */
json_t *jo_error(const char *message, int exit_status);
/* {"type":"threshold", expr, measure, op, limit, unit, passed, message,
 * and with a row that had the measure: worst, test} (--fail-if) */
struct threshold;
json_t *jo_threshold(const struct threshold *t, const char *message);

struct jo_totals {
	unsigned results;           /* result records written */
	uint64_t total_bytes;       /* their total_bytes summed */
	uint64_t elapsed_ns;        /* the program's run, wall clock */
	unsigned accepted, conn_done, conn_failed; /* server */
	/* server: connections in hand now, and whether two ever were at
	 * once (its rows say whose they are from then on) */
	int open_conns, several;
};
json_t *jo_rstream_summary(const struct jo_totals *t, int exit_status);

/* ---- mckey ---- */
json_t *jo_mckey_start(const struct mckey_cli *cli, const char *version);
json_t *jo_mc_phase(enum evr_mc_phase p);
json_t *jo_mc_join(const char *group, const struct evr_mc_joined *j);
json_t *jo_mc_cm_event(unsigned qp, const char *event, int status,
		       int is_error);
/* {"type":"error", message, qp, ...}: no exit status, more may follow */
json_t *jo_mc_failure(const struct evr_mc_failure *f);
/* "send_stats" (sender) or "recv_stats" (receiver) for one QP */
json_t *jo_mc_qp(int sender, const struct evr_mc_qp_report *q);
/* "sender_stats": one sender as one receiving QP saw it */
json_t *jo_mc_sender(unsigned qp, const struct evr_mc_sender_report *s);
json_t *jo_mckey_summary(int return_status, int exit_status,
			 uint64_t elapsed_ns, unsigned joined, unsigned nqps);

#endif
