/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host checks (src/host/hostcheck.c) on a fake host: a temporary
 * tree with /sys/class/infiniband, /sys/class/infiniband_verbs,
 * /sys/class/net, /dev/infiniband and /proc/self/status, rlimits and
 * credentials given, the address-to-interface lookup faked.  Each
 * verdict, its fact and its fix, one host problem at a time; and the
 * memlock estimates of both engines.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"

static char root[64];
static struct rlimit memlock, nofile;
static gid_t groups[1];
static struct evr_hc_env env;
static struct evr_hc_need need;
static struct evr_hc_report rep;

/* root + the path, every directory on the way made */
static void put(const char *content, const char *fmt, ...)
{
	char rel[256], path[512], *p;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static void unlink_f(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_int_eq(unlink(path), 0);
}

static void mode(const char *node, mode_t m)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/dev/infiniband/%s", root, node);
	ck_assert_int_eq(chmod(path, m), 0);
}

static int fake_ifname(const char *addr, char *ifname, size_t len)
{
	if (!strcmp(addr, "198.18.0.1") || !strcmp(addr, "198.18.0.2"))
		snprintf(ifname, len, "veth0");
	else if (!strcmp(addr, "198.18.1.1"))
		snprintf(ifname, len, "veth2");
	else if (!strcmp(addr, "10.0.0.1"))
		snprintf(ifname, len, "eth9");
	else
		return -1;
	return 0;
}

/* A Soft-RoCE host, everything right: rxe0 on veth0 (198.18.0.1 is its
 * GID 1, RoCE v2), port ACTIVE, device nodes 0666, no CAP_IPC_LOCK. */
static void setup(void)
{
	const char *port = "sys/class/infiniband/rxe0/ports/1";

	snprintf(root, sizeof(root), "/tmp/check_hostcheck.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	put("4: ACTIVE\n", "%s/state", port);
	put("5: LinkUp\n", "%s/phys_state", port);
	put("Ethernet\n", "%s/link_layer", port);
	put("fe80:0000:0000:0000:0000:00ff:fe00:0001\n", "%s/gids/0", port);
	put("0000:0000:0000:0000:0000:ffff:c612:0001\n", "%s/gids/1", port);
	put("0000:0000:0000:0000:0000:0000:0000:0000\n", "%s/gids/2", port);
	put("veth0\n", "%s/gid_attrs/ndevs/0", port);
	put("veth0\n", "%s/gid_attrs/ndevs/1", port);
	put("RoCE v2\n", "%s/gid_attrs/types/1", port);
	put("veth0\n", "sys/class/infiniband/rxe0/parent");
	put("rxe0\n", "sys/class/infiniband_verbs/uverbs0/ibdev");
	put("1500\n", "sys/class/net/veth0/mtu");
	put("1500\n", "sys/class/net/eth9/mtu");
	put("", "dev/infiniband/uverbs0");
	put("", "dev/infiniband/rdma_cm");
	mode("uverbs0", 0666);
	mode("rdma_cm", 0666);
	put("Name:\tx\nCapEff:\t0000000000000000\n", "proc/self/status");

	memlock.rlim_cur = memlock.rlim_max = 8u << 20;
	nofile.rlim_cur = 1024;
	nofile.rlim_max = 4096;
	groups[0] = getgid() + 4243;
	memset(&env, 0, sizeof(env));
	env.sys_root = env.dev_root = env.proc_root = root;
	env.memlock = &memlock;
	env.nofile = &nofile;
	env.creds_set = 1;
	env.uid = getuid() + 4242; /* not the nodes' owner, nor root */
	env.gid = getgid() + 4242;
	env.groups = groups;
	env.ngroups = 1;
	env.addr_ifname = fake_ifname;
	memset(&need, 0, sizeof(need));
	need.rdma = 1;
	need.memlock = 2u << 20;
	need.fds = 10;
	need.msg_size = 1000;
	need.addr = "198.18.0.1";
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const struct evr_hc_row *run(void)
{
	ck_assert_int_eq(evr_hostcheck_run(&env, &need, &rep), 0);
	return rep.rows;
}

#define VERDICT(c, v) ck_assert_msg(rep.rows[c].verdict == (v), \
	"%s: verdict %s, want %s (fact: %s)", evr_hostcheck_name(c), \
	evr_hostcheck_verdict_str(rep.rows[c].verdict), \
	evr_hostcheck_verdict_str(v), rep.rows[c].fact)
#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, \
	"\"%s\" lacks \"%s\"", (s), (sub))

