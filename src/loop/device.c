/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The device registry (device.h): RDMA device and port state, one owner
 * per loop. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evrdma/error.h"
#include "channel.h"
#include "device.h"
#include "nlmon.h"

/* A port that is not active is asked again this often (a lost
 * PORT_ACTIVE must not leave it down for good), and so is the device
 * list while the rescan runs (rescan_update() says when). */
#define QUERY_S 1.0
#define RESCAN_S 1.0
/* The device list's size the rescan looks at (names beyond it are not
 * seen: no host has this many RDMA devices). */
#define LIST_MAX 64
/* GID table entries read at once (ibv_query_gid_table wants room for
 * every valid one, of every port). */
#define GID_MAX 256
/* Datagrams of the netlink monitor read on one wakeup (the rest on the
 * next: the watcher is level-triggered), and the size of one. */
#define NL_BURST 64
#define NL_BUF 8192

struct evr__devreg {
	struct evr_loop *loop;
	struct evr__dev *devs;
	struct evr__dev_watch *watches;
	unsigned waiting;          /* watches waiting for a return */
	ev_timer rescan_w;         /* unreferenced: never keeps the loop */
	int rescan_on;
	ev_timer kick_w;           /* a rescan now, from the loop */
	evr__dev_list_fn lister;
	evr__dev_resync_fn resync; /* NULL: rdmacm_resync(), or none */
	/* the names the last scan listed, while the rescan runs (NULL
	 * before its first scan and whenever it stops): a name that leaves
	 * it is a device librdmacm may hold */
	char (*prev)[EVR__DEV_NAME_MAX];
	unsigned nprev;
	int resync_due;            /* a gone device's last id went */
	int resynced;              /* librdmacm opened every device */
	/* the kernel's RDMA netlink monitor (nlmon.h), -1 where it has
	 * none: a device's return is heard, not polled for */
	int nl_fd;
	ev_io nl_w;                /* unreferenced, as the rescan */
	unsigned long nl_events;   /* heard */
	unsigned long nl_lost;     /* datagrams lost or malformed */
};

static const char *const dev_state_names[] = EVR__STATE_NAMES(EVR__DEV_STATES);
static const char *const port_state_names[] =
	EVR__STATE_NAMES(EVR__PORT_STATES);
#define EK_NAME(k, name) name,
static const char *const event_names[] = { EVR__DEV_EVENT_KINDS(EK_NAME) };
#undef EK_NAME

const char *evr__dev_state_name(enum evr__dev_state s)
{
	return EVR__NAME_AT(dev_state_names, s);
}

const char *evr__port_state_name(enum evr__port_state s)
{
	return EVR__NAME_AT(port_state_names, s);
}

const char *evr__dev_event_name(enum evr__dev_event_kind k)
{
	return EVR__NAME_AT(event_names, k);
}

/* ---- the verbs calls ---- */

static int v_get_event(void *ctx, struct ibv_async_event *ev)
{
	if (ibv_get_async_event(ctx, ev))
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN :
		       -(errno ? errno : EIO);
	return 0;
}

static void v_ack_event(struct ibv_async_event *ev)
{
	ibv_ack_async_event(ev);
}

static int v_port_active(void *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, port, &pa))
		return -(errno ? errno : EIO);
	return pa.state == IBV_PORT_ACTIVE;
}

static int v_gid_count(void *ctx, uint8_t port)
{
	struct ibv_gid_entry *e = calloc(GID_MAX, sizeof(*e));
	struct ibv_port_attr pa;
	ssize_t n, i;
	int count = 0, len;

	if (!e)
		return -ENOMEM;
	n = ibv_query_gid_table(ctx, e, GID_MAX, 0);
	for (i = 0; i < n; i++)
		count += e[i].port_num == port;
	free(e);
	if (n >= 0)
		return count;
	/* more valid entries than GID_MAX (or no table query): entry by
	 * entry, up to the port's table length, bounded */
	if (ibv_query_port(ctx, port, &pa))
		return -(errno ? errno : EIO);
	len = pa.gid_tbl_len > 0 && pa.gid_tbl_len < 4096 ? pa.gid_tbl_len :
	      4096;
	for (i = 0; i < len; i++) {
		struct ibv_gid_entry one;

		count += !ibv_query_gid_ex(ctx, port, (uint32_t)i, &one, 0);
	}
	return count;
}

static int v_netdev_up(const char *netdev)
{
	struct ifreq ifr;
	int fd, ret;

	if (strlen(netdev) >= sizeof(ifr.ifr_name))
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, netdev, strlen(netdev));
	/* IFF_RUNNING: netif_running(), cleared as the link goes down,
	 * before the port's event (and an operstate that is up) */
	ret = ioctl(fd, SIOCGIFFLAGS, &ifr) ? -errno :
	      (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
	close(fd);
	return ret;
}

