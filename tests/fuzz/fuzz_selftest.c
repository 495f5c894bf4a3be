/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Not a fuzz target: proves that the replay fails when a target aborts.
 * tests/fuzz/replay_selftest runs it over corpus/selftest, whose input
 * "crash" makes it abort; the suite expects that test to fail
 * (XFAIL_TESTS), so a replay that passed whatever happened would show.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 5 && !memcmp(data, "crash", 5))
		abort();
	return 0;
}