START_TEST(test_all_ok)
{
	const struct evr_hc_row *r = run();
	int i;

	ck_assert_uint_eq(rep.nfail, 0);
	for (i = 0; i < EVR_HC_COUNT; i++) {
		ck_assert_int_eq(r[i].check, i);
		VERDICT(i, EVR_HC_OK);
		ck_assert_str_eq(r[i].fix, "");
	}
	ck_assert_str_eq(r[EVR_HC_MEMLOCK].fact, "RLIMIT_MEMLOCK 8.0 MiB, "
			 "this run locks about 2.0 MiB");
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "198.18.0.1 is on veth0, "
			 "RDMA device rxe0 port 1");
	ck_assert_str_eq(rep.device, "rxe0");
	ck_assert_str_eq(rep.ifname, "veth0");
	ck_assert_str_eq(r[EVR_HC_PORT].fact, "rxe0 port 1 4: ACTIVE");
	ck_assert_str_eq(r[EVR_HC_GID].fact, "198.18.0.1 is GID 1 of rxe0 "
			 "port 1 (RoCE v2)");
	ck_assert_str_eq(r[EVR_HC_MTU].fact, "messages of 1000 bytes fit the "
			 "path MTU 1024 (veth0 mtu 1500)");
	ck_assert_str_eq(r[EVR_HC_VERBS_DEV].fact, "/dev/infiniband/uverbs0 "
			 "readable and writable, mode 0666 (rxe0)");
	ck_assert_str_eq(r[EVR_HC_NOFILE].fact, "RLIMIT_NOFILE 1024 (hard "
			 "4096), this run needs about 10");
}
END_TEST

START_TEST(test_memlock)
{
	const struct evr_hc_row *r;

	memlock.rlim_cur = memlock.rlim_max = 64 << 10;
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_FAIL);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_str_eq(r[EVR_HC_MEMLOCK].fact, "RLIMIT_MEMLOCK 64 KiB, "
			 "this run locks about 2.0 MiB");
	/* the need plus an eighth, in KiB */
	HAS(r[EVR_HC_MEMLOCK].fix, "ulimit -l 2304 ");
	HAS(r[EVR_HC_MEMLOCK].fix, "the hard limit is 64 KiB");
	HAS(r[EVR_HC_MEMLOCK].fix, "/etc/security/limits.conf \"USER - "
	    "memlock 2304\"");
	HAS(r[EVR_HC_MEMLOCK].fix, "LimitMEMLOCK=2304K");
	HAS(r[EVR_HC_MEMLOCK].fix, "CAP_IPC_LOCK");
	/* exactly the need fits */
	memlock.rlim_cur = 2u << 20;
	run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	memlock.rlim_cur = (2u << 20) - 1;
	run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_FAIL);
	/* CAP_IPC_LOCK lifts the limit */
	put("CapEff:\t0000000000004000\n", "proc/self/status");
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	HAS(r[EVR_HC_MEMLOCK].fact, "CAP_IPC_LOCK");
	put("CapEff:\t000001ffffffbfff\n", "proc/self/status");
	run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_FAIL);
	memlock.rlim_cur = RLIM_INFINITY;
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	ck_assert_str_eq(r[EVR_HC_MEMLOCK].fact, "RLIMIT_MEMLOCK unlimited, "
			 "this run locks about 2.0 MiB");
}
END_TEST

