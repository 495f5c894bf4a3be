/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host checks (include/evrdma/hostcheck.h): each reads what the
 * kernel shows in /proc, /sys and /dev, compares it with what the run
 * needs and says, in one line each, what it found and what to change.
 * Nothing here opens a device: a check must be safe to repeat from a
 * daemon and must work where the device is exactly what is missing.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"

#define CAP_DAC_OVERRIDE_BIT 1  /* linux/capability.h */
#define CAP_IPC_LOCK_BIT 14
#define CAP_SYS_RESOURCE_BIT 24
#define MAX_DEVS 16
#define MAX_PORTS 4
#define MAX_GIDS 256

static const char *const names[] = {
#define EVR__HC_NAME(code, name) name,
	EVR_HOSTCHECKS(EVR__HC_NAME)
#undef EVR__HC_NAME
};

const char *evr_hostcheck_name(enum evr_hc_check c)
{
	return (unsigned)c < EVR_HC_COUNT ? names[c] : NULL;
}

const char *evr_hostcheck_verdict_str(enum evr_hc_verdict v)
{
	switch (v) {
	case EVR_HC_OK:
		return "ok";
	case EVR_HC_FAIL:
		return "FAIL";
	default:
		return "skip";
	}
}

/* What one run of the checks knows: the environment made whole, the
 * address parsed, the device found for it. */
struct hc {
	const struct evr_hc_env *env;
	const struct evr_hc_need *need;
	struct evr_hc_report *out;
	const char *sys, *dev, *proc;
	struct rlimit memlock, nofile;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	gid_t own_groups[64];
	int real_creds;         /* access(2) may know better (ACLs) */
	char devs[MAX_DEVS][64];
	int ndevs;
	int has_addr;
	unsigned char agid[16]; /* the address as a GID (v4-mapped) */
	char addr[INET6_ADDRSTRLEN];
	int dev_idx, port;      /* the address's device and port, -1/0 */
	int ib;                 /* that port's link layer is InfiniBand */
	int iwarp;              /* that device is an iWARP RNIC */
	int soft_iwarp;         /* ... of software (siw): no parent device */
};

