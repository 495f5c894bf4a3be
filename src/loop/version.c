/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <stddef.h>

#include "evrdma/version.h"

unsigned evr_version(const char **str)
{
	if (str)
		*str = EVR_VERSION_STRING;
	return EVR_VERSION;
}
