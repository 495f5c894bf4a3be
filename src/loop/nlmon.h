/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel's RDMA netlink monitor (Linux 6.12+; ../shared/spec/
 * rnic-events.md §1 and §4.7): a NETLINK_RDMA socket in the group
 * RDMA_NL_GROUP_NOTIFY hears a device register and unregister, and a
 * netdev attach to or detach from one of its ports, as it happens.  The
 * device registry (device.c) watches it in the loop instead of re-reading
 * the device list once a second while it waits for a device to come back;
 * where the kernel has no monitor (Debian 12's 6.1), the registry keeps
 * its bounded rescan.
 *
 * Everything read from the socket is range-checked before it is used:
 * message and attribute lengths against what was received, names against
 * their bounds, and only the kernel's own messages count.
 */
#ifndef EVR_SRC_NLMON_H
#define EVR_SRC_NLMON_H

#include <stddef.h>

/* A device or netdev name as the registry keeps it (IB_DEVICE_NAME_MAX
 * and IFNAMSIZ are both 64 and 16; the larger) */
#define EVR__NLMON_NAME_MAX 64

/* The monitor's events, numbered as the kernel numbers them (enum
 * rdma_nl_notify_event_type), and OTHER for one this code does not know */
#define EVR__NLMON_KINDS(X) \
	X(REGISTER) \
	X(UNREGISTER) \
	X(NETDEV_ATTACH) \
	X(NETDEV_DETACH) \
	X(RENAME) \
	X(NETDEV_RENAME) \
	X(OTHER)

enum evr__nlmon_kind {
#define X(k) EVR__NLMON_##k,
	EVR__NLMON_KINDS(X)
#undef X
};

struct evr__nlmon_event {
	enum evr__nlmon_kind kind;
	char dev[EVR__NLMON_NAME_MAX];     /* "" when not in the message */
	char netdev[EVR__NLMON_NAME_MAX];  /* "" when not in the message */
};

const char *evr__nlmon_kind_name(enum evr__nlmon_kind k);

/* The events of one datagram, at most MAX of them into OUT: how many, or
 * -1 when the datagram is malformed (a length out of range, a monitor
 * message without its event type): what it said is lost, and the caller
 * looks at the device list itself.  Messages of other kinds (an
 * acknowledgement, a reply) are skipped. */
int evr__nlmon_parse(const void *buf, size_t len,
		     struct evr__nlmon_event *out, unsigned max);

/* A non-blocking socket in the monitor's group, or -1 with errno set:
 * EPROTONOSUPPORT (no RDMA netlink at all), ENOTSUP (a kernel without
 * the monitor: its RDMA_NLDEV_CMD_SYS_GET reply has no monitor mode), or
 * what socket(2), bind(2) or the query said. */
int evr__nlmon_open(void);

/* Whether the datagram just received on FD came from the kernel (the
 * sender's netlink port 0): read one into BUF (at most LEN bytes).  The
 * number of bytes, 0 for one to ignore (from user space, or truncated),
 * -1 with errno as recvfrom(2) set it (EAGAIN: drained; ENOBUFS: events
 * were lost) or ECONNRESET (an empty read: the socket's end, as a test's
 * socket pair gives when its other end closes). */
long evr__nlmon_recv(int fd, void *buf, size_t len);

#endif