static void set(struct evr_hc_row *r, enum evr_hc_verdict v,
		const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set(struct evr_hc_row *r, enum evr_hc_verdict v,
		const char *fix, const char *fmt, ...)
{
	va_list ap;

	r->verdict = v;
	va_start(ap, fmt);
	vsnprintf(r->fact, sizeof(r->fact), fmt, ap);
	va_end(ap);
	snprintf(r->fix, sizeof(r->fix), "%s", fix ? fix : "");
}

/* The first line of a small file, without its newline; 0 or -1. */
static int read_line(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int read_line(char *buf, size_t len, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	FILE *f;
	int ok;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* "64 KiB", "2.1 MiB": a size as people read a limit. */
static void size_str(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b / 1024));
	else if (b < 1024ull * 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
}

static void limit_str(char *buf, size_t len, rlim_t v)
{
	if (v == RLIM_INFINITY)
		snprintf(buf, len, "unlimited");
	else
		size_str(buf, len, (uint64_t)v);
}

/* Is capability BIT in our effective set?  1 or 0; -1 when
 * /proc/self/status says nothing (then uid 0 stands for the privileges a
 * root process normally has).  Root is not enough: a container's root, or
 * one under a systemd CapabilityBoundingSet, may lack them. */
static int cap_eff(const struct hc *h, int bit)
{
	char path[512], line[256];
	unsigned long long eff;
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/self/status", h->proc);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = (eff >> bit) & 1;
			break;
		}
	fclose(f);
	return found;
}

/* A privilege root has by its capability BIT (not by its uid). */
static int privileged(const struct hc *h, int bit)
{
	int c = cap_eff(h, bit);

	return c < 0 ? h->uid == 0 : c;
}

/* ---- the checks ---- */

static void check_memlock(struct hc *h, struct evr_hc_row *r)
{
	char lim[96], need[32], hard[32], fix[256];
	uint64_t kib;

	if (!h->need->rdma) {
		set(r, EVR_HC_SKIP, NULL, "not an RDMA run: nothing is locked");
		return;
	}
	limit_str(lim, sizeof(lim), h->memlock.rlim_cur);
	/* soft-iWARP pins against the limit whatever CAP_IPC_LOCK says
	 * (siw_umem_get(), Linux 6.1): only the limit counts there */
	if (h->soft_iwarp)
		snprintf(lim + strlen(lim), sizeof(lim) - strlen(lim),
			 " (soft-iWARP counts it even with CAP_IPC_LOCK)");
	size_str(need, sizeof(need), h->need->memlock);
	if (h->memlock.rlim_cur == RLIM_INFINITY) {
		set(r, EVR_HC_OK, NULL, "RLIMIT_MEMLOCK unlimited, this run "
		    "locks about %s", need);
		return;
	}
	if (cap_eff(h, CAP_IPC_LOCK_BIT) == 1 && !h->soft_iwarp) {
		set(r, EVR_HC_OK, NULL, "CAP_IPC_LOCK: locked memory is not "
		    "limited (RLIMIT_MEMLOCK %s), this run locks about %s",
		    lim, need);
		return;
	}
	if (h->need->memlock <= h->memlock.rlim_cur) {
		set(r, EVR_HC_OK, NULL, "RLIMIT_MEMLOCK %s, this run locks "
		    "about %s", lim, need);
		return;
	}
	/* ulimit -l counts KiB; a little room over the estimate */
	kib = (h->need->memlock + h->need->memlock / 8 + 1023) / 1024;
	limit_str(hard, sizeof(hard), h->memlock.rlim_max);
	snprintf(fix, sizeof(fix), "raise it: ulimit -l %llu (or unlimited; "
		 "the hard limit is %s), /etc/security/limits.conf \"USER - "
		 "memlock %llu\", systemd LimitMEMLOCK=%lluK%s",
		 (unsigned long long)kib, hard, (unsigned long long)kib,
		 (unsigned long long)kib,
		 h->soft_iwarp ? "" : "; or grant CAP_IPC_LOCK");
	set(r, EVR_HC_FAIL, fix, "RLIMIT_MEMLOCK %s, this run locks about %s",
	    lim, need);
}

static int in_groups(const struct hc *h, gid_t g)
{
	int i;

	if (g == h->gid)
		return 1;
	for (i = 0; i < h->ngroups; i++)
		if (h->groups[i] == g)
			return 1;
	return 0;
}

/* The node's permission bits (rwx) that apply to the run's user: all
 * with CAP_DAC_OVERRIDE, else its owner's, group's or others'. */
static unsigned node_bits(const struct hc *h, const struct stat *st)
{
	if (privileged(h, CAP_DAC_OVERRIDE_BIT))
		return 7;
	if (st->st_uid == h->uid)
		return (st->st_mode >> 6) & 7;
	if (in_groups(h, st->st_gid))
		return (st->st_mode >> 3) & 7;
	return st->st_mode & 7;
}

/* The node's owner and group by name, or by number when they have none. */
static void node_owner(const struct stat *st, char *owner, size_t olen,
		       char *group, size_t glen)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);

	if (pw)
		snprintf(owner, olen, "%s", pw->pw_name);
	else
		snprintf(owner, olen, "%u", (unsigned)st->st_uid);
	if (gr)
		snprintf(group, glen, "%s", gr->gr_name);
	else
		snprintf(group, glen, "%u", (unsigned)st->st_gid);
}

/* What a node the run cannot open read-write lacks, in the fact's words. */
static const char *lacks_str(int rd, int wr)
{
	if (!rd && !wr)
		return "not readable or writable";
	return !rd ? "not readable" : "not writable";
}

/*
 * A device node the run opens read-write.  0 when it can, else -1 with
 * the row failed: the node, what it lacks, its mode and owner, and the
 * fix (the rdma group, or a udev rule for the node's name).
 */
