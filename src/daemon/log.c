/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "log.h"

static int use_syslog;
static int verbose;

void plog_syslog(int on)
{
	if (on && !use_syslog)
		openlog("evrdma-probed", LOG_PID, LOG_DAEMON);
	else if (!on && use_syslog)
		closelog();
	use_syslog = on;
}

void plog_verbose(int on)
{
	verbose = on;
}

void plog(enum plog_level lvl, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info",
					     "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[512];
	va_list ap;

	if (lvl == PLOG_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "evrdma-probed: %s: %s\n", names[lvl], msg);
	fflush(stderr);
	if (use_syslog)
		syslog(prio[lvl], "%s", msg);
}