const struct evr__dev_ops evr__dev_verbs_ops = {
	.get_event = v_get_event,
	.ack_event = v_ack_event,
	.port_active = v_port_active,
	.gid_count = v_gid_count,
	.netdev_up = v_netdev_up,
};

/* The interface whose hardware address is mac, into out ("" if none). */
static void netdev_by_mac(const uint8_t *mac, char *out, size_t len)
{
	struct ifaddrs *ifa, *i;
	const struct sockaddr_ll *ll;

	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		ll = (const struct sockaddr_ll *)(const void *)i->ifa_addr;
		if (ll && ll->sll_family == AF_PACKET && ll->sll_halen == 6 &&
		    !memcmp(ll->sll_addr, mac, 6)) {
			snprintf(out, len, "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
}

/* The netdev behind a device's first port, from its GID table: the
 * entry's netdev (RoCE), or the interface whose MAC address the GID
 * holds (iWARP: siw's entries name none); "" for InfiniBand. */
static void netdev_of(struct ibv_context *ctx, char *out, size_t len)
{
	static const uint8_t zero[10];
	struct ibv_gid_entry e;
	char name[IF_NAMESIZE];

	out[0] = '\0';
	if (ibv_query_gid_ex(ctx, 1, 0, &e, 0))
		return;
	if (e.ndev_ifindex && if_indextoname(e.ndev_ifindex, name))
		snprintf(out, len, "%s", name);
	else if (ctx->device->transport_type == IBV_TRANSPORT_IWARP &&
		 !memcmp(e.gid.raw + 6, zero, sizeof(zero)))
		netdev_by_mac(e.gid.raw, out, len);
}

/* ---- the registry ---- */

static void rescan_cb(struct ev_loop *l, ev_timer *w, int revents);
static void kick_cb(struct ev_loop *l, ev_timer *w, int revents);
static void nl_cb(struct ev_loop *l, ev_io *w, int revents);
static void nl_set(struct evr__devreg *r, int fd);
static void nl_stop(struct evr__devreg *r);

static struct evr__devreg *reg_get(struct evr_loop *l)
{
	struct evr__devreg *r = l->devreg;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->loop = l;
	ev_timer_init(&r->rescan_w, rescan_cb, RESCAN_S, RESCAN_S);
	ev_timer_init(&r->kick_w, kick_cb, 0., 0.);
	r->nl_fd = -1;
	l->devreg = r;
	nl_set(r, evr__nlmon_open());
	return r;
}

struct evr__dev *evr__devreg_first(struct evr_loop *l)
{
	return l->devreg ? l->devreg->devs : NULL;
}

void evr__devreg_set_lister(struct evr_loop *l, evr__dev_list_fn fn)
{
	struct evr__devreg *r = reg_get(l);

	if (r)
		r->lister = fn;
}

void evr__devreg_set_resync(struct evr_loop *l, evr__dev_resync_fn fn)
{
	struct evr__devreg *r = reg_get(l);

	if (r)
		r->resync = fn;
}

/* The last scan's names are only worth comparing with the next one
 * while scans follow each other: one taken long ago would make every
 * device that left meanwhile look like one that just left. */
static void prev_drop(struct evr__devreg *r)
{
	free(r->prev);
	r->prev = NULL;
	r->nprev = 0;
}

/* A device nobody uses now, not gone: librdmacm may hold a context of
 * it, which only a re-read of its list lets go of once it is gone. */
static int idle(const struct evr__dev *d)
{
	return !d->nusers && d->state != EVR__DEV_GONE;
}

/* The rescan (the device list read once a second) runs while
 * - someone waits for a device to come back, where the kernel has no
 *   netlink monitor to say so;
 * - a device nobody uses is remembered: librdmacm may hold a context of
 *   it, and its removal waits for that context (no event says that the
 *   removal began);
 * - librdmacm's own list was ever re-read (rdmacm_resync()): that opened
 *   a context of every device then present, used or not, which librdmacm
 *   keeps until a later re-read finds the device gone; so every device
 *   that leaves the list from then on is a re-read, within a second.
 * It never keeps the loop running by itself (ev_unref). */
static void rescan_update(struct evr__devreg *r)
{
	struct ev_loop *ev = r->loop->ev;
	const struct evr__dev *d;
	int want = (r->waiting > 0 && r->nl_fd < 0) || r->resynced;

	for (d = r->devs; d && !want; d = d->next)
		want = idle(d);
	if (want == r->rescan_on)
		return;
	r->rescan_on = want;
	if (want) {
		ev_timer_again(ev, &r->rescan_w);
		ev_unref(ev);
	} else {
		ev_ref(ev);
		ev_timer_stop(ev, &r->rescan_w);
		prev_drop(r);
	}
}

static void trace_dev(struct evr__dev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void trace_dev(struct evr__dev *d, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	if (!evr__tracing(d->reg->loop))
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	evr__trace(d->reg->loop, "dev %s: %s", d->name, what);
}

/* The device's state follows from its ports, unless it is gone. */
static void dev_settle(struct evr__dev *d)
{
	enum evr__dev_state s = EVR__DEV_ACTIVE;
	unsigned p;

	if (d->state == EVR__DEV_GONE)
		return;
	for (p = 0; p < d->nports; p++)
		if (d->ports[p].state != EVR__PORT_ACTIVE)
			s = EVR__DEV_PORT_DOWN;
	if (s == d->state)
		return;
	trace_dev(d, "%s -> %s", evr__dev_state_name(d->state),
		  evr__dev_state_name(s));
	d->state = s;
}

/* Tell every user; a user may detach itself (or, told GONE, must)
 * inside its call. */
static void notify(struct evr__dev *d, enum evr__dev_note n, unsigned port)
{
	struct evr__dev_user *u, *next;

	for (u = d->users; u; u = next) {
		next = u->next;
		u->note(u, n, port);
	}
}

/* A port not active is asked again, once a second, until it is. */
static void query_update(struct evr__dev *d)
{
	struct ev_loop *ev = d->reg->loop->ev;

	if (d->ctx && d->state == EVR__DEV_PORT_DOWN) {
		if (!ev_is_active(&d->query_w))
			ev_timer_again(ev, &d->query_w);
	} else {
		ev_timer_stop(ev, &d->query_w);
	}
}

static void port_set(struct evr__dev *d, unsigned port,
		     enum evr__port_state s)
{
	struct evr__dev_port *p = &d->ports[port - 1];
	enum evr__port_state was = p->state;

	if (was == s)
		return;
	trace_dev(d, "port %u %s -> %s (%d GIDs)", port,
		  evr__port_state_name(was), evr__port_state_name(s), p->gids);
	p->state = s;
	dev_settle(d);
	query_update(d);
	if (s == EVR__PORT_ACTIVE)
		notify(d, EVR__DEV_N_PORT_UP, port);
	else if (was == EVR__PORT_ACTIVE)
		notify(d, EVR__DEV_N_PORT_DOWN, port);
}

/* The link is up: the GID table is read again before the port counts as
 * active (after a flap RoCE's GIDs come back on a workqueue of their
 * own, at other indexes). */
static void port_up(struct evr__dev *d, unsigned port)
{
	struct evr__dev_port *p = &d->ports[port - 1];
	int n = d->ops->gid_count(d->ctx, (uint8_t)port);

	p->gid_reads++;
	p->gids = n > 0 ? n : 0;
	port_set(d, port, n > 0 ? EVR__PORT_ACTIVE : EVR__PORT_NO_GID);
}

/* Ask the port itself (at attach, on a timer while it is down, and for
 * a user that met an error). */
static void dev_gone(struct evr__dev *d, const char *why);

static void port_query(struct evr__dev *d, unsigned port)
{
	int up = d->ops->port_active(d->ctx, (uint8_t)port);

	if (up > 0)
		port_up(d, port);
	else if (up == 0)
		port_set(d, port, EVR__PORT_DOWN);
	else if (up == -EIO || up == -ENODEV)
		/* uverbs answers EIO once the kernel has disassociated the
		 * context: the device is going, whether or not its removal's
		 * event (RDMA CM) or DEVICE_FATAL has been read yet */
		dev_gone(d, "it no longer answers");
}

static void dev_gone(struct evr__dev *d, const char *why)
{
	struct ev_loop *ev = d->reg->loop->ev;

	if (d->state == EVR__DEV_GONE)
		return;
	trace_dev(d, "%s -> GONE (%s)", evr__dev_state_name(d->state), why);
	d->state = EVR__DEV_GONE;
	ev_timer_stop(ev, &d->query_w);
	/* nothing more is read from it: its users are letting go */
	if (d->ctx)
		ev_io_stop(ev, &d->async_w);
	notify(d, EVR__DEV_N_GONE, 0);
}

/* One async event, already taken; acknowledged once used. */
static void on_event(struct evr__dev *d, struct ibv_async_event *e)
{
	unsigned port = 0;
	enum evr__dev_event_kind k;

	switch (e->event_type) {
	case IBV_EVENT_PORT_ERR:
		k = EVR__DEV_EK_PORT_ERR;
		port = (unsigned)e->element.port_num;
		break;
	case IBV_EVENT_PORT_ACTIVE:
		k = EVR__DEV_EK_PORT_ACTIVE;
		port = (unsigned)e->element.port_num;
		break;
	case IBV_EVENT_GID_CHANGE:
		k = EVR__DEV_EK_GID_CHANGE;
		port = (unsigned)e->element.port_num;
		break;
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
		k = EVR__DEV_EK_PORT_OTHER;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		k = EVR__DEV_EK_DEVICE_FATAL;
		break;
	default:
		k = EVR__DEV_EK_ASYNC_ERROR;
		break;
	}
	d->ops->ack_event(e);
	d->events[k]++;
	if (port)
		trace_dev(d, "event %s port %u",
			  ibv_event_type_str(e->event_type), port);
	else
		trace_dev(d, "event %s", ibv_event_type_str(e->event_type));
	/* a port event for a port we do not know (0 included: the number
	 * comes from the kernel and indexes our array) changes nothing */
	if ((k == EVR__DEV_EK_PORT_ERR || k == EVR__DEV_EK_PORT_ACTIVE ||
	     k == EVR__DEV_EK_GID_CHANGE) &&
	    (port < 1 || port > d->nports || port > EVR__DEV_MAX_PORTS))
		return;
	switch (k) {
	case EVR__DEV_EK_PORT_ERR:
		port_set(d, port, EVR__PORT_DOWN);
		break;
	case EVR__DEV_EK_PORT_ACTIVE:
		port_up(d, port);
		break;
	case EVR__DEV_EK_GID_CHANGE:
		/* a port waiting for its GIDs may now have them; an active
		 * one re-reads its table (its count, for the record) */
		if (d->ports[port - 1].state != EVR__PORT_DOWN)
			port_up(d, port);
		break;
	case EVR__DEV_EK_DEVICE_FATAL:
		d->fatal = 1;
		dev_gone(d, "IBV_EVENT_DEVICE_FATAL");
		break;
	default:
		break;
	}
}

/* Every pending event, until EAGAIN: one read per wakeup would strand
 * the rest (PORT_ACTIVE among them) under a level change that never
 * comes again. */
static void drain(struct evr__dev *d)
{
	struct ibv_async_event e;
	int ret;

	while (d->ctx && d->state != EVR__DEV_GONE) {
		ret = d->ops->get_event(d->ctx, &e);
		if (ret == -EAGAIN)
			break;
		if (ret) {
			dev_gone(d, "the async fd failed");
			break;
		}
		on_event(d, &e);
	}
}

static void async_cb(struct ev_loop *l, ev_io *w, int revents)
{
	drain(evr__container_of(w, struct evr__dev, async_w));
}

static void query_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr__dev *d = evr__container_of(w, struct evr__dev, query_w);
	unsigned p;

	drain(d);
	for (p = 1; p <= d->nports && d->ctx && d->state != EVR__DEV_GONE;
	     p++)
		if (d->ports[p - 1].state != EVR__PORT_ACTIVE)
			port_query(d, p);
}

/* The device watched through ctx, else the one called name. */
static struct evr__dev *find(struct evr__devreg *r, const void *ctx,
			     const char *name)
{
	struct evr__dev *d;

	for (d = r->devs; d; d = d->next)
		if (d->ctx == ctx)
			return d;
	for (d = r->devs; d; d = d->next)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

/* Start watching ctx for d (a new device, or one that came back). */
static int watch(struct evr__dev *d, void *ctx,
		 const struct evr__dev_ops *ops,
		 const struct evr__dev_desc *desc)
{
	struct ev_loop *ev = d->reg->loop->ev;
	unsigned p;
	int ret;

	ret = evr__fd_set_nonblock(desc->fd, 1);
	if (ret)
		return ret;
	d->ctx = ctx;
	d->ops = ops;
	snprintf(d->netdev, sizeof(d->netdev), "%s", desc->netdev);
	d->nports = desc->nports < 1 ? 1 :
		    desc->nports > EVR__DEV_MAX_PORTS ? EVR__DEV_MAX_PORTS :
		    desc->nports;
	d->fatal = 0;
	if (d->state == EVR__DEV_GONE) {
		/* back before a rescan saw it */
		d->events[EVR__DEV_EK_RETURN]++;
		trace_dev(d, "GONE -> PORT_DOWN (back: attached again)");
		d->state = EVR__DEV_PORT_DOWN;
	}
	/* the ports as they are now, below: down until asked */
	for (p = 0; p < d->nports; p++)
		d->ports[p].state = EVR__PORT_DOWN;
	d->state = EVR__DEV_PORT_DOWN;
	ev_io_init(&d->async_w, async_cb, desc->fd, EV_READ);
	ev_io_start(ev, &d->async_w);
	ev_timer_init(&d->query_w, query_cb, QUERY_S, QUERY_S);
	/* what is queued already, then each port as it is now */
	drain(d);
	for (p = 1; p <= d->nports && d->state != EVR__DEV_GONE; p++)
		if (d->ports[p - 1].state != EVR__PORT_ACTIVE)
			port_query(d, p);
	query_update(d);
	return 0;
}

/* Stop watching d's context (its last user went): its state stays, for
 * the record, and for a return. */
static void unwatch(struct evr__dev *d)
{
	struct ev_loop *ev = d->reg->loop->ev;

	if (!d->ctx)
		return;
	ev_io_stop(ev, &d->async_w);
	ev_timer_stop(ev, &d->query_w);
	d->ctx = NULL;
}

int evr__dev_attach_ops(struct evr_loop *l, void *ctx,
			const struct evr__dev_ops *ops,
			const struct evr__dev_desc *desc,
			struct evr__dev_user *u)
{
	struct evr__devreg *r = reg_get(l);
	struct evr__dev *d;
	int ret, fresh = 0;

	if (!r)
		return -ENOMEM;
	d = find(r, ctx, desc->name);
	if (d && d->ctx && d->ctx != ctx)
		/* the same name, another context: the old one is gone (a
		 * device that came back while its old users were still
		 * letting go) */
		d = NULL;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		d->reg = r;
		snprintf(d->name, sizeof(d->name), "%s", desc->name);
		d->state = EVR__DEV_PORT_DOWN;
		fresh = 1;
	}
	if (!d->ctx) {
		ret = watch(d, ctx, ops, desc);
		if (ret) {
			if (fresh)
				free(d);
			return ret;
		}
	}
	if (fresh) {
		d->next = r->devs;
		r->devs = d;
	}
	u->dev = d;
	u->next = d->users;
	d->users = u;
	d->nusers++;
	rescan_update(r);
	return 0;
}

int evr__dev_attach(struct evr_loop *l, struct ibv_context *verbs,
		    struct evr__dev_user *u)
{
	struct evr__dev_desc desc = { 0 };
	struct ibv_device_attr da;
	char netdev[IF_NAMESIZE + 1];

	desc.name = ibv_get_device_name(verbs->device);
	desc.nports = !ibv_query_device(verbs, &da) ? da.phys_port_cnt : 1;
	netdev_of(verbs, netdev, sizeof(netdev));
	desc.netdev = netdev;
	desc.fd = verbs->async_fd;
	if (!desc.name)
		desc.name = "?";
	return evr__dev_attach_ops(l, verbs, &evr__dev_verbs_ops, &desc, u);
}

/* librdmacm keeps a context of every device it has used until a re-read
 * of its device list finds the device gone and nothing refers to it:
 * this re-read is what lets a removal finish.  It is no mere read:
 * rdma_get_devices() (rdma-core 44's) also opens a context of every
 * device present, and keeps those that stay, so the registry calls it
 * only when a device has left (resync_maybe()) and, once it has, looks
 * for every later leaving (rescan_update()). */
static void rdmacm_resync(void)
{
	struct ibv_context **l = rdma_get_devices(NULL);

	if (l)
		rdma_free_devices(l);
}

void evr__dev_detach(struct evr__dev_user *u)
{
	struct evr__dev *d = u ? u->dev : NULL;
	struct evr__dev_user **pp;

	if (!d)
		return;
	for (pp = &d->users; *pp && *pp != u; pp = &(*pp)->next)
		;
	if (*pp) {
		*pp = u->next;
		d->nusers--;
	}
	u->dev = NULL;
	u->next = NULL;
	if (d->nusers)
		return;
	unwatch(d);
	/* the last user of a gone device: from the loop, librdmacm is told
	 * to let go of its context too */
	if (d->state == EVR__DEV_GONE)
		evr__devreg_kick(d->reg->loop);
	rescan_update(d->reg);
}

void evr__dev_gone(struct evr__dev_user *u)
{
	if (!u->dev)
		return;
	u->dev->events[EVR__DEV_EK_REMOVAL]++;
	dev_gone(u->dev, "RDMA_CM_EVENT_DEVICE_REMOVAL");
}

enum evr__port_state evr__dev_refresh(struct evr__dev_user *u, unsigned port)
{
	struct evr__dev *d = u->dev;

	if (!d || !d->ctx || port < 1 || port > d->nports)
		return EVR__PORT_DOWN;
	drain(d);
	if (d->ctx && d->state != EVR__DEV_GONE &&
	    d->ports[port - 1].state == EVR__PORT_ACTIVE)
		port_query(d, port);
	/* the kernel clears the netdev's link before it marks the port down
	 * (and rxe fails work requests in between) */
	if (d->ctx && d->state != EVR__DEV_GONE && port == 1 &&
	    d->netdev[0] && d->ops->netdev_up &&
	    d->ports[0].state == EVR__PORT_ACTIVE &&
	    d->ops->netdev_up(d->netdev) == 0) {
		trace_dev(d, "port 1: %s's link is down", d->netdev);
		port_set(d, 1, EVR__PORT_DOWN);
	}
	return d->ports[port - 1].state;
}

/* ---- the public view ---- */

_Static_assert(EVR__DEV_MAX_PORTS == EVR_DEV_PORTS_MAX,
	       "the public port array is the registry's");
_Static_assert(EVR__DEV_EK__COUNT <= EVR_DEV_EVENTS_MAX,
	       "every event kind fits the public array");

static void info_of(const struct evr__dev *d, struct evr_dev_info *o)
{
	unsigned p, k;

	memset(o, 0, sizeof(*o));
	snprintf(o->name, sizeof(o->name), "%s", d->name);
	snprintf(o->netdev, sizeof(o->netdev), "%s", d->netdev);
	o->state = evr__dev_state_name(d->state);
	o->in_use = d->nusers > 0;
	o->nports = d->nports;
	for (p = 0; p < d->nports; p++) {
		o->ports[p].state = evr__port_state_name(d->ports[p].state);
		o->ports[p].gids = d->ports[p].gids;
	}
	o->nevents = EVR__DEV_EK__COUNT;
	for (k = 0; k < EVR__DEV_EK__COUNT; k++) {
		o->events[k].kind = evr__dev_event_name(k);
		o->events[k].count = d->events[k];
	}
}

unsigned evr_loop_devices(struct evr_loop *l, struct evr_dev_info *out,
			  unsigned max)
{
	const struct evr__dev *d;
	unsigned n = 0, i;

	if (!l || !l->devreg)
		return 0;
	for (d = l->devreg->devs; d; d = d->next)
		n++;
	/* the list is newest first: the oldest goes first */
	i = n;
	for (d = l->devreg->devs; d; d = d->next) {
		i--;
		if (out && i < max)
			info_of(d, &out[i]);
	}
	return n;
}

/* ---- devices coming back, and idle ones going ---- */

/* s without the white space around it, in place. */
static void trim(char *s)
{
	char *p;

	for (p = s; *p && isspace((unsigned char)*p); p++)
		;
	memmove(s, p, strlen(p) + 1);
	for (p = s + strlen(s); p > s && isspace((unsigned char)p[-1]);)
		*--p = '\0';
}

/* An iWARP device's netdev, as netdev_of() finds it: the interface
 * whose MAC address its port 1 GID 0 holds (then zeros); siw's GID
 * entries name no netdev. */
static void sysfs_mac_netdev(const char *dev, char *out, size_t len)
{
	char path[96 + EVR__DEV_NAME_MAX], line[64];
	struct in6_addr g;
	FILE *f;
	int k, zero = 1;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", dev);
	f = fopen(path, "re");
	if (!f)
		return;
	k = fgets(line, sizeof(line), f) && strstr(line, "RNIC");
	fclose(f);
	if (!k)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/0",
		 dev);
	f = fopen(path, "re");
	if (!f)
		return;
	k = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	trim(line);
	if (!k || inet_pton(AF_INET6, line, &g) != 1)
		return;
	for (k = 6; k < 16; k++)
		zero &= !g.s6_addr[k];
	if (zero)
		netdev_by_mac(g.s6_addr, out, len);
}

/* The netdev of a device's port 1 as sysfs has it (its GID 0's, the
 * file's first line), "" where there is none (InfiniBand; iWARP's GIDs
 * name none): the device list's view, without opening the device. */
static void sysfs_netdev(const char *dev, char *out, size_t len)
{
	char path[96 + EVR__DEV_NAME_MAX];
	FILE *f;

	out[0] = '\0';
	if (!dev[0] || strchr(dev, '/') || dev[0] == '.')
		return;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", dev);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(out, (int)len, f))
			out[0] = '\0';
		fclose(f);
		trim(out);
		return;
	}
	sysfs_mac_netdev(dev, out, len);
}

