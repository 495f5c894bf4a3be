/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The device registry: the one owner of RDMA device state on a loop
 * (issue "When the NIC fails"; ../shared/spec/rnic-events.md).
 *
 * Both engines (the stream transport's devices, mckey's QPs) attach to
 * the device their RDMA CM id landed on, as a user.  The registry then
 * watches the device context's async fd in the loop (drained until
 * EAGAIN on every wakeup, each event acknowledged once used), keeps each
 * port's state, and tells every user of the device what happened:
 *
 *   PORT_DOWN  a port they may use went down (IBV_EVENT_PORT_ERR, or a
 *              query that found it not active): the user moves what it
 *              has on that port to error, its work requests flushed;
 *   PORT_UP    the port is back, its GID table read again, with at
 *              least one GID: new connections may be opened;
 *   GONE       the device is going away (RDMA_CM_EVENT_DEVICE_REMOVAL on
 *              one of the loop's ids, as a user reports with
 *              evr__dev_gone(), or IBV_EVENT_DEVICE_FATAL): the user
 *              releases everything it has on it (QPs, CQs, MRs, PDs,
 *              channels, CM ids) and detaches, at once.  Soft-RoCE and
 *              siw cannot unregister a device while anyone holds it:
 *              `rdma link delete` waits for the last user.
 *
 * When the last user of a gone device detaches, the registry forgets the
 * context and asks librdmacm to re-read its device list, which closes
 * librdmacm's own context of the device (it keeps one per device it has
 * used until such a re-read finds the device gone).  That re-read
 * (rdma_get_devices()) also opens a context of every device present,
 * so it is made only when a device has left, and once made, the device
 * list (libibverbs', which opens nothing) is read once a second for good
 * (without keeping the loop running): any of those devices leaving is
 * another re-read, and its removal is not held up.  The list is read
 * once a second too while a device nobody uses is remembered (librdmacm
 * may hold it).
 *
 * A device that went is looked for again (the kernel's RDMA netlink
 * monitor says when one registers, on Linux 6.12 and later; else a
 * bounded rescan of the device list, once a second while anyone waits
 * for one, as on Debian 12's 6.1) and matched by name and netdev, never by GUID
 * (a reset device keeps its GUID); evr__devreg_watch()'s watchers hear of
 * it.  A port that is not active is queried once a second too, in case
 * its PORT_ACTIVE was lost.
 *
 * The device's life is a named state (EVR__DEV_STATES), and so is each
 * port's (EVR__PORT_STATES); both are traced like the connections'.
 *
 * The verbs calls go through struct evr__dev_ops, so that
 * tests/check_device.c drives the registry with fake devices on a real
 * loop.
 */
#ifndef EVR_SRC_DEVICE_H
#define EVR_SRC_DEVICE_H

#include <ev.h>
#include <infiniband/verbs.h>
#include <stdint.h>

#include "loop.h"

/* A device's life.  ACTIVE: every port is up with a GID; PORT_DOWN: a
 * port is down or has no GID yet; GONE: removed or fatal. */
#define EVR__DEV_STATES(X) \
	X(ACTIVE) \
	X(PORT_DOWN) \
	X(GONE)

enum evr__dev_state {
#define X(s) EVR__DEV_##s,
	EVR__DEV_STATES(X)
#undef X
};

/* A port's.  DOWN: not active; NO_GID: active, but its GID table has no
 * usable entry yet (RoCE fills it from the netdev's addresses on a
 * workqueue of its own, after PORT_ACTIVE); ACTIVE: up with a GID. */
#define EVR__PORT_STATES(X) \
	X(DOWN) \
	X(NO_GID) \
	X(ACTIVE)

enum evr__port_state {
#define X(s) EVR__PORT_##s,
	EVR__PORT_STATES(X)
#undef X
};

/* What the registry counts, by kind: the async events it read (one row
 * each), and the removals and returns it saw. */
#define EVR__DEV_EVENT_KINDS(X) \
	X(PORT_ERR, "port_err") \
	X(PORT_ACTIVE, "port_active") \
	X(GID_CHANGE, "gid_change") \
	X(DEVICE_FATAL, "device_fatal") \
	X(PORT_OTHER, "port_other")     /* LID, PKEY, SM, client rereg */ \
	X(ASYNC_ERROR, "async_error")   /* a QP, CQ or SRQ error */ \
	X(REMOVAL, "removal")           /* RDMA_CM_EVENT_DEVICE_REMOVAL */ \
	X(RETURN, "return")             /* the device came back */

enum evr__dev_event_kind {
#define X(k, name) EVR__DEV_EK_##k,
	EVR__DEV_EVENT_KINDS(X)
#undef X
	EVR__DEV_EK__COUNT
};

/* What a user is told. */
enum evr__dev_note {
	EVR__DEV_N_PORT_DOWN,
	EVR__DEV_N_PORT_UP,
	EVR__DEV_N_GONE,
};

#define EVR__DEV_MAX_PORTS 4
#define EVR__DEV_NAME_MAX 64

struct evr__dev;
struct evr__devreg;

/* The verbs calls the registry makes, on ctx (an ibv_context for the
 * real ones). */
struct evr__dev_ops {
	/* One async event: 0, -EAGAIN when there is none, or another
	 * negative errno (the device is broken). */
	int (*get_event)(void *ctx, struct ibv_async_event *ev);
	void (*ack_event)(struct ibv_async_event *ev);
	/* The port's link: 1 active, 0 not, or a negative errno. */
	int (*port_active)(void *ctx, uint8_t port);
	/* The port's usable GIDs (the table read again): a count >= 0, or a
	 * negative errno. */
	int (*gid_count)(void *ctx, uint8_t port);
	/* The netdev's link: 1 up (IFF_UP and IFF_RUNNING), 0 down, or a
	 * negative errno (NULL: not asked). */
	int (*netdev_up)(const char *netdev);
};

extern const struct evr__dev_ops evr__dev_verbs_ops;

/* Facts about a device, for a user that names it (a failure, a trace). */
struct evr__dev_desc {
	const char *name;          /* "rxe0" */
	const char *netdev;        /* "veth0", "" when unknown */
	unsigned nports;           /* 1 .. EVR__DEV_MAX_PORTS */
	int fd;                    /* its async fd, watched by the loop */
};

struct evr__dev_port {
	enum evr__port_state state;
	int gids;                  /* usable GIDs at the last read */
	uint64_t gid_reads;        /* how often the table was read */
};

struct evr__dev {
	struct evr__dev *next;     /* the registry's devices */
	struct evr__devreg *reg;
	void *ctx;                 /* NULL once gone */
	const struct evr__dev_ops *ops;
	char name[EVR__DEV_NAME_MAX];
	char netdev[EVR__DEV_NAME_MAX];
	enum evr__dev_state state;
	int fatal;                 /* GONE by IBV_EVENT_DEVICE_FATAL */
	unsigned nports;
	struct evr__dev_port ports[EVR__DEV_MAX_PORTS];
	uint64_t events[EVR__DEV_EK__COUNT];
	struct evr__dev_user *users;
	unsigned nusers;
	ev_io async_w;
	ev_timer query_w;          /* a port not active: ask again */
};

/* A user of a device: an engine's hold on it.  note is called from the
 * loop (never from inside an evr__dev_* call the user made, except
 * evr__dev_gone() and evr__dev_refresh(), which say so); for GONE the
 * user releases what it holds on the device and detaches, inside the
 * call or from the loop soon after (what an owner must close first). */
struct evr__dev_user {
	struct evr__dev_user *next;
	struct evr__dev *dev;
	void (*note)(struct evr__dev_user *u, enum evr__dev_note n,
		     unsigned port);
};

/* Someone waiting for devices to come back (a server that listened on
 * one, a daemon). */
struct evr__dev_watch {
	struct evr__dev_watch *next;
	void (*back)(struct evr__dev_watch *w, const char *name);
	int waiting;               /* counted in the registry's rescan */
};

/* Attach u to the device of the context verbs (librdmacm's id->verbs),
 * registering the device at its first user.  0, or a negative errno (its
 * async fd could not be made non-blocking, memory). */
int evr__dev_attach(struct evr_loop *l, struct ibv_context *verbs,
		    struct evr__dev_user *u);
/* The same for any context, with its ops and facts (the tests' fakes). */
int evr__dev_attach_ops(struct evr_loop *l, void *ctx,
			const struct evr__dev_ops *ops,
			const struct evr__dev_desc *desc,
			struct evr__dev_user *u);
/* u lets go of its device (NULL or never attached: nothing).  The last
 * user of a gone device ends the registry's hold on it. */
void evr__dev_detach(struct evr__dev_user *u);

/* A user saw RDMA_CM_EVENT_DEVICE_REMOVAL on an id of the device: every
 * user (u included, from inside this call) is told GONE. */
void evr__dev_gone(struct evr__dev_user *u);

/* A user met an error and wants to know whether its port went down:
 * the device's pending async events are taken now, the port asked, and
 * (port 1 of a device with a netdev) the netdev's link looked at: a link
 * going down stops the netdev, and rxe fails the work requests, before
 * the port is marked down or its event sent.  Never waits.  Users may be
 * told (from inside this call).  Returns the port's state. */
enum evr__port_state evr__dev_refresh(struct evr__dev_user *u, unsigned port);

/* u's device and its state. */
static inline struct evr__dev *evr__dev_of(const struct evr__dev_user *u)
{
	return u->dev;
}

const char *evr__dev_state_name(enum evr__dev_state s);
const char *evr__port_state_name(enum evr__port_state s);
const char *evr__dev_event_name(enum evr__dev_event_kind k);

/* Devices coming back: w->back is called from the loop with the name of
 * a device that returned (matched by name and netdev).  While any watch
 * waits (evr__devreg_wait), the registry rescans once a second (where
 * the kernel has no netlink monitor). */
void evr__devreg_watch(struct evr_loop *l, struct evr__dev_watch *w);
void evr__devreg_unwatch(struct evr_loop *l, struct evr__dev_watch *w);
void evr__devreg_wait(struct evr_loop *l, struct evr__dev_watch *w, int on);

/* An id the loop's engines held on a device that is going away has been
 * destroyed (a listener's, a connection's before it had a CQ): from the
 * loop, the device list is read again and librdmacm told to let go of
 * its context of the device (the resync below). */
void evr__devreg_kick(struct evr_loop *l);

/* The loop's registry goes with the loop (evr_loop_free). */
void evr__devreg_free(struct evr_loop *l);

/* Whether the host has an RDMA device, without a loop (both engines'
 * transport checks): 0, or -EVR_E_NODEV. */
int evr__rdma_device_check(void);

/* For tests and the daemon's view: the loop's devices, in no order. */
struct evr__dev *evr__devreg_first(struct evr_loop *l);

/* The rescan's view of the device list, replaceable for tests: fills
 * names[] (up to max) with the devices present now; returns how many. */
typedef unsigned (*evr__dev_list_fn)(char names[][EVR__DEV_NAME_MAX],
				     char netdevs[][EVR__DEV_NAME_MAX],
				     unsigned max);
void evr__devreg_set_lister(struct evr_loop *l, evr__dev_list_fn fn);

/* librdmacm told to re-read its device list (rdma_get_devices() and
 * rdma_free_devices(): that closes its context of a device that left,
 * once no id refers to it, and opens one of every device present), when
 * a device left the list or a gone device's last id went; replaceable
 * for tests.  Without one set, a registry with a lister of its own
 * (evr__devreg_set_lister) tells nobody. */
typedef void (*evr__dev_resync_fn)(void);
void evr__devreg_set_resync(struct evr_loop *l, evr__dev_resync_fn fn);

/* The kernel's RDMA netlink monitor (nlmon.h): opened with the registry
 * where the kernel has one.  evr__devreg_set_monitor() makes FD the
 * registry's monitor instead (tests: one end of a SOCK_SEQPACKET socket pair;
 * -1: none, the rescan), closing the one it had; evr__devreg_monitored()
 * says whether it has one. */
void evr__devreg_set_monitor(struct evr_loop *l, int fd);
int evr__devreg_monitored(struct evr_loop *l);

#endif