static int check_node(struct hc *h, struct evr_hc_row *r, const char *node,
		      const char *udev_name, const char *module)
{
	char path[512], fix[256], owner[64], group[64], lacks[40];
	struct stat st;
	unsigned bits;
	int rd, wr;

	snprintf(path, sizeof(path), "%s/dev/infiniband/%s", h->dev, node);
	if (stat(path, &st)) {
		snprintf(fix, sizeof(fix), "load the kernel module: modprobe "
			 "%s (rdma-core's service loads it at boot)", module);
		set(r, EVR_HC_FAIL, fix, "/dev/infiniband/%s: %s", node,
		    strerror(errno));
		return -1;
	}
	bits = node_bits(h, &st);
	rd = !!(bits & 4);
	wr = !!(bits & 2);
	/* an ACL may grant what the mode bits do not */
	if ((!rd || !wr) && h->real_creds && !access(path, R_OK | W_OK))
		rd = wr = 1;
	if (rd && wr) {
		set(r, EVR_HC_OK, NULL, "/dev/infiniband/%s readable and "
		    "writable, mode %04o", node, (unsigned)(st.st_mode & 07777));
		return 0;
	}
	node_owner(&st, owner, sizeof(owner), group, sizeof(group));
	snprintf(lacks, sizeof(lacks), "%s", lacks_str(rd, wr));
	snprintf(fix, sizeof(fix), "give the user the device: a udev rule "
		 "KERNEL==\"%s\", GROUP=\"rdma\", MODE=\"0660\" and usermod "
		 "-aG rdma USER (then log in again)", udev_name);
	set(r, EVR_HC_FAIL, fix, "/dev/infiniband/%s: %s by uid %u, mode "
	    "%04o %s:%s", node, lacks, (unsigned)h->uid,
	    (unsigned)(st.st_mode & 07777), owner, group);
	return -1;
}

/* The uverbs node of device devs[i], from the infiniband_verbs class. */
static int uverbs_of(const struct hc *h, int i, char *node, size_t len)
{
	char path[512], ibdev[64];
	struct dirent *e;
	DIR *d;
	int found = -1;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband_verbs", h->sys);
	d = opendir(path);
	if (!d)
		return -1;
	while (found && (e = readdir(d)))
		if (!strncmp(e->d_name, "uverbs", 6) &&
		    !read_line(ibdev, sizeof(ibdev), "%s/%s/ibdev", path,
			       e->d_name) &&
		    !strcmp(ibdev, h->devs[i])) {
			snprintf(node, len, "%.63s", e->d_name);
			found = 0;
		}
	closedir(d);
	return found;
}

/* A check of the devices: skipped (1) for TCP or UDP, or without one. */
static int skip_no_device(const struct hc *h, struct evr_hc_row *r)
{
	if (!h->need->rdma)
		set(r, EVR_HC_SKIP, NULL, "not an RDMA run");
	else if (!h->ndevs)
		set(r, EVR_HC_SKIP, NULL, "no RDMA device");
	return !h->need->rdma || !h->ndevs;
}

static void check_verbs(struct hc *h, struct evr_hc_row *r)
{
	struct evr_hc_row first;
	char node[64];
	int i, failed = 0;

	if (skip_no_device(h, r))
		return;
	/* The address's device; without one, any device that the user
	 * may open will do (a container may see every device in sysfs and
	 * have the nodes of some): the first failure is said otherwise. */
	for (i = 0; i < h->ndevs; i++) {
		if (h->dev_idx >= 0 && i != h->dev_idx)
			continue;
		if (uverbs_of(h, i, node, sizeof(node)))
			set(r, EVR_HC_FAIL, "load the kernel module: modprobe "
			    "ib_uverbs", "%s has no verbs device node (no "
			    "uverbs in /sys/class/infiniband_verbs)",
			    h->devs[i]);
		else if (!check_node(h, r, node, "uverbs*", "ib_uverbs")) {
			snprintf(r->fact + strlen(r->fact),
				 sizeof(r->fact) - strlen(r->fact), " (%s)",
				 h->devs[i]);
			return;
		}
		if (!failed++)
			first = *r;
	}
	if (failed)
		*r = first;
}

static void check_cm(struct hc *h, struct evr_hc_row *r)
{
	if (!skip_no_device(h, r))
		check_node(h, r, "rdma_cm", "rdma_cm", "rdma_ucm");
}

/* Does interface address i hold want, an address of family fam? */
static int ifa_holds(const struct ifaddrs *i, int fam,
		     const unsigned char *want)
{
	unsigned char have[16];

	if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
		return 0;
	if (fam == AF_INET)
		memcpy(have, &((struct sockaddr_in *)(void *)
			       i->ifa_addr)->sin_addr, 4);
	else
		memcpy(have, &((struct sockaddr_in6 *)(void *)
			       i->ifa_addr)->sin6_addr, 16);
	return !memcmp(want, have, fam == AF_INET ? 4 : 16);
}

