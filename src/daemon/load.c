/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <string.h>

#include "load.h"

int probed_load(const char *file, struct pconf **conf,
		struct mesh_list *peers, mesh_say_fn *say, void *ud,
		char *err, size_t len)
{
	memset(peers, 0, sizeof(*peers));
	if (pconf_load(conf, file, err, len))
		return LOAD_CONFIG;
	if ((*conf)->mesh && mesh_load_cfg((*conf)->mesh, peers, say,
					   ud, err, len))
		return LOAD_PEERS;
	return LOAD_OK;
}