/* libibverbs' list, which opens nothing: a device whose removal has
 * begun leaves it at once (its uverbs entry goes before the kernel waits
 * for the device's users).  Never librdmacm's rdma_get_devices(): that
 * opens every device (rdmacm_resync()). */
static unsigned verbs_lister(char names[][EVR__DEV_NAME_MAX],
			     char netdevs[][EVR__DEV_NAME_MAX], unsigned max)
{
	struct ibv_device **l;
	const char *name;
	unsigned k = 0;
	int n = 0, i;

	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n && k < max; i++) {
		name = ibv_get_device_name(l[i]);
		if (!name)
			continue;
		snprintf(names[k], EVR__DEV_NAME_MAX, "%s", name);
		sysfs_netdev(names[k], netdevs[k], EVR__DEV_NAME_MAX);
		k++;
	}
	if (l)
		ibv_free_device_list(l);
	return k;
}

static int listed_in(char names[][EVR__DEV_NAME_MAX], unsigned n,
		     const char *name)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/* A name the last scan listed that this one does not: a device that
 * left, of which librdmacm may hold a context. */
static const char *left_list(const struct evr__devreg *r,
			     char names[][EVR__DEV_NAME_MAX], unsigned n)
{
	unsigned i;

	for (i = 0; r->prev && i < r->nprev; i++)
		if (!listed_in(names, n, r->prev[i]))
			return r->prev[i];
	return NULL;
}

