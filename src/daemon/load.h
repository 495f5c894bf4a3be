/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one check of the daemon's files, shared by --check-config, the
 * start and SIGHUP, so that the three accept and refuse the same files:
 * the configuration (pconf_load()) and, with a mesh, its peers file
 * (mesh_load()).
 */
#ifndef EVR_PROBED_LOAD_H
#define EVR_PROBED_LOAD_H

#include <stddef.h>

#include "pconf.h"
#include "peers.h"

enum { LOAD_OK = 0, LOAD_CONFIG = -1, LOAD_PEERS = -2 };

/* 0: *conf, and its mesh's peers in *peers (none without a mesh).
 * LOAD_CONFIG: the configuration is refused, *conf NULL.  LOAD_PEERS: its
 * peers file is, *conf the configuration naming it (pconf_free() it),
 * *peers only the counts (mesh_load()).  err: the one line why; each bad
 * line of the peers file went to say before. */
int probed_load(const char *file, struct pconf **conf,
		struct mesh_list *peers, mesh_say_fn *say, void *ud,
		char *err, size_t len);

#endif
