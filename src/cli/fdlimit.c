/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "fdlimit.h"

int fdlimit_plan(unsigned long need, const struct rlimit *cur,
		 unsigned long hard_max, struct rlimit *out)
{
	*out = *cur;
	if (cur->rlim_cur == RLIM_INFINITY || need <= cur->rlim_cur)
		return 0;
	if (cur->rlim_max == RLIM_INFINITY || need <= cur->rlim_max) {
		out->rlim_cur = cur->rlim_max;
		return 0;
	}
	if (need <= hard_max) {
		out->rlim_cur = need;
		out->rlim_max = need;
		return 0;
	}
	return -1;
}

/* fs.nr_open: how far a privileged process may raise its hard limit. */
static unsigned long nr_open(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 1048576;
}

/*
 * Raise the soft limit to the hard one, as far as the kernel lets us,
 * and note the new soft limit in *limit when it took.
 */
static void raise_to_hard(const struct rlimit *cur, unsigned long *limit)
{
	struct rlimit want;

	if (cur->rlim_cur == cur->rlim_max)
		return;
	want = *cur;
	want.rlim_cur = cur->rlim_max;
	if (!setrlimit(RLIMIT_NOFILE, &want))
		*limit = want.rlim_cur;
}

int fdlimit_raise(unsigned long need, unsigned long *limit)
{
	struct rlimit cur, want;

	if (getrlimit(RLIMIT_NOFILE, &cur)) {
		*limit = 0;
		return need ? -1 : 0;
	}
	*limit = cur.rlim_cur;
	if (!need) {
		/* a server: as many as it may have, without asking */
		raise_to_hard(&cur, limit);
		return 0;
	}
	if (fdlimit_plan(need, &cur, geteuid() == 0 ? nr_open() : 0, &want))
		return -1;
	if (want.rlim_cur == cur.rlim_cur && want.rlim_max == cur.rlim_max)
		return 0;
	if (setrlimit(RLIMIT_NOFILE, &want))
		return -1; /* not privileged after all (no CAP_SYS_RESOURCE) */
	*limit = want.rlim_cur;
	return 0;
}
