/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Host checks: can this host run RDMA for an address, and if not, what
 * to change.  Each check reads facts from the host (rlimits,
 * capabilities, /dev/infiniband, /sys/class/infiniband, the netdev of
 * the address) and gives a verdict, the fact in one line and the fix.
 * rstream and mckey run them before an RDMA run and for --check; a
 * daemon runs them per address on its own schedule.  No check opens a
 * device or sends anything: they are cheap and safe to repeat.
 */
#ifndef EVRDMA_HOSTCHECK_H
#define EVRDMA_HOSTCHECK_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "evrdma/mcast.h"
#include "evrdma/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The checks, in the order they run and print: X(CODE, name).  The name
 * is stable (--check --json's "check", a daemon's label).  Checks are
 * only ever added at the end. */
#define EVR_HOSTCHECKS(X) \
	X(MEMLOCK, "memlock") \
	X(VERBS_DEV, "verbs_device") \
	X(RDMA_CM, "rdma_cm") \
	X(ADDR_DEV, "address_device") \
	X(PORT, "port_state") \
	X(GID, "gid_table") \
	X(MTU, "path_mtu") \
	X(NOFILE, "nofile")

enum evr_hc_check {
#define EVR__HC_ENUM(code, name) EVR_HC_##code,
	EVR_HOSTCHECKS(EVR__HC_ENUM)
#undef EVR__HC_ENUM
	EVR_HC_COUNT
};

enum evr_hc_verdict {
	EVR_HC_OK = 0,
	EVR_HC_FAIL,
	EVR_HC_SKIP,    /* not applicable (or no RDMA device to look at) */
};

/* What a run needs; a zero field skips the check that reads it. */
struct evr_hc_need {
	int rdma;                /* the run uses RDMA (else memlock, the
				  * device nodes and the ports are skipped) */
	uint64_t memlock;        /* bytes it will lock (evr_stream_memlock,
				  * evr_mcast_memlock) */
	unsigned long fds;       /* descriptors it will hold
				  * (evr_stream_transport_fds) */
	unsigned long fds_raise; /* 1: the program raises its soft
				  * RLIMIT_NOFILE to the hard one first */
	uint32_t msg_size;       /* a UD message's payload (mckey -S) */
	const char *addr;        /* the local address (-b), numeric; NULL:
				  * any device will do */
	const char *device;      /* the RDMA device the run used, when a
				  * failure named it (a client without
				  * -b); NULL: addr's, if any */
};

/* Where the facts come from.  NULL (or a zero field) means this host,
 * this process; tests point the roots at a fake tree. */
struct evr_hc_env {
	const char *sys_root;    /* "" : /sys/class/infiniband, /sys/class/net */
	const char *dev_root;    /* "" : /dev/infiniband */
	const char *proc_root;   /* "" : /proc/self/status (CapEff) */
	const struct rlimit *memlock, *nofile; /* NULL: getrlimit() */
	int creds_set;           /* 1: uid, gid, groups below, not ours */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	/* The interface that holds addr (numeric), into ifname; 0, or -1
	 * when none does.  NULL: getifaddrs(). */
	int (*addr_ifname)(const char *addr, char *ifname, size_t len);
};

struct evr_hc_row {
	enum evr_hc_check check;
	enum evr_hc_verdict verdict;
	char fact[192];          /* what the host has, one line */
	char fix[256];           /* how to change it ("" when ok) */
};

struct evr_hc_report {
	struct evr_hc_row rows[EVR_HC_COUNT];
	unsigned nfail;
	char device[64];         /* the RDMA device of addr, "" if none */
	char ifname[32];         /* the interface of addr, "" if none */
};

/* Run every check; 0, or -EINVAL for a bad addr.  env NULL: this host. */
int evr_hostcheck_run(const struct evr_hc_env *env,
		      const struct evr_hc_need *need,
		      struct evr_hc_report *out);

/* The stable name of a check ("memlock"), NULL when out of range. */
const char *evr_hostcheck_name(enum evr_hc_check c);

/* "ok", "FAIL" or "skip". */
const char *evr_hostcheck_verdict_str(enum evr_hc_verdict v);

/* The bytes a run of these options locks over its transport (RDMA's
 * registered buffers and queues, every connection of -c N, rounded up
 * to pages; 0 for a transport that locks nothing, TCP and UDP): what
 * RLIMIT_MEMLOCK must hold without CAP_IPC_LOCK.  A server's figure is
 * one connection's. */
uint64_t evr_stream_memlock(const struct evr_stream_opts *o);
uint64_t evr_mcast_memlock(const struct evr_mcast_opts *o);

/* What a run of these options needs of the host, from its transport's
 * row, in *need (zeroed first): rdma when the transport uses an RDMA
 * device, memlock (the functions above), fds for a stream client
 * (evr_stream_transport_fds() of its conns; not for a server, nor
 * mcast), msg_size for a multicast run that sends or receives messages
 * (its size), addr the bind address as given.  fds_raise is left 0: it is the program's
 * to say.  0, or -EINVAL for an unknown transport. */
int evr_stream_need(const struct evr_stream_opts *o,
		    struct evr_hc_need *need);
int evr_mcast_need(const struct evr_mcast_opts *o, struct evr_hc_need *need);

#ifdef __cplusplus
}
#endif
#endif