START_TEST(test_verbs_node)
{
	const struct evr_hc_row *r;
	char want[160];

	mode("uverbs0", 0600);
	r = run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	VERDICT(EVR_HC_RDMA_CM, EVR_HC_OK);
	snprintf(want, sizeof(want), "/dev/infiniband/uverbs0: not readable "
		 "or writable by uid %u, mode 0600 ", (unsigned)env.uid);
	HAS(r[EVR_HC_VERBS_DEV].fact, want);
	HAS(r[EVR_HC_VERBS_DEV].fix, "KERNEL==\"uverbs*\", GROUP=\"rdma\", "
	    "MODE=\"0660\"");
	HAS(r[EVR_HC_VERBS_DEV].fix, "usermod -aG rdma USER");
	/* the group's bits, for a member of the node's group */
	mode("uverbs0", 0660);
	run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	groups[0] = getgid();
	run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_OK);
	mode("uverbs0", 0640);
	r = run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	HAS(r[EVR_HC_VERBS_DEV].fact, ": not writable by uid");
	mode("uverbs0", 0620);
	r = run();
	HAS(r[EVR_HC_VERBS_DEV].fact, ": not readable by uid");
	/* root reads and writes whatever the mode: by CAP_DAC_OVERRIDE,
	 * which a container's root may lack */
	env.uid = 0;
	mode("uverbs0", 0000);
	run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	put("CapEff:\t0000000000000002\n", "proc/self/status");
	run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_OK);
	put("Name:\tx\nCapEff:\t0000000000000000\n", "proc/self/status");
	/* without an address any device the user may open will do; the
	 * first failure is said when none */
	env.uid = getuid() + 4242;
	mode("uverbs0", 0600);
	put("4: ACTIVE\n", "sys/class/infiniband/rxe1/ports/1/state");
	put("rxe1\n", "sys/class/infiniband_verbs/uverbs1/ibdev");
	put("", "dev/infiniband/uverbs1");
	mode("uverbs1", 0666);
	need.addr = NULL;
	r = run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_OK);
	HAS(r[EVR_HC_VERBS_DEV].fact, "uverbs1 readable and writable, mode "
	    "0666 (rxe1)");
	mode("uverbs1", 0600);
	r = run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	HAS(r[EVR_HC_VERBS_DEV].fact, "/dev/infiniband/uverbs0: not readable");
	/* with the address, its device's node alone */
	mode("uverbs1", 0666);
	need.addr = "198.18.0.1";
	run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	/* no node: the module */
	put("uverbs9\n", "sys/class/infiniband_verbs/uverbs0/ibdev");
	r = run();
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_FAIL);
	HAS(r[EVR_HC_VERBS_DEV].fact, "rxe0 has no verbs device node");
	HAS(r[EVR_HC_VERBS_DEV].fix, "modprobe ib_uverbs");
}
END_TEST

START_TEST(test_cm_node)
{
	const struct evr_hc_row *r;
	char path[512];

	mode("rdma_cm", 0644);
	r = run();
	VERDICT(EVR_HC_RDMA_CM, EVR_HC_FAIL);
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_OK);
	HAS(r[EVR_HC_RDMA_CM].fact, "/dev/infiniband/rdma_cm: not writable "
	    "by uid");
	HAS(r[EVR_HC_RDMA_CM].fact, "mode 0644");
	HAS(r[EVR_HC_RDMA_CM].fix, "KERNEL==\"rdma_cm\", GROUP=\"rdma\"");
	snprintf(path, sizeof(path), "%s/dev/infiniband/rdma_cm", root);
	ck_assert_int_eq(unlink(path), 0);
	r = run();
	VERDICT(EVR_HC_RDMA_CM, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_RDMA_CM].fact, "/dev/infiniband/rdma_cm: "
			 "No such file or directory");
	HAS(r[EVR_HC_RDMA_CM].fix, "modprobe rdma_ucm");
}
END_TEST