/* librdmacm re-reads its list when a device has left (WHY names it), or
 * when a gone device's last id went: once.  With a lister of its own (a
 * test) and no resync of its own, there is no librdmacm behind the list:
 * nothing to tell. */
static void resync_maybe(struct evr__devreg *r, const char *why)
{
	evr__dev_resync_fn fn = r->resync ? r->resync :
				r->lister ? NULL : rdmacm_resync;

	if (!why && r->resync_due)
		why = "a gone device's last id went";
	r->resync_due = 0;
	if (!why || !fn)
		return;
	if (evr__tracing(r->loop))
		evr__trace(r->loop, "devices: %s: librdmacm's device list "
			   "read again", why);
	fn();
	r->resynced = 1;
}

/* d came back to the list: a user that attaches again watches it, and
 * the watchers hear of it. */
static void dev_back(struct evr__devreg *r, struct evr__dev *d)
{
	struct evr__dev_watch *w, *wnext;

	d->events[EVR__DEV_EK_RETURN]++;
	trace_dev(d, "GONE -> PORT_DOWN (back in the device list)");
	d->state = EVR__DEV_PORT_DOWN;
	d->fatal = 0;
	for (w = r->watches; w; w = wnext) {
		wnext = w->next;
		w->back(w, d->name);
	}
}

