/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* RLIMIT_NOFILE for many connections (rstream -c N, a busy server). */
#ifndef EVR_CLI_FDLIMIT_H
#define EVR_CLI_FDLIMIT_H

#include <sys/resource.h>

/*
 * The limits to set so that need descriptors fit: the soft limit goes up
 * to the hard one (anyone may do that), and past it only when privileged
 * (hard_max: what the kernel allows, fs.nr_open; 0 when not privileged).
 * Returns 0 with *out the limits to set (== cur when nothing changes), or
 * -1 when need cannot be had.
 */
int fdlimit_plan(unsigned long need, const struct rlimit *cur,
		 unsigned long hard_max, struct rlimit *out);

/*
 * Make room for need descriptors in this process (need 0: just raise the
 * soft limit to the hard one, as a server does).  Returns 0, or -1 with
 * *limit the soft limit that stays.
 */
int fdlimit_raise(unsigned long need, unsigned long *limit);

#endif