/* The interface that holds addr, by getifaddrs(). */
static int host_addr_ifname(const char *addr, char *ifname, size_t len)
{
	unsigned char want[16];
	struct ifaddrs *ifa, *i;
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET, found = -1;

	if (inet_pton(fam, addr, want) != 1 || getifaddrs(&ifa))
		return -1;
	for (i = ifa; i && found; i = i->ifa_next) {
		if (ifa_holds(i, fam, want)) {
			snprintf(ifname, len, "%s", i->ifa_name);
			found = 0;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* Is devs[i] an iWARP RNIC (node_type "4: RNIC")? */
static int is_iwarp(const struct hc *h, int i)
{
	char line[64];

	return !read_line(line, sizeof(line), "%s/sys/class/infiniband/%s/"
			  "node_type", h->sys, h->devs[i]) &&
	       strstr(line, "RNIC") != NULL;
}

/* Has devs[i] a parent device (hardware; siw has none)? */
static int has_parent(const struct hc *h, int i)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device",
		 h->sys, h->devs[i]);
	return !stat(path, &st);
}

/* An iWARP device's port p GID 0 is its interface's MAC address, then
 * zeros (siw, irdma, cxgb4): does it hold ifname's? */
static int iwarp_mac_is(const struct hc *h, int i, int p, const char *ifname)
{
	unsigned char g[16];
	unsigned m[6];
	char line[64], gid[64];
	int k;

	if (read_line(line, sizeof(line), "%s/sys/class/net/%s/address",
		      h->sys, ifname) ||
	    sscanf(line, "%2x:%2x:%2x:%2x:%2x:%2x", &m[0], &m[1], &m[2],
		   &m[3], &m[4], &m[5]) != 6 ||
	    read_line(gid, sizeof(gid), "%s/sys/class/infiniband/%s/ports/%d/"
		      "gids/0", h->sys, h->devs[i], p) ||
	    inet_pton(AF_INET6, gid, g) != 1)
		return 0;
	for (k = 0; k < 6; k++)
		if (g[k] != m[k])
			return 0;
	return 1;
}

/* Does devs[i] port p serve interface ifname?  Its GIDs' netdevs
 * (RoCE), its parent (Soft-RoCE), the MAC address in its GID (iWARP: siw
 * has neither) or the interface's PCI device (IPoIB, hardware RoCE). */
static int serves(const struct hc *h, int i, int p, const char *ifname)
{
	char line[64], path[512];
	struct stat st;
	int g;

	for (g = 0; g < MAX_GIDS; g++) {
		if (read_line(line, sizeof(line), "%s/sys/class/infiniband/%s/"
			      "ports/%d/gid_attrs/ndevs/%d", h->sys,
			      h->devs[i], p, g))
			continue;
		if (!strcmp(line, ifname))
			return 1;
	}
	if (!read_line(line, sizeof(line), "%s/sys/class/infiniband/%s/parent",
		       h->sys, h->devs[i]) && !strcmp(line, ifname))
		return 1;
	if (is_iwarp(h, i) && iwarp_mac_is(h, i, p, ifname))
		return 1;
	snprintf(path, sizeof(path), "%s/sys/class/net/%s/device/infiniband/%s",
		 h->sys, ifname, h->devs[i]);
	return !stat(path, &st);
}

static int port_exists(const struct hc *h, int i, int p)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%d",
		 h->sys, h->devs[i], p);
	return !stat(path, &st);
}

/* The index of the address's GID in devs[i] port p's table, or -1. */
static int gid_index(const struct hc *h, int i, int p)
{
	unsigned char g[16];
	char line[64];
	int idx;

	for (idx = 0; idx < MAX_GIDS; idx++) {
		if (read_line(line, sizeof(line), "%s/sys/class/infiniband/%s/"
			      "ports/%d/gids/%d", h->sys, h->devs[i], p, idx))
			break;
		if (inet_pton(AF_INET6, line, g) == 1 &&
		    !memcmp(g, h->agid, 16))
			return idx;
	}
	return -1;
}

/* The first device and port that serve ifname (and, with by_gid, hold
 * the address as a GID) into dev_idx and port: 0, or -1 for none. */
static int pick_dev(struct hc *h, const char *ifname, int by_gid)
{
	int i, p;

	for (i = 0; i < h->ndevs; i++)
		for (p = 1; p <= MAX_PORTS; p++)
			if (port_exists(h, i, p) && serves(h, i, p, ifname) &&
			    (!by_gid || gid_index(h, i, p) >= 0)) {
				h->dev_idx = i;
				h->port = p;
				return 0;
			}
	return -1;
}

