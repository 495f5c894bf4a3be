/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What every fuzz target shares: libFuzzer's entry point, and a check
 * that aborts (a finding, for libFuzzer and for the replay alike). */
#ifndef EVR_FUZZ_H
#define EVR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                   \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n",   \
				__FILE__, __LINE__, #cond);                 \
			abort();                                            \
		}                                                           \
	} while (0)

#endif
