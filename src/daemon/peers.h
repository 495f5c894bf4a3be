/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The mesh's peers file (peers.c), shared by every host.  A line is
 *
 *     NAME ADDRESS [KEY=VALUE ...]      # a comment
 *
 * Read whole and checked: all good, or refused with every bad line named
 * (mesh_load()); then the peers this host probes chosen (mesh_select()).
 * The running mesh that probes them is mesh.h's.
 */
#ifndef EVR_PROBED_PEERS_H
#define EVR_PROBED_PEERS_H

#include <stddef.h>

#include "pconf.h"

#define MESH_MAX_LABELS 16
#define MESH_FILE_MAX (1u << 20)

/* One line of a peers file: 1 blank or a comment, 0 a peer (name, addr
 * and labels, 'peer="NAME",k="v"' escaped, malloc'd), -1 bad (why in
 * err).  A label name is Prometheus's [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", and none of the daemon's own (probe, peer, reason,
 * le, quantile, check, responder); each at most once. */
int mesh_parse_line(const char *line, char **name, char **addr,
		    char **labels, char *err, size_t len);
/* ADDRESS is one of this host's own (numeric addresses only). */
int mesh_addr_is_local(const char *addr);

/* Bounds of a peers file, checked before they size anything: its bytes
 * (MESH_FILE_MAX), a line's, the peers it lists; bad lines are named one
 * by one up to MESH_REPORT_MAX, the rest only counted. */
#define MESH_LINE_MAX 4096
#define MESH_PEERS_MAX 100000
#define MESH_REPORT_MAX 10

struct mesh_entry {
	char *name, *addr, *labels; /* as mesh_parse_line() */
	unsigned lineno;
};
/* A peers file read and checked (mesh_load()). */
struct mesh_list {
	struct mesh_entry *e;       /* the peers to probe, in file order */
	size_t n;
	size_t own;                 /* lines naming this host's own address */
	/* peer lines, good or bad, this host's own excluded: what the file
	 * asks this host to probe (also counted when the file is refused) */
	size_t listed;
	size_t bad;                 /* bad lines, a peer listed twice included */
	/* of listed, those the selection ("group_by") keeps: every one
	 * without a selection; a line that cannot be placed (bad, beyond
	 * MESH_PEERS_MAX) counts as kept, so that a refused file shows */
	size_t selected;
	size_t groups;              /* groups seen by mesh_select() */
	int read;                   /* the file was read (the counts hold) */
	/* this host: its line of the file (of several, the least name),
	 * self_labels NULL when it has none; self_name then the seed of its
	 * choices (its host name) */
	char *self_name, *self_labels;
};
/* Where mesh_load() names each bad line, "PATH:LINE: why". */
typedef void mesh_say_fn(void *ud, const char *msg);

/* Read and check the peers file at path: the one check of it, for
 * --check-config, the start, SIGHUP and a change seen by the poll.  0:
 * the file is good, its peers in *l (mesh_list_free()).  -1: refused,
 * err says why in one line ("mesh: PATH: ..."), each bad line went to
 * say first; *l holds no peer, only the counts.  Refused: a file that
 * cannot be read, is not a regular file, is larger than MESH_FILE_MAX,
 * lists no peer line at all, more than MESH_PEERS_MAX, or has a bad
 * line (a NUL byte, a line longer than MESH_LINE_MAX, a line that
 * mesh_parse_line() refuses, a peer listed twice). */
int mesh_load(const char *path, struct mesh_list *l, mesh_say_fn *say,
	      void *ud, char *err, size_t len);
/* mesh_load() of cfg's peers_file, then mesh_select() by its group_by
 * and across (of a refused file too: its counts hold). */
int mesh_load_cfg(const struct mesh_cfg *cfg, struct mesh_list *l,
		  mesh_say_fn *say, void *ud, char *err, size_t len);
/* Keep the peers of l this host probes, by the label group_by: a group is
 * the peers with one value of it (no such label: the value "").  This
 * host's group (its own line's value) all, and of each other group
 * min(across, its size), chosen so that the fleet's hosts spread over
 * each group's members: the members of a group sorted by name, this
 * host's rank r in its own group, a hash h of the two groups' values;
 * of a group of s, the members (h + r * across + j) mod s, j < across.
 * Equal groups of n: each host is probed by the n - 1 of its group and
 * by exactly across of each other group.  This host not in the file
 * (self_labels NULL): no group of its own, across of every group, r a
 * hash of self_name.  l->e keeps its file order; l->selected and
 * l->groups are set.  0, or -ENOMEM (l unchanged). */
int mesh_select(struct mesh_list *l, const char *group_by, unsigned across);
/* name[0..n) can be a label of a peers file. */
int mesh_label_name_ok(const char *name, size_t n);
void mesh_list_free(struct mesh_list *l);

#endif
