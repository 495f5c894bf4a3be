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

#include "probe.h"
#include "responder.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_daemon {
	const char *version;
	uint64_t reloads, reload_failures;
	int last_reload_ok;
	double start_ts;
	struct responder *const *responders;
	size_t nresponders;
};

/* Escape a label value: backslash, double quote and newline. */
void metrics_escape(FILE *f, const char *s);
/* The whole page into a malloc'd buffer.  0 or -ENOMEM. */
int metrics_render(char **buf, size_t *len, struct probe *const *probes,
		   size_t n, const struct metrics_daemon *d);

#endif