/* The devices' names, space-separated, as the facts list them. */
static void dev_list(const struct hc *h, char *list, size_t len)
{
	int i;

	list[0] = '\0';
	for (i = 0; i < h->ndevs; i++)
		snprintf(list + strlen(list), len - strlen(list), "%s%s",
			 i ? " " : "", h->devs[i]);
}

static void check_addr_dev(struct hc *h, struct evr_hc_row *r)
{
	struct evr_hc_report *o = h->out;
	char fix[256], list[160];

	if (!h->need->rdma) {
		set(r, EVR_HC_SKIP, NULL, "not an RDMA run");
		return;
	}
	if (!h->ndevs) {
		set(r, EVR_HC_FAIL, "load the RDMA driver of the NIC, or add a "
		    "Soft-RoCE device: rdma link add rxe0 type rxe netdev "
		    "IFACE", "no RDMA device on this host "
		    "(/sys/class/infiniband is empty or absent)");
		return;
	}
	dev_list(h, list, sizeof(list));
	if (!h->has_addr) {
		set(r, EVR_HC_OK, NULL, "RDMA devices: %s (no address given: "
		    "any)", list);
		return;
	}
	if ((h->env && h->env->addr_ifname ? h->env->addr_ifname :
	     host_addr_ifname)(h->addr, o->ifname, sizeof(o->ifname))) {
		o->ifname[0] = '\0';
		set(r, EVR_HC_FAIL, "use an address of this host's RDMA "
		    "interface (rdma link show; ip -br addr)", "%s is on no "
		    "interface of this host", h->addr);
		return;
	}
	/* Netdev names are per network namespace: with rxe in several
	 * (Linux 7.1+, "shared" RDMA mode) every host's device may serve
	 * an "eth0".  The one whose GID table holds the address is ours;
	 * without such a one, the first by name (the GID check then says
	 * what is missing). */
	if (!pick_dev(h, o->ifname, 1) || !pick_dev(h, o->ifname, 0)) {
		snprintf(o->device, sizeof(o->device), "%s",
			 h->devs[h->dev_idx]);
		set(r, EVR_HC_OK, NULL, "%s is on %s, RDMA device %s port %d%s",
		    h->addr, o->ifname, h->devs[h->dev_idx], h->port,
		    is_iwarp(h, h->dev_idx) ? " (iWARP)" : "");
		return;
	}
	snprintf(fix, sizeof(fix), "use an address of an RDMA interface, or "
		 "add Soft-RoCE on this one: rdma link add rxe_%.16s type rxe "
		 "netdev %.16s", o->ifname, o->ifname);
	set(r, EVR_HC_FAIL, fix, "%s is on %s, which no RDMA device serves "
	    "(devices: %s)", h->addr, o->ifname, list);
}

/*
 * devs[i] port p's state into r: 1 when the port is active, 0 when it is
 * not (with the fix: bring the link up), -1 when sysfs has no state for
 * it (r is left as it was).
 */
static int port_state(struct hc *h, struct evr_hc_row *r, int i, int p)
{
	char state[64], phys[64], fix[256];

	if (read_line(state, sizeof(state), "%s/sys/class/infiniband/%s/"
		      "ports/%d/state", h->sys, h->devs[i], p))
		return -1;
	if (strstr(state, "ACTIVE")) {
		set(r, EVR_HC_OK, NULL, "%s port %d %s", h->devs[i], p, state);
		return 1;
	}
	if (read_line(phys, sizeof(phys), "%s/sys/class/infiniband/%s/"
		      "ports/%d/phys_state", h->sys, h->devs[i], p))
		snprintf(phys, sizeof(phys), "?");
	if (h->out->ifname[0])
		snprintf(fix, sizeof(fix), "bring the link up: ip link set %s "
			 "up; check the cable and the switch port",
			 h->out->ifname);
	else
		snprintf(fix, sizeof(fix), "bring the link up (ip link set "
			 "IFACE up); check the cable, the switch port, the "
			 "subnet manager (ibstat)");
	set(r, EVR_HC_FAIL, fix, "%s port %d is %s (physical state %s)",
	    h->devs[i], p, state, phys);
	return 0;
}

/* The states of devs[i]'s ports (only the address's port when it has
 * one) into r, up to the first active one: 1 when one is active, 0 when
 * none is but some have a state, -1 when none has. */
