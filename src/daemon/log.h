/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The daemon's log: one line per event on stderr, "evrdma-probed: LEVEL:
 * text", and the same text to syslog(3) after plog_syslog().  The sink is
 * process-wide, as syslog itself is.
 */
#ifndef EVR_PROBED_LOG_H
#define EVR_PROBED_LOG_H

enum plog_level { PLOG_ERR = 0, PLOG_WARN, PLOG_INFO, PLOG_DEBUG };

void plog_syslog(int on);
void plog_verbose(int on);
void plog(enum plog_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "%zu probe%s", n, PLOG_S(n): 1 probe, 0 or 2 probes */
#define PLOG_S(n) ((n) == 1 ? "" : "s")

#endif
