/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The unit suites' sched_yield() and getrusage() (fakecpu.h). */
#include "config.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "evrdma/loop.h"
#include "fakecpu.h"

unsigned fake_yields;
unsigned fake_yield_taken_at;
uint64_t fake_yield_first_ns;
long fake_taken;

int sched_yield(void)
{
	if (!fake_yields++)
		fake_yield_first_ns = evr_now_ns();
	if (fake_yields == fake_yield_taken_at)
		fake_taken++;
	return (int)syscall(SYS_sched_yield);
}

int getrusage(int who, struct rusage *ru)
{
	int r = (int)syscall(SYS_getrusage, who, ru);

	if (!r)
		ru->ru_nivcsw = fake_taken;
	return r;
}
