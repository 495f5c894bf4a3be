/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A mesh: one rstream probe per peer of a plain-text peers file (its
 * reading and checks: peers.h), the file shared by every host (a peer
 * whose address is this host's own is skipped), re-read when it changes
 * and on SIGHUP; its series carry peer="NAME" and the line's KEY="VALUE"
 * labels.
 */
#ifndef EVR_PROBED_MESH_H
#define EVR_PROBED_MESH_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "evrdma/loop.h"
#include "pconf.h"
#include "peers.h"
#include "probe.h"

/* how often the peers file's stat is looked at, seconds */
#define MESH_POLL_S 1.0

/* What /metrics says of the mesh and its file (evrdma_mesh_*). */
struct mesh_stats {
	size_t peers;               /* peers probed */
	size_t listed;              /* mesh_list.listed of the last read */
	size_t selected;            /* mesh_list.selected of the last read */
	int file_ok;                /* the last read was good */
	uint64_t file_errors;       /* reads that failed */
	double last_good_ts;        /* the last good read, epoch seconds */
};

struct mesh {
	const struct mesh_cfg *cfg; /* the daemon's current pconf */
	struct evr_loop *loop;
	struct ev_loop *evl;
	/* the peers probed: a probe each, probes[i]->cfg == &cfgs[i]
	 * (name "mesh:NAME", peer NAME, host ADDRESS, labels) */
	struct probe_cfg *cfgs;
	struct probe **probes;
	size_t npeers;
	unsigned seed;              /* the start jitter's */
	/* "sample": k: one run every interval_s / min(k, peers), of the
	 * next peer in turn (cursor), while fewer than k are in flight */
	ev_timer sample_w;
	size_t cursor;
	ev_timer poll_w;
	int have_stat;
	int missing;                /* stat() failed at the last look */
	struct mesh_stats stats;
	struct { long long dev, ino, size, mtime_ns, ctime_ns; } st;
};

int mesh_new(struct mesh **out, struct evr_loop *loop,
	     const struct mesh_cfg *cfg);
/* Probe the peers of l (mesh_load()'s, taken: l is left empty), then
 * look at the file every MESH_POLL_S. */
void mesh_start(struct mesh *m, struct mesh_list *l);
/* The peers of l (a good read, taken) in place of the running ones
 * (reconcile.h): unchanged peers keep their probes; a peer whose probe
 * cannot be made is left out (tried again at the next read). */
void mesh_set_peers(struct mesh *m, struct mesh_list *l);
/* The peers' probes, for /metrics (m NULL: none). */
struct probe *const *mesh_probes(const struct mesh *m, size_t *n);
/* A read of the file failed (l: its counts, if it was read; NULL if it
 * is gone): counted, the peers stay. */
void mesh_file_failed(struct mesh *m, const struct mesh_list *l);
/* Read the peers file again (mesh_load(), mesh_set_peers() or
 * mesh_file_failed()); -1 if it was refused. */
int mesh_reread(struct mesh *m);
void mesh_free(struct mesh *m);

#endif
