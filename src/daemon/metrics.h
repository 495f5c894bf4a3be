/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * /metrics: the probes' counters in Prometheus' text exposition format,
 * version 0.0.4.  Every family has its HELP and TYPE lines, even with no
 * samples; label values are escaped as the format says.
 */
#ifndef EVR_PROBED_METRICS_H
#define EVR_PROBED_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hguard.h"
#include "probe.h"
#include "responder.h"

struct mesh_stats;

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_daemon {
	const char *version;
	uint64_t reloads, reload_failures;
	int last_reload_ok;
	double start_ts;
	struct evr_loop *loop;  /* its name lookups; NULL: none */
	const struct http_stats *http;  /* /metrics' connections, or NULL */
};

/* What the page shows of the running set, as the scrape finds it: the
 * configured probes, the mesh's (mesh_probes()), the responders and the
 * mesh's file. */
struct metrics_src {
	struct probe *const *probes;
	size_t nprobes;
	struct probe *const *peers;
	size_t npeers;
	struct responder *const *responders;
	size_t nresponders;
	const struct mesh_stats *mesh; /* NULL: no mesh */
};

/* Escape a label value: backslash, double quote and newline. */
void metrics_escape(FILE *f, const char *s);
/* The whole page into a malloc'd buffer (s NULL: nothing running).  0 or
 * -ENOMEM. */
int metrics_render(char **buf, size_t *len, const struct metrics_src *s,
		   const struct metrics_daemon *d);

#endif