START_TEST(test_address)
{
	const struct evr_hc_row *r;

	need.addr = "192.0.2.7";
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "192.0.2.7 is on no "
			 "interface of this host");
	HAS(r[EVR_HC_ADDR_DEV].fix, "ip -br addr");
	VERDICT(EVR_HC_PORT, EVR_HC_SKIP);
	VERDICT(EVR_HC_GID, EVR_HC_SKIP);
	VERDICT(EVR_HC_MTU, EVR_HC_SKIP);
	ck_assert_uint_eq(rep.nfail, 1);

	need.addr = "10.0.0.1";
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "10.0.0.1 is on eth9, which "
			 "no RDMA device serves (devices: rxe0)");
	HAS(r[EVR_HC_ADDR_DEV].fix, "rdma link add rxe_eth9 type rxe netdev "
	    "eth9");
	ck_assert_str_eq(rep.device, "");

	/* no address, or a wildcard: any device */
	need.addr = NULL;
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_OK);
	HAS(r[EVR_HC_ADDR_DEV].fact, "RDMA devices: rxe0");
	VERDICT(EVR_HC_GID, EVR_HC_SKIP);
	need.addr = "0.0.0.0";
	run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_OK);
	need.addr = "not an address!";
	ck_assert_int_eq(evr_hostcheck_run(&env, &need, &rep), -EINVAL);
}
END_TEST

START_TEST(test_port_down)
{
	const struct evr_hc_row *r;

	put("1: DOWN\n", "sys/class/infiniband/rxe0/ports/1/state");
	put("3: Disabled\n", "sys/class/infiniband/rxe0/ports/1/phys_state");
	r = run();
	VERDICT(EVR_HC_PORT, EVR_HC_FAIL);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_str_eq(r[EVR_HC_PORT].fact, "rxe0 port 1 is 1: DOWN "
			 "(physical state 3: Disabled)");
	HAS(r[EVR_HC_PORT].fix, "ip link set veth0 up");
	need.addr = NULL;
	r = run();
	VERDICT(EVR_HC_PORT, EVR_HC_FAIL);
	HAS(r[EVR_HC_PORT].fix, "ip link set IFACE up");
}
END_TEST

START_TEST(test_gid)
{
	const struct evr_hc_row *r;

	need.addr = "198.18.0.2";
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_OK);
	VERDICT(EVR_HC_GID, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_GID].fact, "198.18.0.2 is not in the GID "
			 "table of rxe0 port 1");
	HAS(r[EVR_HC_GID].fix, "ip addr show veth0");
	/* InfiniBand: not applicable */
	put("InfiniBand\n", "sys/class/infiniband/rxe0/ports/1/link_layer");
	run();
	VERDICT(EVR_HC_GID, EVR_HC_SKIP);
	VERDICT(EVR_HC_MTU, EVR_HC_SKIP);
}
END_TEST

/* Network namespaces (rxe per namespace, Linux 7.1+, the RDMA devices
 * shared): another host's device also has a netdev called veth0, and
 * sorts first.  The address's device is the one whose GID table holds
 * the address. */
START_TEST(test_netns)
{
	const char *port = "sys/class/infiniband/rxd0/ports/1";
	const struct evr_hc_row *r;

	put("4: ACTIVE\n", "%s/state", port);
	put("Ethernet\n", "%s/link_layer", port);
	put("0000:0000:0000:0000:0000:ffff:c612:0009\n", "%s/gids/1", port);
	put("veth0\n", "%s/gid_attrs/ndevs/1", port);
	put("veth0\n", "sys/class/infiniband/rxd0/parent");
	r = run();
	ck_assert_uint_eq(rep.nfail, 0);
	ck_assert_str_eq(rep.device, "rxe0");
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "198.18.0.1 is on veth0, "
			 "RDMA device rxe0 port 1");
	VERDICT(EVR_HC_GID, EVR_HC_OK);
	/* in no device's table: the first by name, and the GID check says */
	need.addr = "198.18.0.2";
	r = run();
	ck_assert_str_eq(rep.device, "rxd0");
	VERDICT(EVR_HC_GID, EVR_HC_FAIL);
	HAS(r[EVR_HC_GID].fact, "not in the GID table of rxd0 port 1");
}
END_TEST

/* soft-iWARP (siw0 on veth2): no GID netdevs, no parent in sysfs; its
 * node type is RNIC and its GID 0 is veth2's MAC address.  It serves
 * the address (said as iWARP); the GID and RoCE MTU checks do not apply.
 * Another interface's MAC: no device serves it (the fix names Soft-RoCE,
 * as before). */
