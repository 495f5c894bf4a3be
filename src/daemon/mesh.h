/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A mesh: one rstream probe per peer of a plain-text peers file, the file
 * shared by every host (a peer whose address is this host's own is
 * skipped), re-read when it changes and on SIGHUP.  A line is
 *
 *     NAME ADDRESS [KEY=VALUE ...]      # a comment
 *
 * and its series carry peer="NAME" and the KEY="VALUE" labels.
 */
#ifndef EVR_PROBED_MESH_H
#define EVR_PROBED_MESH_H

#include <ev.h>
#include <stddef.h>
#include <stdio.h>

#include "evrdma/loop.h"
#include "pconf.h"
#include "probe.h"

#define MESH_MAX_LABELS 16
#define MESH_FILE_MAX (1u << 20)
/* how often the peers file's stat is looked at, seconds */
#define MESH_POLL_S 1.0

struct mesh_peer {
	struct probe_cfg cfg;       /* name "mesh:NAME", host ADDRESS, labels */
	struct probe *p;
};

struct mesh {
	const struct mesh_cfg *cfg; /* the daemon's current pconf */
	struct evr_loop *loop;
	struct ev_loop *evl;
	struct mesh_peer *peers;
	size_t npeers;
	unsigned seed;              /* the start jitter's */
	/* "sample": k: one run every interval_s / min(k, peers), of the
	 * next peer in turn (cursor), while fewer than k are in flight */
	ev_timer sample_w;
	size_t cursor;
	ev_timer poll_w;
	int have_stat;
	struct { long long dev, ino, size, mtime_ns, ctime_ns; } st;
};

/* One line of a peers file: 1 blank or a comment, 0 a peer (name, addr
 * and labels, 'peer="NAME",k="v"' escaped, malloc'd), -1 bad (why in
 * err).  A label name is Prometheus's [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", and none of the daemon's own (probe, peer, reason,
 * le, quantile, check, responder); each at most once. */
int mesh_parse_line(const char *line, char **name, char **addr,
		    char **labels, char *err, size_t len);
/* ADDRESS is one of this host's own (numeric addresses only). */
int mesh_addr_is_local(const char *addr);

struct mesh_counts {
	size_t peers;               /* to probe */
	size_t own;                 /* this host's own addresses */
	size_t bad;                 /* bad lines, listed twice included */
};
/* --check-config: read the peers file at path as the daemon would, each
 * bad line as "evrdma-probed: PATH:LINE: why" on out.  0 (all good), 1
 * (bad lines, which the daemon would skip) or -1 (the file cannot be
 * read: one line on out). */
int mesh_check(const char *path, FILE *out, struct mesh_counts *c);

int mesh_new(struct mesh **out, struct evr_loop *loop,
	     const struct mesh_cfg *cfg);
/* Read the peers file (now), then look at it every MESH_POLL_S. */
void mesh_start(struct mesh *m);
/* Read the peers file again: unchanged peers keep their probes. */
void mesh_reread(struct mesh *m);
void mesh_free(struct mesh *m);

#endif