static int dev_ports(struct hc *h, struct evr_hc_row *r, int i)
{
	int p, ret, seen = -1;

	for (p = 1; p <= MAX_PORTS; p++) {
		if (h->dev_idx >= 0 && p != h->port)
			continue;
		ret = port_state(h, r, i, p);
		if (ret > 0)
			return 1;
		if (!ret)
			seen = 0;
	}
	return seen;
}

static void check_port(struct hc *h, struct evr_hc_row *r)
{
	int i, ret, any = 0;

	if (skip_no_device(h, r))
		return;
	if (h->has_addr && h->dev_idx < 0) {
		set(r, EVR_HC_SKIP, NULL, "the address has no RDMA device");
		return;
	}
	for (i = 0; i < h->ndevs; i++) {
		if (h->dev_idx >= 0 && i != h->dev_idx)
			continue;
		ret = dev_ports(h, r, i);
		if (ret > 0)
			return;
		any |= ret == 0;
	}
	if (!any)
		set(r, EVR_HC_SKIP, NULL, "no port state in sysfs");
}

static void check_gid(struct hc *h, struct evr_hc_row *r)
{
	const char *dev;
	char type[32], fix[256];
	int idx;

	if (!h->need->rdma || !h->has_addr || h->dev_idx < 0) {
		set(r, EVR_HC_SKIP, NULL, !h->need->rdma ? "not an RDMA run" :
		    !h->has_addr ? "no address given" :
		    "the address has no RDMA device");
		return;
	}
	dev = h->devs[h->dev_idx];
	if (h->ib) {
		set(r, EVR_HC_SKIP, NULL, "%s port %d is InfiniBand: its GIDs "
		    "are not IP addresses", dev, h->port);
		return;
	}
	if (h->iwarp) {
		set(r, EVR_HC_SKIP, NULL, "%s is iWARP: it reaches its peers by "
		    "IP address (TCP), not by GID", dev);
		return;
	}
	idx = gid_index(h, h->dev_idx, h->port);
	if (idx >= 0) {
		if (read_line(type, sizeof(type), "%s/sys/class/infiniband/%s/"
			      "ports/%d/gid_attrs/types/%d", h->sys, dev,
			      h->port, idx))
			snprintf(type, sizeof(type), "RoCE");
		set(r, EVR_HC_OK, NULL, "%s is GID %d of %s port %d (%s)",
		    h->addr, idx, dev, h->port, type);
		return;
	}
	snprintf(fix, sizeof(fix), "the GID table follows %s's addresses: "
		 "check that the address is up and not tentative (ip addr "
		 "show %s), re-add it, or use one that is in the table",
		 h->out->ifname, h->out->ifname);
	set(r, EVR_HC_FAIL, fix, "%s is not in the GID table of %s port %d",
	    h->addr, dev, h->port);
}

/* The RoCE path MTU the kernel derives from the interface's: the IB
 * MTU (256 ... 4096) that fits with the RoCE v2 headers. */
static unsigned roce_mtu(unsigned long netmtu)
{
	unsigned m = 4096;

	netmtu = netmtu > 96 ? netmtu - 96 : 0;
	while (m > 256 && m > netmtu)
		m /= 2;
	return m;
}

/* Why the MTU check does not apply to this run, or NULL when it does. */
static const char *mtu_skip_reason(const struct hc *h)
{
	if (!h->need->rdma)
		return "not an RDMA run";
	if (!h->need->msg_size)
		return "no message size";
	if (h->ib)
		return "InfiniBand: the port's MTU is checked when the run "
		       "starts";
	if (h->iwarp)
		return "iWARP: TCP segments its messages";
	if (h->dev_idx < 0)
		return "no RDMA device for the address";
	return NULL;
}

static void check_mtu(struct hc *h, struct evr_hc_row *r)
{
	char line[32], fix[256];
	const char *skip = mtu_skip_reason(h);
	unsigned long netmtu;
	unsigned m;

	if (skip) {
		set(r, EVR_HC_SKIP, NULL, "%s", skip);
		return;
	}
	if (read_line(line, sizeof(line), "%s/sys/class/net/%s/mtu", h->sys,
		      h->out->ifname) || sscanf(line, "%lu", &netmtu) != 1) {
		set(r, EVR_HC_SKIP, NULL, "%s's MTU is unknown",
		    h->out->ifname);
		return;
	}
	m = roce_mtu(netmtu);
	if (h->need->msg_size <= m) {
		set(r, EVR_HC_OK, NULL, "messages of %u bytes fit the path MTU "
		    "%u (%s mtu %lu)", h->need->msg_size, m, h->out->ifname,
		    netmtu);
		return;
	}
	snprintf(fix, sizeof(fix), "send at most %u bytes a message (mckey -S "
		 "%u), or raise the interface's MTU: ip link set %s mtu 9000",
		 m, m, h->out->ifname);
	set(r, EVR_HC_FAIL, fix, "messages of %u bytes exceed the path MTU %u "
	    "(%s mtu %lu)", h->need->msg_size, m, h->out->ifname, netmtu);
}

