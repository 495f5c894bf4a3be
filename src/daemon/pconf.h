/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma-probed's configuration: a JSON file (parsed with jansson) naming
 * the HTTP listen address and the probes.  Parsing is strict: unknown keys,
 * wrong types and out-of-range values are errors, reported as one line.
 */
#ifndef EVR_PROBED_PCONF_H
#define EVR_PROBED_PCONF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "evrdma/stream.h"
#include "evrdma/mcast.h"
#include "hguard.h"

#define PCONF_DEFAULT_ADDR "127.0.0.1"
#define PCONF_DEFAULT_PORT 9471
#define PCONF_NAME_MAX 64
/* name lookups (evr_loop_set_lookups()): an address is kept a minute, a
 * failure 10 s, and a name server has 5 s to answer */
#define PCONF_DNS_CACHE_S 60
#define PCONF_DNS_NEGATIVE_S 10
#define PCONF_DNS_TIMEOUT_S 5
/* a mesh's "sample": peers probed per interval, at most */
#define MESH_SAMPLE_MAX 100000
/* a mesh's "across": peers of each other group, at most */
#define MESH_ACROSS_MAX 1000

enum probe_type { PROBE_RSTREAM = 0, PROBE_MCKEY };

struct probe_cfg {
	char *name;
	enum probe_type type;
	double interval_s, timeout_s;
	json_t *raw;            /* the probe's object: equal => unchanged */
	/* rstream */
	char *host, *port, *bind;
	enum evr_stream_transport transport;
	/* the run's options: what every probe runs (a custom test, -T a,
	 * percentiles, the plan sent), the kind's test, and the keys of
	 * EVR_STREAM_OPTIONS' rows a probe takes (size, count, iters,
	 * verify, negotiate: force_negotiate, or no_negotiate for an
	 * upstream server, poll_us...); host, bind, port, transport and the
	 * stall timeout are filled in for each run (probe.c) */
	struct evr_stream_opts o;
	/* 1 (the default): one of the agent's runs on its path at a time,
	 * the others wait; 0: its runs neither wait for the path nor hold
	 * it (a load beside other probes, asked for) */
	int exclusive;
	/* a mesh peer's labels beyond probe="...": 'peer="NAME",k="v"'
	 * (escaped), or NULL */
	char *labels;
	/* a mesh peer's name, its line's NAME (the probe's name is then
	 * "mesh:NAME"), or NULL */
	char *peer;
	/* mckey */
	char *group;
	enum evr_mc_transport mc_transport;
	int sender;
	unsigned mc_count, mc_size;
	double settle_s;
	unsigned udp_port;
};

/* An rstream server the daemon runs in its loop, for its peers' probes:
 * the engine's server mode with its limits (rstream(1), SERVER LIMITS). */
struct responder_cfg {
	char *label;            /* "tcp:127.0.0.1:7471", the metrics' label */
	enum evr_stream_transport transport;
	unsigned port;
	char *bind;             /* NULL: every address */
	/* the keys of EVR_STREAM_OPTIONS' rows a responder takes:
	 * max_conns and max_memory (0: the responder's defaults),
	 * stall_ms, and the test a client that sends no plan (upstream
	 * rstream) runs: custom 0, rstream's series; 1, size x count x
	 * iters; transport, port and bind are filled in by responder.c */
	struct evr_stream_opts o;
	json_t *raw;            /* equal => unchanged */
};

/* A mesh: one rstream probe per line of peers_file (mesh.h), with the
 * probe keys of tmpl (its name and host are the peer's). */
struct mesh_cfg {
	char *peers_file;
	/* "sample": k peers a interval, in turn (0: every peer every
	 * interval) */
	unsigned sample;
	/* "group_by": a label of the peers file (NULL: every peer); the
	 * peers whose value is this host's all, and "across" of each other
	 * group (mesh_select()) */
	char *group_by;
	unsigned across;
	struct probe_cfg tmpl;
	json_t *raw;            /* equal => the same probes */
};

/* "status": the status page's (status.h): the last runs it keeps with
 * their logs, and where a peer's cell turns from ok to warn to bad:
 * its last run's p99 round trip against two bounds (RDMA's scale by
 * default: 50 us and 500 us), the share of its recent runs that failed
 * (any: warn; over loss_bad: bad), and its last run's failure (bad) */
#define PCONF_STATUS_RUNS 100
#define PCONF_STATUS_P99_OK_US 50
#define PCONF_STATUS_P99_WARN_US 500
#define PCONF_STATUS_LOSS_BAD 0.1
struct status_cfg {
	unsigned runs;
	double p99_ok_us, p99_warn_us;
	double loss_bad;
};

struct pconf {
	char *listen_addr;
	unsigned listen_port;
	struct http_limits http;        /* "http": its connections */
	struct status_cfg status;       /* "status": the status page */
	size_t nprobes;
	struct probe_cfg *probes;
	size_t nresponders;
	struct responder_cfg *responders;
	struct mesh_cfg *mesh;  /* NULL: none */
	struct evr_lookup_opts dns; /* dns_cache_s, dns_negative_cache_s,
				     * dns_timeout_s */
};

/* Parse FILE.  0, or -1 with one line (no newline) in err naming the file
 * and the line or the field. */
int pconf_load(struct pconf **out, const char *file, char *err, size_t len);
void pconf_free(struct pconf *c);
/* A copy of a probe's configuration (strings duplicated, raw shared);
 * 0 or -ENOMEM.  Free with pconf_probe_fini(). */
int pconf_probe_copy(struct probe_cfg *dst, const struct probe_cfg *src);
void pconf_probe_fini(struct probe_cfg *p);
/* The two probe configurations are the same (nothing to restart). */
int pconf_probe_equal(const struct probe_cfg *a, const struct probe_cfg *b);
int pconf_responder_equal(const struct responder_cfg *a,
			  const struct responder_cfg *b);

#endif