START_TEST(test_iwarp)
{
	const char *port = "sys/class/infiniband/siw0/ports/1";
	const struct evr_hc_row *r;

	put("4: RNIC\n", "sys/class/infiniband/siw0/node_type");
	put("4: ACTIVE\n", "%s/state", port);
	put("5: LinkUp\n", "%s/phys_state", port);
	put("Ethernet\n", "%s/link_layer", port);
	put("5e8c:9ff2:03d1:0000:0000:0000:0000:0000\n", "%s/gids/0", port);
	put("5e:8c:9f:f2:03:d1\n", "sys/class/net/veth2/address");
	put("1500\n", "sys/class/net/veth2/mtu");
	put("siw0\n", "sys/class/infiniband_verbs/uverbs1/ibdev");
	put("", "dev/infiniband/uverbs1");
	mode("uverbs1", 0666);
	need.addr = "198.18.1.1";
	r = run();
	ck_assert_uint_eq(rep.nfail, 0);
	ck_assert_str_eq(rep.device, "siw0");
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "198.18.1.1 is on veth2, "
			 "RDMA device siw0 port 1 (iWARP)");
	VERDICT(EVR_HC_PORT, EVR_HC_OK);
	VERDICT(EVR_HC_GID, EVR_HC_SKIP);
	HAS(r[EVR_HC_GID].fact, "siw0 is iWARP");
	VERDICT(EVR_HC_MTU, EVR_HC_SKIP);
	/* soft-iWARP pins against RLIMIT_MEMLOCK even with CAP_IPC_LOCK */
	put("Name:\tx\nCapEff:\t0000000000004000\n", "proc/self/status");
	need.memlock = 16u << 20;
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_FAIL);
	HAS(r[EVR_HC_MEMLOCK].fact, "RLIMIT_MEMLOCK 8.0 MiB (soft-iWARP "
	    "counts it even with CAP_IPC_LOCK), this run locks about 16.0 "
	    "MiB");
	ck_assert(!strstr(r[EVR_HC_MEMLOCK].fix, "grant CAP_IPC_LOCK"));
	/* hardware iWARP (a parent device) does not */
	put("", "sys/class/infiniband/siw0/device");
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	HAS(r[EVR_HC_MEMLOCK].fact, "CAP_IPC_LOCK");
	/* no address, but the device a failure named */
	unlink_f("sys/class/infiniband/siw0/device");
	need.addr = NULL;
	need.device = "siw0";
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_FAIL);
	HAS(r[EVR_HC_MEMLOCK].fact, "(soft-iWARP counts it even with "
	    "CAP_IPC_LOCK)");
	need.device = "rxe0";
	r = run();
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	need.device = NULL;
	need.memlock = 2u << 20;
	put("Name:\tx\nCapEff:\t0000000000000000\n", "proc/self/status");
	/* the rxe device is RoCE: its own checks as ever */
	need.addr = "198.18.0.1";
	r = run();
	ck_assert_str_eq(rep.device, "rxe0");
	VERDICT(EVR_HC_GID, EVR_HC_OK);
	/* not veth2's MAC: nobody serves it */
	put("5e:8c:9f:f2:03:d2\n", "sys/class/net/veth2/address");
	need.addr = "198.18.1.1";
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_FAIL);
	HAS(r[EVR_HC_ADDR_DEV].fact, "which no RDMA device serves");
	/* a device that is not an RNIC is not matched by MAC */
	put("5e:8c:9f:f2:03:d1\n", "sys/class/net/veth2/address");
	put("1: CA\n", "sys/class/infiniband/siw0/node_type");
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_FAIL);
}
END_TEST

