/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The status page, what a person reads in a browser at "/": this host's
 * RDMA devices and ports, its responders, its probes and mesh peers (a
 * table, and a row of cells coloured by the "status" bounds, each a link
 * to its last run's log), the peers file's state and the last runs
 * (runlog.h), each a link to its log at /run/ID.  One HTML page, its CSS
 * inline, no script and nothing fetched from elsewhere; every string
 * that came from the configuration, the peers file or the wire escaped.
 * The same data as JSON at /status.json.  Like metrics.c, it is given
 * everything it shows and does no I/O.
 */
#ifndef EVR_PROBED_STATUS_H
#define EVR_PROBED_STATUS_H

#include <stddef.h>
#include <stdio.h>

#include "evrdma/loop.h"
#include "pconf.h"
#include "probe.h"
#include "responder.h"
#include "runlog.h"

struct mesh_stats;

#define STATUS_HTML_TYPE "text/html; charset=utf-8"
#define STATUS_JSON_TYPE "application/json"
#define STATUS_TEXT_TYPE "text/plain; charset=utf-8"
/* the devices a page shows, at most */
#define STATUS_DEVS_MAX 16

/* What the page shows, as the request finds it. */
struct status_src {
	const char *host;           /* this host's name */
	const char *version;
	double now, start_ts;       /* wall clock, s */
	const struct status_cfg *cfg;
	struct probe *const *probes;
	size_t nprobes;
	struct probe *const *peers; /* the mesh's */
	size_t npeers;
	struct responder *const *responders;
	size_t nresponders;
	const struct mesh_stats *mesh;  /* NULL: no mesh */
	const char *peers_file;
	const struct evr_dev_info *devs;
	unsigned ndevs;
	const struct runring *runs;
};

/* A probe's cell: "ok", "warn", "bad", or "none" before its first run. */
const char *status_cell(const struct probe *p, const struct status_cfg *c);
/* The share of its recent runs (PROBE_RECENT) that failed, 0 to 1. */
double status_loss(const struct probe *p);
/* s with & < > " ' as HTML's entities. */
void status_escape(FILE *f, const char *s);
/* The page "/", /status.json, into a malloc'd buffer: 0 or -ENOMEM. */
int status_html(char **buf, size_t *len, const struct status_src *s);
int status_json(char **buf, size_t *len, const struct status_src *s);
/* /favicon.ico: an SVG icon (STATUS_ICON_TYPE), 0 or -ENOMEM. */
#define STATUS_ICON_TYPE "image/svg+xml"
int status_icon(char **buf, size_t *len);
/* /run/ID's text: 1, 0 when url names no run the ring holds, -ENOMEM. */
int status_run(char **buf, size_t *len, const struct runring *r,
	       const char *url);

#endif