/* Whether the list has d: its name, and its netdev where both say one. */
static int dev_listed(const struct evr__dev *d,
		      char names[][EVR__DEV_NAME_MAX],
		      char netdevs[][EVR__DEV_NAME_MAX], unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], d->name) &&
		    (!d->netdev[0] || !netdevs[i][0] ||
		     !strcmp(netdevs[i], d->netdev)))
			return 1;
	return 0;
}

/* One read of the device list: the remembered devices gone or back,
 * librdmacm told when one left (resync_maybe()), and the names kept for
 * the next read while reads go on. */
static void rescan(struct evr__devreg *r)
{
	char (*names)[EVR__DEV_NAME_MAX], (*netdevs)[EVR__DEV_NAME_MAX];
	char why[EVR__DEV_NAME_MAX + 40];
	const char *left;
	struct evr__dev *d;
	unsigned n;
	int seen;

	names = calloc(LIST_MAX, sizeof(*names));
	netdevs = calloc(LIST_MAX, sizeof(*netdevs));
	if (!names || !netdevs) {
		free(names);
		free(netdevs);
		return; /* the next turn tries again */
	}
	n = (r->lister ? r->lister : verbs_lister)(names, netdevs, LIST_MAX);
	/* (copied now: a user told GONE below may stop the rescan, and the
	 * last read's names with it) */
	left = left_list(r, names, n);
	why[0] = '\0';
	if (left)
		snprintf(why, sizeof(why), "%s left the device list", left);
	for (d = r->devs; d; d = d->next) {
		seen = dev_listed(d, names, netdevs, n);
		if (!seen && d->state != EVR__DEV_GONE) {
			d->events[EVR__DEV_EK_REMOVAL]++;
			if (!why[0])
				snprintf(why, sizeof(why),
					 "%s left the device list", d->name);
			dev_gone(d, "not in the device list");
		} else if (seen && d->state == EVR__DEV_GONE && !d->ctx &&
			   !d->nusers) {
			dev_back(r, d);
		}
	}
	free(netdevs);
	resync_maybe(r, why[0] ? why : NULL);
	rescan_update(r);
	/* this read's names, for the next one while reads go on */
	prev_drop(r);
	if (r->rescan_on) {
		r->prev = names;
		r->nprev = n;
	} else {
		free(names);
	}
}