START_TEST(test_mtu)
{
	const struct evr_hc_row *r;

	need.msg_size = 1025;
	r = run();
	VERDICT(EVR_HC_MTU, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_MTU].fact, "messages of 1025 bytes exceed "
			 "the path MTU 1024 (veth0 mtu 1500)");
	HAS(r[EVR_HC_MTU].fix, "mckey -S 1024");
	HAS(r[EVR_HC_MTU].fix, "ip link set veth0 mtu 9000");
	put("9000\n", "sys/class/net/veth0/mtu");
	need.msg_size = 4096;
	run();
	VERDICT(EVR_HC_MTU, EVR_HC_OK);
	need.msg_size = 4097;
	run();
	VERDICT(EVR_HC_MTU, EVR_HC_FAIL);
	need.msg_size = 0;
	run();
	VERDICT(EVR_HC_MTU, EVR_HC_SKIP);
	/* RoCE's headers come off the interface's MTU first */
	put("1100\n", "sys/class/net/veth0/mtu");
	need.msg_size = 600;
	r = run();
	VERDICT(EVR_HC_MTU, EVR_HC_FAIL);
	HAS(r[EVR_HC_MTU].fact, "the path MTU 512 (veth0 mtu 1100)");
}
END_TEST

START_TEST(test_nofile)
{
	const struct evr_hc_row *r;

	need.fds = 5000;
	r = run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_NOFILE].fact, "RLIMIT_NOFILE 1024 (hard "
			 "4096), this run needs about 5000");
	HAS(r[EVR_HC_NOFILE].fix, "ulimit -n 5000");
	HAS(r[EVR_HC_NOFILE].fix, "LimitNOFILE=5000");
	/* a program that raises its soft limit to the hard one */
	need.fds_raise = 1;
	run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_FAIL);
	nofile.rlim_max = 5000;
	run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_OK);
	need.fds_raise = 0;
	run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_FAIL);
	/* root raises the hard limit as well, up to fs.nr_open */
	need.fds = 6000;
	need.fds_raise = 1;
	env.uid = 0;
	put("5999\n", "proc/sys/fs/nr_open");
	run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_FAIL);
	put("6000\n", "proc/sys/fs/nr_open");
	/* uid 0 is not enough: the capability raises it (root in a
	 * container without CAP_SYS_RESOURCE cannot) */
	r = run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_FAIL);
	put("CapEff:\t0000000001000000\n", "proc/self/status");
	r = run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_OK);
	HAS(r[EVR_HC_NOFILE].fact, "with CAP_SYS_RESOURCE it raises both "
	    "(fs.nr_open 6000)");
	/* no CapEff line to read: root stands for the capability */
	put("Name:\tx\n", "proc/self/status");
	run();
	VERDICT(EVR_HC_NOFILE, EVR_HC_OK);
	put("Name:\tx\nCapEff:\t0000000000000000\n", "proc/self/status");
}
END_TEST