/* A descriptor limit as the facts say it: a count, or "unlimited". */
static void nofile_str(char *buf, size_t len, rlim_t v)
{
	if (v == RLIM_INFINITY)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%lu", (unsigned long)v);
}

/* Can the run raise its hard limit to need descriptors?  With
 * CAP_SYS_RESOURCE it can, up to fs.nr_open, which goes into *nr_open. */
static int raise_past_hard(const struct hc *h, unsigned long need,
			   unsigned long *nr_open)
{
	char line[32];

	return h->need->fds_raise && privileged(h, CAP_SYS_RESOURCE_BIT) &&
	       !read_line(line, sizeof(line), "%s/proc/sys/fs/nr_open",
			  h->proc) &&
	       sscanf(line, "%lu", nr_open) == 1 && need <= *nr_open;
}

static void check_nofile(struct hc *h, struct evr_hc_row *r)
{
	unsigned long need = h->need->fds;
	rlim_t cur = h->nofile.rlim_cur, max = h->nofile.rlim_max;
	char lim[32], hard[32], fix[256];
	unsigned long nr_open;

	if (!need) {
		set(r, EVR_HC_SKIP, NULL, "no descriptor count given");
		return;
	}
	nofile_str(lim, sizeof(lim), cur);
	nofile_str(hard, sizeof(hard), max);
	if (cur == RLIM_INFINITY || need <= cur ||
	    (h->need->fds_raise && (max == RLIM_INFINITY || need <= max))) {
		set(r, EVR_HC_OK, NULL, "RLIMIT_NOFILE %s (hard %s), this run "
		    "needs about %lu", lim, hard, need);
		return;
	}
	if (raise_past_hard(h, need, &nr_open)) {
		set(r, EVR_HC_OK, NULL, "RLIMIT_NOFILE %s (hard %s), this run "
		    "needs about %lu: with CAP_SYS_RESOURCE it raises both "
		    "(fs.nr_open %lu)",
		    lim, hard, need, nr_open);
		return;
	}
	snprintf(fix, sizeof(fix), "raise it: ulimit -n %lu (as root past "
		 "the hard limit), /etc/security/limits.conf \"USER - nofile "
		 "%lu\", systemd LimitNOFILE=%lu", need, need, need);
	set(r, EVR_HC_FAIL, fix, "RLIMIT_NOFILE %s (hard %s), this run needs "
	    "about %lu", lim, hard, need);
}

/* ---- the run ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static void list_devs(struct hc *h)
{
	char path[512];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband", h->sys);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)) && h->ndevs < MAX_DEVS)
		if (e->d_name[0] != '.')
			snprintf(h->devs[h->ndevs++], sizeof(h->devs[0]), "%.63s",
				 e->d_name);
	closedir(d);
	qsort(h->devs, (size_t)h->ndevs, sizeof(h->devs[0]), cmp_str);
}

/* addr, numeric or a name, as an address and a GID; -EINVAL if neither.
 * A wildcard is no address: any device will do. */
static int parse_addr(struct hc *h, const char *addr)
{
	struct addrinfo hints, *ai;
	static const unsigned char any6[16];
	int ret;

	if (!addr || !addr[0])
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	ret = getaddrinfo(addr, NULL, &hints, &ai);
	if (ret) {
		hints.ai_flags = 0;
		ret = getaddrinfo(addr, NULL, &hints, &ai);
	}
	if (ret)
		return -EINVAL;
	memset(h->agid, 0, sizeof(h->agid));
	if (ai->ai_family == AF_INET) {
		const struct in_addr *a = &((struct sockaddr_in *)(void *)
					    ai->ai_addr)->sin_addr;

		h->agid[10] = h->agid[11] = 0xff;
		memcpy(h->agid + 12, a, 4);
		inet_ntop(AF_INET, a, h->addr, sizeof(h->addr));
		h->has_addr = a->s_addr != INADDR_ANY;
	} else if (ai->ai_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)(void *)
					     ai->ai_addr)->sin6_addr;

		memcpy(h->agid, a, 16);
		inet_ntop(AF_INET6, a, h->addr, sizeof(h->addr));
		h->has_addr = memcmp(a, any6, 16) != 0;
	}
	freeaddrinfo(ai);
	return 0;
}