static void rescan_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	rescan(evr__container_of(w, struct evr__devreg, rescan_w));
}

static void kick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	rescan(evr__container_of(w, struct evr__devreg, kick_w));
}

/* A rescan now, from the loop (what the netlink monitor heard). */
static void kick(struct evr__devreg *r)
{
	ev_timer_start(r->loop->ev, &r->kick_w);
}

/* ---- the kernel's netlink monitor ---- */

/* Watch FD (-1: none) as the registry's monitor, instead of the one it
 * had. */
static void nl_stop(struct evr__devreg *r)
{
	if (r->nl_fd < 0)
		return;
	ev_ref(r->loop->ev);
	ev_io_stop(r->loop->ev, &r->nl_w);
	close(r->nl_fd);
	r->nl_fd = -1;
}

static void nl_set(struct evr__devreg *r, int fd)
{
	struct ev_loop *ev = r->loop->ev;

	nl_stop(r);
	r->nl_fd = fd;
	if (fd >= 0) {
		ev_io_init(&r->nl_w, nl_cb, fd, EV_READ);
		ev_io_start(ev, &r->nl_w);
		ev_unref(ev);
	}
	if (evr__tracing(r->loop))
		evr__trace(r->loop, "devices: %s", fd >= 0 ?
			   "the kernel's RDMA netlink monitor says when one "
			   "comes or goes" :
			   "no RDMA netlink monitor: the device list is read "
			   "again once a second while one is awaited");
	rescan_update(r);
}

