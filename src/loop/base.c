/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

/* The loop layer's leaves: the clock, the trace line, fd, socket and
 * timer helpers.  Every file of the library may call these; they call
 * nothing of evrdma's, so no circle of files runs through them
 * (scripts/layers.sh). */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "loop.h"

void evr__trace(struct evr_loop *l, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!l->trace)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	l->trace(l->trace_ud, line);
}

uint64_t evr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int evr__fd_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	if (fcntl(fd, F_SETFL, fl) < 0)
		return -errno;
	return 0;
}

int evr__fd_set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

char *evr__strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

const char *evr__family_name(int family)
{
	return family == AF_INET ? "IPv4" : family == AF_INET6 ? "IPv6" :
	       family == AF_IB ? "AF_IB" : "another family";
}

int evr__setsockopt_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* (Re)arm w after secs from now, then every repeat (0: once); secs <= 0
 * only stops it.  From now, not from the loop's time, which is as old as
 * its last pass: a step begun long after it (or before the loop first
 * ran) would time out that much early, and a pace's first ticks would
 * come at once, one a loop pass. */
static void timer_from_now(struct ev_loop *l, ev_timer *w, double secs,
			   double repeat)
{
	ev_timer_stop(l, w);
	if (secs > 0) {
		ev_now_update(l);
		ev_timer_set(w, secs, repeat);
		ev_timer_start(l, w);
	}
}

void evr__timer_every(struct ev_loop *l, ev_timer *w, double secs)
{
	timer_from_now(l, w, secs, secs);
}

void evr__timer_restart(struct ev_loop *l, ev_timer *w, double secs)
{
	timer_from_now(l, w, secs, 0);
}