/* A limit: the one the environment gives, else the process's own
 * (unlimited when getrlimit() cannot say). */
static void get_rlimit(int resource, const struct rlimit *given,
		       struct rlimit *out)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };

	if (given)
		*out = *given;
	else if (getrlimit(resource, out))
		*out = inf;
}

static void get_limits(struct hc *h)
{
	const struct evr_hc_env *e = h->env;

	get_rlimit(RLIMIT_MEMLOCK, e ? e->memlock : NULL, &h->memlock);
	get_rlimit(RLIMIT_NOFILE, e ? e->nofile : NULL, &h->nofile);
	if (e && e->creds_set) {
		h->uid = e->uid;
		h->gid = e->gid;
		h->groups = e->groups;
		h->ngroups = e->ngroups > 0 && e->groups ? e->ngroups : 0;
		return;
	}
	h->real_creds = 1;
	h->uid = geteuid();
	h->gid = getegid();
	h->ngroups = getgroups((int)(sizeof(h->own_groups) /
				     sizeof(h->own_groups[0])), h->own_groups);
	if (h->ngroups < 0)
		h->ngroups = 0;
	h->groups = h->own_groups;
}

/* A run's state before the checks: the environment's roots, or the
 * host's own (""), and no device found for the address yet. */
static void hc_init(struct hc *h, const struct evr_hc_env *env,
		    const struct evr_hc_need *need, struct evr_hc_report *out)
{
	memset(h, 0, sizeof(*h));
	h->env = env;
	h->need = need;
	h->out = out;
	h->sys = env && env->sys_root ? env->sys_root : "";
	h->dev = env && env->dev_root ? env->dev_root : "";
	h->proc = env && env->proc_root ? env->proc_root : "";
	h->dev_idx = -1;
}

int evr_hostcheck_run(const struct evr_hc_env *env,
		      const struct evr_hc_need *need,
		      struct evr_hc_report *out)
{
	struct hc h;
	char ll[32];
	int i;

	memset(out, 0, sizeof(*out));
	hc_init(&h, env, need, out);
	if (parse_addr(&h, need->addr))
		return -EINVAL;
	get_limits(&h);
	list_devs(&h);
	for (i = 0; i < EVR_HC_COUNT; i++)
		out->rows[i].check = (enum evr_hc_check)i;

	/* the address first: the device checks look at its device */
	check_addr_dev(&h, &out->rows[EVR_HC_ADDR_DEV]);
	if (h.dev_idx >= 0 &&
	    !read_line(ll, sizeof(ll), "%s/sys/class/infiniband/%s/ports/%d/"
		       "link_layer", h.sys, h.devs[h.dev_idx], h.port))
		h.ib = !strcmp(ll, "InfiniBand");
	h.iwarp = h.dev_idx >= 0 && is_iwarp(&h, h.dev_idx);
	h.soft_iwarp = h.iwarp && !has_parent(&h, h.dev_idx);
	/* no address, but a failure named its device */
	for (i = 0; h.dev_idx < 0 && need->device && i < h.ndevs; i++)
		if (!strcmp(h.devs[i], need->device))
			h.soft_iwarp = is_iwarp(&h, i) && !has_parent(&h, i);
	check_memlock(&h, &out->rows[EVR_HC_MEMLOCK]);
	check_verbs(&h, &out->rows[EVR_HC_VERBS_DEV]);
	check_cm(&h, &out->rows[EVR_HC_RDMA_CM]);
	check_port(&h, &out->rows[EVR_HC_PORT]);
	check_gid(&h, &out->rows[EVR_HC_GID]);
	check_mtu(&h, &out->rows[EVR_HC_MTU]);
	check_nofile(&h, &out->rows[EVR_HC_NOFILE]);
	for (i = 0; i < EVR_HC_COUNT; i++)
		out->nfail += out->rows[i].verdict == EVR_HC_FAIL;
	return 0;
}