static void nl_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct evr__devreg *r = evr__container_of(w, struct evr__devreg,
						  nl_w);
	struct evr__nlmon_event evs[8];
	unsigned char *buf;
	int i, k, heard = 0, b;
	long n;

	buf = malloc(NL_BUF);
	if (!buf) {
		kick(r); /* what it said: look instead */
		return;
	}
	for (b = 0; b < NL_BURST; b++) {
		n = evr__nlmon_recv(r->nl_fd, buf, NL_BUF);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				break;
			if (errno == ENOBUFS) {
				/* the socket overflowed: events lost */
				r->nl_lost++;
				heard = 1;
				continue;
			}
			/* the monitor broke: back to the rescan */
			evr__trace(r->loop, "devices: the netlink monitor "
				   "failed (%s)", strerror(errno));
			free(buf);
			nl_set(r, -1);
			kick(r);
			return;
		}
		if (!n)
			continue; /* not the kernel's */
		k = evr__nlmon_parse(buf, (size_t)n, evs, 8);
		if (k < 0) {
			r->nl_lost++;
			heard = 1;
			continue;
		}
		for (i = 0; i < k; i++) {
			r->nl_events++;
			heard = 1;
			if (evr__tracing(r->loop))
				evr__trace(r->loop, "devices: netlink %s %s%s%s",
					   evr__nlmon_kind_name(evs[i].kind),
					   evs[i].dev[0] ? evs[i].dev : "?",
					   evs[i].netdev[0] ? " netdev " : "",
					   evs[i].netdev);
		}
	}
	free(buf);
	/* whatever came or went, the device list says which (and a device
	 * that left is a re-read of librdmacm's: rescan()) */
	if (heard)
		kick(r);
}

