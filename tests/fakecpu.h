/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_yield() and getrusage() as the scheduler's CPU offer sees them
 * (src/stream/session/sched.c offers the CPU with one and sees with the
 * other whether another task took it), for the unit suites that link
 * tests/fakecpu.c: the yields are counted, and the CPU "taken"
 * (ru_nivcsw) is fake_taken, not the kernel's count (which a busy host
 * moves at any time: CI's make -j2 preempted a 20 ms poll in each of five
 * tries).  A test bumps it where another task would have run: at the
 * yield numbered fake_yield_taken_at (from 1; 0: none), or by hand.  The
 * kernel's count is tests/e2e/modes.sh's (a pair on one CPU).
 */
#ifndef EVR_TESTS_FAKECPU_H
#define EVR_TESTS_FAKECPU_H

#include <stdint.h>

extern unsigned fake_yields;
extern unsigned fake_yield_taken_at;
extern uint64_t fake_yield_first_ns;    /* when the first yield came */
extern long fake_taken;

#endif