START_TEST(test_no_rdma)
{
	const struct evr_hc_row *r;
	char path[512];

	snprintf(path, sizeof(path), "%s/sys/class/infiniband/rxe0", root);
	ck_assert_int_eq(nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	r = run();
	VERDICT(EVR_HC_ADDR_DEV, EVR_HC_FAIL);
	ck_assert_str_eq(r[EVR_HC_ADDR_DEV].fact, "no RDMA device on this "
			 "host (/sys/class/infiniband is empty or absent)");
	HAS(r[EVR_HC_ADDR_DEV].fix, "rdma link add rxe0 type rxe netdev");
	VERDICT(EVR_HC_VERBS_DEV, EVR_HC_SKIP);
	VERDICT(EVR_HC_RDMA_CM, EVR_HC_SKIP);
	VERDICT(EVR_HC_PORT, EVR_HC_SKIP);
	VERDICT(EVR_HC_GID, EVR_HC_SKIP);
	VERDICT(EVR_HC_MEMLOCK, EVR_HC_OK);
	ck_assert_uint_eq(rep.nfail, 1);
}
END_TEST

START_TEST(test_tcp_run)
{
	int i;

	need.rdma = 0;
	memlock.rlim_cur = memlock.rlim_max = 0;
	mode("uverbs0", 0);
	run();
	ck_assert_uint_eq(rep.nfail, 0);
	for (i = 0; i < EVR_HC_NOFILE; i++)
		VERDICT(i, EVR_HC_SKIP);
	VERDICT(EVR_HC_NOFILE, EVR_HC_OK);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(evr_hostcheck_name(EVR_HC_MEMLOCK), "memlock");
	ck_assert_str_eq(evr_hostcheck_name(EVR_HC_NOFILE), "nofile");
	ck_assert_ptr_null(evr_hostcheck_name(EVR_HC_COUNT));
	ck_assert_str_eq(evr_hostcheck_verdict_str(EVR_HC_OK), "ok");
	ck_assert_str_eq(evr_hostcheck_verdict_str(EVR_HC_FAIL), "FAIL");
	ck_assert_str_eq(evr_hostcheck_verdict_str(EVR_HC_SKIP), "skip");
}
END_TEST

START_TEST(test_memlock_estimates)
{
	struct evr_stream_opts o;
	struct evr_mcast_opts m;
	uint64_t one, pg = (uint64_t)sysconf(_SC_PAGESIZE);

	memset(&o, 0, sizeof(o));
	/* a transport that registers nothing locks nothing (its row has
	 * no memlock hook) */
	ck_assert_uint_eq(evr_stream_memlock(&o), 0); /* EVR_TRANSPORT_TCP */
	o.transport = (enum evr_stream_transport)7;
	ck_assert_uint_eq(evr_stream_memlock(&o), 0);
	o.transport = EVR_TRANSPORT_RDMA;
	one = evr_stream_memlock(&o);
	/* two buffers of twice -B 512k, plus the queues */
	ck_assert_uint_gt(one, 2u << 20);
	ck_assert_uint_lt(one, (2u << 20) + (256u << 10));
	ck_assert_uint_eq(one % pg, 0);
	/* full sizes up to 4 connections; beyond, the rings and queues
	 * shrink with the count (rstream(1), RDMA TRANSPORT) */
	o.conns = 4;
	ck_assert_uint_eq(evr_stream_memlock(&o), 4 * one);
	o.conns = 8;
	ck_assert_uint_lt(evr_stream_memlock(&o), 8 * one);
	ck_assert_uint_gt(evr_stream_memlock(&o), 4 * one);
	o.server = 1; /* one connection's */
	ck_assert_uint_eq(evr_stream_memlock(&o), one);
	o.server = 0;
	/* -B fixes the rings: only the queues shrink */
	o.buffer_size = 512 << 10;
	ck_assert_uint_lt(evr_stream_memlock(&o), 8 * one);
	ck_assert_uint_gt(evr_stream_memlock(&o), 8 * (2u << 20));
	o.buffer_size = 0;
	o.conns = 1;
	o.buffer_size = 4 << 20;
	ck_assert_uint_gt(evr_stream_memlock(&o), 16u << 20);

	memset(&m, 0, sizeof(m));
	m.count = 10;
	m.size = 100;
	m.transport = EVR_MC_UDP;
	ck_assert_uint_eq(evr_mcast_memlock(&m), 0);
	m.transport = EVR_MC_RDMA;
	one = evr_mcast_memlock(&m);
	ck_assert_uint_eq(one, 3 * pg);
	m.nqps = 3;
	ck_assert_uint_eq(evr_mcast_memlock(&m), 3 * one);
	m.nqps = 1;
	m.count = 1000000; /* capped at the slots a QP gets */
	m.size = 1024;
	ck_assert_uint_le(evr_mcast_memlock(&m),
			  4096ull * (1024 + 40 + 256) + 3 * pg);
	ck_assert_uint_ge(evr_mcast_memlock(&m), 4096ull * (1024 + 40));
}
END_TEST

static Suite *hostcheck_suite(void)
{
	Suite *su = suite_create("hostcheck");
	TCase *tc = tcase_create("checks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_all_ok);
	tcase_add_test(tc, test_memlock);
	tcase_add_test(tc, test_verbs_node);
	tcase_add_test(tc, test_cm_node);
	tcase_add_test(tc, test_address);
	tcase_add_test(tc, test_port_down);
	tcase_add_test(tc, test_gid);
	tcase_add_test(tc, test_netns);
	tcase_add_test(tc, test_mtu);
	tcase_add_test(tc, test_nofile);
	tcase_add_test(tc, test_no_rdma);
	tcase_add_test(tc, test_iwarp);
	tcase_add_test(tc, test_tcp_run);
	suite_add_tcase(su, tc);
	tc = tcase_create("tables");
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_memlock_estimates);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(hostcheck_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