void evr__devreg_set_monitor(struct evr_loop *l, int fd)
{
	struct evr__devreg *r = reg_get(l);

	if (r)
		nl_set(r, fd);
	else if (fd >= 0)
		close(fd);
}

int evr__devreg_monitored(struct evr_loop *l)
{
	return l->devreg && l->devreg->nl_fd >= 0;
}

void evr__devreg_kick(struct evr_loop *l)
{
	struct evr__devreg *r = reg_get(l);

	if (!r)
		return;
	r->resync_due = 1;
	kick(r);
}

void evr__devreg_watch(struct evr_loop *l, struct evr__dev_watch *w)
{
	struct evr__devreg *r = reg_get(l);

	if (!r)
		return;
	w->next = r->watches;
	r->watches = w;
}

void evr__devreg_wait(struct evr_loop *l, struct evr__dev_watch *w, int on)
{
	struct evr__devreg *r = l->devreg;

	if (!r || w->waiting == !!on)
		return;
	w->waiting = !!on;
	if (on)
		r->waiting++;
	else
		r->waiting--;
	rescan_update(r);
}

void evr__devreg_unwatch(struct evr_loop *l, struct evr__dev_watch *w)
{
	struct evr__devreg *r = l->devreg;
	struct evr__dev_watch **pp;

	if (!r)
		return;
	evr__devreg_wait(l, w, 0);
	for (pp = &r->watches; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
}

void evr__devreg_free(struct evr_loop *l)
{
	struct evr__devreg *r = l->devreg;
	struct evr__dev *d;

	if (!r)
		return;
	r->waiting = 0;
	while ((d = r->devs)) {
		r->devs = d->next;
		d->nusers = 1; /* not idle: the rescan stops below */
		unwatch(d);
		free(d);
	}
	nl_stop(r);
	r->resynced = 0;
	rescan_update(r);
	prev_drop(r);
	ev_timer_stop(l->ev, &r->kick_w);
	free(r);
	l->devreg = NULL;
}

int evr__rdma_device_check(void)
{
	struct ibv_device **l;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	return n > 0 ? 0 : -EVR_E_NODEV;
}
