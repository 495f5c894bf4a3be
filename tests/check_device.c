/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The device registry (src/loop/device.c) on a real loop, with fake
 * devices: a queue of async events behind a pipe that is readable while
 * the queue holds any (as a device's async fd is), ports whose link and
 * GID count the test sets, and a fake device list for the rescan.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <sys/socket.h>

#include "loop/device.h"
#include "loop/loop.h"
#include "loop/nlmon.h"

#define QMAX 256

struct fake {
	int pipe[2];
	struct ibv_async_event q[QMAX];
	unsigned head, tail;
	int active[EVR__DEV_MAX_PORTS + 1];
	int gids[EVR__DEV_MAX_PORTS + 1];
	int fail;                 /* get_event fails: the fd broke */
	unsigned gets, acks, gid_reads;
	char log[1024];           /* what happened, in order */
};

static void logf_(struct fake *f, const char *s)
{
	size_t n = strlen(f->log);

	snprintf(f->log + n, sizeof(f->log) - n, "%s;", s);
}

static int f_get_event(void *ctx, struct ibv_async_event *ev)
{
	struct fake *f = ctx;
	char b;

	if (f->fail)
		return -EIO;
	if (f->head == f->tail)
		return -EAGAIN;
	*ev = f->q[f->head++ % QMAX];
	f->gets++;
	if (f->head == f->tail)
		ck_assert_int_eq(read(f->pipe[0], &b, 1), 1);
	return 0;
}

static struct fake *acked_on; /* the fake whose acks f_ack_counted counts */

static void f_ack_counted(struct ibv_async_event *ev)
{
	(void)ev;
	acked_on->acks++;
}

static int f_port_active(void *ctx, uint8_t port)
{
	return ((struct fake *)ctx)->active[port];
}

static int f_gid_count(void *ctx, uint8_t port)
{
	struct fake *f = ctx;
	char s[32];

	f->gid_reads++;
	snprintf(s, sizeof(s), "gids%u", port);
	logf_(f, s);
	return f->gids[port];
}

static const struct evr__dev_ops fake_ops = {
	.get_event = f_get_event,
	.ack_event = f_ack_counted,
	.port_active = f_port_active,
	.gid_count = f_gid_count,
};

static void push(struct fake *f, enum ibv_event_type t, int port)
{
	struct ibv_async_event e;

	memset(&e, 0, sizeof(e));
	e.event_type = t;
	e.element.port_num = port;
	if (f->head == f->tail)
		ck_assert_int_eq(write(f->pipe[1], "x", 1), 1);
	f->q[f->tail++ % QMAX] = e;
}

static void fake_init(struct fake *f, int nports_up)
{
	int p;

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(pipe(f->pipe), 0);
	for (p = 1; p <= EVR__DEV_MAX_PORTS; p++) {
		f->active[p] = p <= nports_up;
		f->gids[p] = 2;
	}
	acked_on = f;
}

static void fake_fini(struct fake *f)
{
	close(f->pipe[0]);
	close(f->pipe[1]);
}

/* A user that records what it is told, and detaches when told GONE. */
struct tuser {
	struct evr__dev_user u;
	struct fake *f;
	unsigned ups, downs, gones;
	unsigned last_port;
	int stay;                /* does not detach on GONE (a bad user) */
};

static void t_note(struct evr__dev_user *u, enum evr__dev_note n,
		   unsigned port)
{
	struct tuser *t = (struct tuser *)u;
	char s[32];

	t->last_port = port;
	switch (n) {
	case EVR__DEV_N_PORT_UP:
		t->ups++;
		snprintf(s, sizeof(s), "up%u", port);
		break;
	case EVR__DEV_N_PORT_DOWN:
		t->downs++;
		snprintf(s, sizeof(s), "down%u", port);
		break;
	case EVR__DEV_N_GONE:
		t->gones++;
		snprintf(s, sizeof(s), "gone");
		if (!t->stay)
			evr__dev_detach(u);
		break;
	}
	if (t->f)
		logf_(t->f, s);
}

static void tuser_init(struct tuser *t, struct fake *f)
{
	memset(t, 0, sizeof(*t));
	t->u.note = t_note;
	t->f = f;
}

static int attach(struct evr_loop *l, struct fake *f, const char *name,
		  unsigned nports, struct tuser *t)
{
	struct evr__dev_desc d = { name, "veth0", nports, f->pipe[0] };

	return evr__dev_attach_ops(l, f, &fake_ops, &d, &t->u);
}

static struct evr_loop *new_loop(void)
{
	struct evr_loop *l;

	ck_assert_int_eq(evr_loop_new(&l, NULL), 0);
	return l;
}

/* One loop iteration that blocks for the first event. */
static void run_once(struct evr_loop *l)
{
	ev_run(l->ev, EVRUN_ONCE);
}

static void stop_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

/* Run the loop for secs (the registry's own timers never keep it
 * running by themselves). */
static void run_secs(struct evr_loop *l, double secs)
{
	ev_timer t;

	ev_timer_init(&t, stop_cb, secs, 0.);
	ev_timer_start(l->ev, &t);
	ev_run(l->ev, 0);
	ev_timer_stop(l->ev, &t);
}

/* A loop, one fake device of nports ports (the first up of them up) and
 * one user attached to it: most cases' start. */
struct fix {
	struct evr_loop *l;
	struct fake f;
	struct tuser t;
	struct evr__dev *d;
};

static void fix_start(struct fix *x, const char *name, unsigned nports,
		      int up)
{
	x->l = new_loop();
	fake_init(&x->f, up);
	tuser_init(&x->t, &x->f);
	ck_assert_int_eq(attach(x->l, &x->f, name, nports, &x->t), 0);
	x->d = evr__dev_of(&x->t.u);
	ck_assert_ptr_nonnull(x->d);
}

static void fix_end(struct fix *x)
{
	evr__dev_detach(&x->t.u);
	evr_loop_free(x->l);
	fake_fini(&x->f);
}

START_TEST(test_attach_reads_ports)
{
	struct fix x;

	fix_start(&x, "rxe0", 2, 1);
	ck_assert_str_eq(x.d->name, "rxe0");
	ck_assert_str_eq(x.d->netdev, "veth0");
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_int_eq(x.d->ports[1].state, EVR__PORT_DOWN);
	ck_assert_int_eq(x.d->state, EVR__DEV_PORT_DOWN);
	ck_assert_str_eq(evr__dev_state_name(x.d->state), "PORT_DOWN");
	ck_assert_str_eq(evr__port_state_name(x.d->ports[0].state), "ACTIVE");
	/* the non-blocking fd: a read of an empty queue never blocks */
	ck_assert(fcntl(x.f.pipe[0], F_GETFL) & O_NONBLOCK);
	/* a second user of the same context shares the device */
	{
		struct tuser t2;

		tuser_init(&t2, NULL);
		ck_assert_int_eq(attach(x.l, &x.f, "rxe0", 2, &t2), 0);
		ck_assert_ptr_eq(evr__dev_of(&t2.u), x.d);
		ck_assert_uint_eq(x.d->nusers, 2);
		evr__dev_detach(&t2.u);
		ck_assert_uint_eq(x.d->nusers, 1);
	}
	fix_end(&x);
}
END_TEST

/* 100 events queued at once, one PORT_ACTIVE among them: one wakeup
 * takes them all, each is acknowledged, and the port is up (a read per
 * wakeup would leave 99 behind, PORT_ACTIVE among them). */
START_TEST(test_hundred_events_one_wakeup)
{
	struct fix x;
	int i;

	fix_start(&x, "rxe1", 1, 0);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_DOWN);
	for (i = 0; i < 100; i++)
		push(&x.f, i == 73 ? IBV_EVENT_PORT_ACTIVE :
			 i % 2 ? IBV_EVENT_LID_CHANGE : IBV_EVENT_SM_CHANGE, 1);
	run_once(x.l);
	ck_assert_uint_eq(x.f.gets, 100);
	ck_assert_uint_eq(x.f.acks, 100);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_int_eq(x.d->state, EVR__DEV_ACTIVE);
	ck_assert_uint_eq(x.t.ups, 1);
	ck_assert_uint_eq(x.d->events[EVR__DEV_EK_PORT_ACTIVE], 1);
	ck_assert_uint_eq(x.d->events[EVR__DEV_EK_PORT_OTHER], 99);
	fix_end(&x);
}
END_TEST

/* Port events are per port: one for another port changes nothing of
 * this one, and one for a port the device does not have changes
 * nothing at all. */
START_TEST(test_other_port_ignored)
{
	struct fix x;

	fix_start(&x, "mlx5_0", 2, 2);
	ck_assert_int_eq(x.d->state, EVR__DEV_ACTIVE);
	push(&x.f, IBV_EVENT_PORT_ERR, 2);
	run_once(x.l);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_int_eq(x.d->ports[1].state, EVR__PORT_DOWN);
	ck_assert_uint_eq(x.t.downs, 1);
	ck_assert_uint_eq(x.t.last_port, 2);
	/* port 9: not the device's; port 0: none's (both index nothing) */
	push(&x.f, IBV_EVENT_PORT_ERR, 9);
	push(&x.f, IBV_EVENT_PORT_ACTIVE, 9);
	push(&x.f, IBV_EVENT_PORT_ERR, 0);
	push(&x.f, IBV_EVENT_GID_CHANGE, 0);
	run_once(x.l);
	ck_assert_uint_eq(x.f.gets, 5);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_uint_eq(x.t.downs, 1);
	ck_assert_uint_eq(x.t.ups, 0);
	ck_assert_uint_eq(x.d->events[EVR__DEV_EK_PORT_ERR], 3);
	fix_end(&x);
}
END_TEST

/* After PORT_ACTIVE the GID table is read again before the port counts
 * as up; with no GID yet (RoCE adds them after the link) it waits in
 * NO_GID for a GID_CHANGE that brings one. */
START_TEST(test_gid_reread_after_port_active)
{
	struct fix x;
	unsigned reads;

	fix_start(&x, "rxe0", 1, 1);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	push(&x.f, IBV_EVENT_PORT_ERR, 1);
	run_once(x.l);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_DOWN);
	x.f.log[0] = '\0';
	reads = x.f.gid_reads;
	x.f.gids[1] = 0;
	push(&x.f, IBV_EVENT_PORT_ACTIVE, 1);
	run_once(x.l);
	ck_assert_uint_eq(x.f.gid_reads, reads + 1);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_NO_GID);
	ck_assert_int_eq(x.d->state, EVR__DEV_PORT_DOWN);
	ck_assert_uint_eq(x.t.ups, 0);
	x.f.gids[1] = 3;
	push(&x.f, IBV_EVENT_GID_CHANGE, 1);
	run_once(x.l);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_int_eq(x.d->ports[0].gids, 3);
	ck_assert_uint_eq(x.t.ups, 1);
	/* the table was read before anyone heard the port was up */
	ck_assert_str_eq(x.f.log, "gids1;gids1;up1;");
	fix_end(&x);
}
END_TEST

/* A PORT_ACTIVE that never came: the port is asked again on a timer. */
START_TEST(test_lost_port_active)
{
	struct fix x;
	int i;

	fix_start(&x, "rxe0", 1, 0);
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_DOWN);
	x.f.active[1] = 1;
	for (i = 0; i < 30 && x.d->ports[0].state != EVR__PORT_ACTIVE; i++)
		run_once(x.l); /* the query timer: 1 s */
	ck_assert_int_eq(x.d->ports[0].state, EVR__PORT_ACTIVE);
	ck_assert_uint_eq(x.t.ups, 1);
	ck_assert_uint_eq(x.f.gets, 0);
	fix_end(&x);
}
END_TEST

/* A removal reported by one user reaches every user of the device, who
 * let go at once; the registry no longer watches it, and it stays GONE
 * (for the record) until it comes back. */
START_TEST(test_gone_reaches_every_user)
{
	struct evr_loop *l = new_loop();
	struct fake f;
	struct tuser a, b;
	struct evr__dev *d;

	fake_init(&f, 1);
	tuser_init(&a, &f);
	tuser_init(&b, &f);
	ck_assert_int_eq(attach(l, &f, "rxe1", 1, &a), 0);
	ck_assert_int_eq(attach(l, &f, "rxe1", 1, &b), 0);
	d = evr__dev_of(&a.u);
	evr__dev_gone(&a.u);
	ck_assert_uint_eq(a.gones, 1);
	ck_assert_uint_eq(b.gones, 1);
	ck_assert_ptr_null(evr__dev_of(&a.u));
	ck_assert_ptr_null(evr__dev_of(&b.u));
	ck_assert_uint_eq(d->nusers, 0);
	ck_assert_ptr_null(d->ctx);
	ck_assert_int_eq(d->state, EVR__DEV_GONE);
	ck_assert_uint_eq(d->events[EVR__DEV_EK_REMOVAL], 1);
	/* a later event on its fd is not read */
	push(&f, IBV_EVENT_PORT_ERR, 1);
	ck_assert_ptr_eq(evr__devreg_first(l), d);
	evr_loop_free(l);
	ck_assert_uint_eq(f.gets, 0);
	fake_fini(&f);
}
END_TEST

/* A work request failed as the link went, before the port was marked
 * down or its event sent: the netdev's link, looked at at once (no
 * waiting), says the port is down, and the users are told; a link that
 * is up changes nothing, and neither does port 2 (the netdev is port
 * 1's). */
static int netdev_is_up = 1;
static char netdev_asked[16];

static int f_netdev_up(const char *netdev)
{
	snprintf(netdev_asked, sizeof(netdev_asked), "%s", netdev);
	return netdev_is_up;
}

START_TEST(test_refresh_sees_the_link)
{
	static const struct evr__dev_ops link_ops = {
		.get_event = f_get_event,
		.ack_event = f_ack_counted,
		.port_active = f_port_active,
		.gid_count = f_gid_count,
		.netdev_up = f_netdev_up,
	};
	struct evr__dev_desc desc = { "rxe0", "veth0", 2, 0 };
	struct evr_loop *l = new_loop();
	struct fake f;
	struct tuser t;

	fake_init(&f, 2);
	tuser_init(&t, &f);
	desc.fd = f.pipe[0];
	netdev_is_up = 1;
	ck_assert_int_eq(evr__dev_attach_ops(l, &f, &link_ops, &desc, &t.u), 0);
	ck_assert_int_eq(evr__dev_refresh(&t.u, 1), EVR__PORT_ACTIVE);
	ck_assert_str_eq(netdev_asked, "veth0");
	ck_assert_uint_eq(t.downs, 0);
	netdev_is_up = 0;
	ck_assert_int_eq(evr__dev_refresh(&t.u, 2), EVR__PORT_ACTIVE);
	ck_assert_uint_eq(t.downs, 0);
	ck_assert_int_eq(evr__dev_refresh(&t.u, 1), EVR__PORT_DOWN);
	ck_assert_uint_eq(t.downs, 1);
	ck_assert_uint_eq(t.last_port, 1);
	/* the port's own event, when it comes, changes nothing more */
	push(&f, IBV_EVENT_PORT_ERR, 1);
	run_once(l);
	ck_assert_uint_eq(t.downs, 1);
	evr__dev_detach(&t.u);
	evr_loop_free(l);
	fake_fini(&f);
}
END_TEST

START_TEST(test_device_fatal)
{
	struct fix x;

	fix_start(&x, "mlx5_0", 1, 1);
	push(&x.f, IBV_EVENT_DEVICE_FATAL, 0);
	push(&x.f, IBV_EVENT_PORT_ERR, 1);
	run_once(x.l);
	ck_assert_uint_eq(x.t.gones, 1);
	ck_assert_int_eq(x.d->state, EVR__DEV_GONE);
	ck_assert_uint_eq(x.d->events[EVR__DEV_EK_DEVICE_FATAL], 1);
	/* nothing after the fatal event is read: the device is going */
	ck_assert_uint_eq(x.f.gets, 1);
	ck_assert_uint_eq(x.f.acks, 1);
	fix_end(&x);
}
END_TEST

/* A device whose context the kernel has disassociated (being removed)
 * answers every query with EIO, before its removal's event is read: a
 * refresh (after a failed work request) finds it gone, and every user
 * is told at once; other errors say nothing. */
START_TEST(test_query_eio_is_gone)
{
	struct fix x;

	fix_start(&x, "rxe0", 1, 1);
	x.f.active[1] = -EAGAIN;
	evr__dev_refresh(&x.t.u, 1);
	ck_assert_int_eq(x.d->state, EVR__DEV_ACTIVE);
	ck_assert_uint_eq(x.t.gones, 0);
	x.f.active[1] = -EIO;
	evr__dev_refresh(&x.t.u, 1);
	ck_assert_int_eq(x.d->state, EVR__DEV_GONE);
	ck_assert_uint_eq(x.t.gones, 1);
	ck_assert_ptr_null(evr__dev_of(&x.t.u));
	fix_end(&x);
}
END_TEST

START_TEST(test_async_fd_fails)
{
	struct fix x;

	fix_start(&x, "rxe0", 1, 1);
	x.f.fail = 1;
	ck_assert_int_eq(write(x.f.pipe[1], "x", 1), 1);
	run_once(x.l);
	ck_assert_uint_eq(x.t.gones, 1);
	fix_end(&x);
}
END_TEST

/* The fake device list of the rescan, and how often it was read. */
static const char *listed[4];
static const char *listed_netdev = "veth0";
static unsigned scans;

static unsigned f_lister(char names[][EVR__DEV_NAME_MAX],
			 char netdevs[][EVR__DEV_NAME_MAX], unsigned max)
{
	unsigned n = 0;

	scans++;
	for (; n < 4 && n < max && listed[n]; n++) {
		snprintf(names[n], EVR__DEV_NAME_MAX, "%s", listed[n]);
		snprintf(netdevs[n], EVR__DEV_NAME_MAX, "%s", listed_netdev);
	}
	return n;
}

struct twatch {
	struct evr__dev_watch w;
	unsigned backs;
	char name[EVR__DEV_NAME_MAX];
};

static void t_back(struct evr__dev_watch *w, const char *name)
{
	struct twatch *t = (struct twatch *)w;

	t->backs++;
	snprintf(t->name, sizeof(t->name), "%s", name);
}

/* A device that went comes back: the rescan finds it by name and
 * netdev (not one of the same name on another netdev), its watchers
 * hear of it, and a user attaching a new context is watched again. */
START_TEST(test_return_noticed)
{
	struct evr_loop *l = new_loop();
	struct fake f, f2;
	struct tuser t;
	struct twatch w;
	struct evr__dev *d;

	fake_init(&f, 1);
	tuser_init(&t, &f);
	memset(&w, 0, sizeof(w));
	w.w.back = t_back;
	evr__devreg_set_lister(l, f_lister);
	evr__devreg_watch(l, &w.w);
	ck_assert_int_eq(attach(l, &f, "rxe0", 1, &t), 0);
	d = evr__dev_of(&t.u);
	listed[0] = NULL;
	evr__dev_gone(&t.u);
	evr__devreg_wait(l, &w.w, 1);
	/* gone from the list: the rescans find nothing */
	run_secs(l, 1.3);
	ck_assert_uint_eq(w.backs, 0);
	/* the same name on another netdev is not it */
	listed[0] = "rxe0";
	listed_netdev = "eth9";
	run_secs(l, 1.3);
	ck_assert_uint_eq(w.backs, 0);
	listed_netdev = "veth0";
	run_secs(l, 1.3); /* the rescan: once a second */
	ck_assert_uint_eq(w.backs, 1);
	ck_assert_str_eq(w.name, "rxe0");
	ck_assert_uint_eq(d->events[EVR__DEV_EK_RETURN], 1);
	ck_assert_int_ne(d->state, EVR__DEV_GONE);
	/* a new context of it (a new ibdev index, the same name) */
	fake_init(&f2, 1);
	tuser_init(&t, &f2);
	ck_assert_int_eq(attach(l, &f2, "rxe0", 1, &t), 0);
	ck_assert_ptr_eq(evr__dev_of(&t.u), d);
	ck_assert_int_eq(d->state, EVR__DEV_ACTIVE);
	ck_assert_uint_eq(d->events[EVR__DEV_EK_RETURN], 1);
	evr__devreg_unwatch(l, &w.w);
	evr__dev_detach(&t.u);
	evr_loop_free(l);
	fake_fini(&f);
	fake_fini(&f2);
	listed[0] = NULL;
}
END_TEST

/* A device nobody uses any more is still remembered: the rescan sees
 * it leave the list (librdmacm's context of it is what would hold up
 * the removal), and that never keeps the loop running by itself. */
START_TEST(test_idle_removal_and_loop_ends)
{
	struct evr_loop *l = new_loop();
	struct fake f;
	struct tuser t;
	struct evr__dev *d;

	fake_init(&f, 1);
	tuser_init(&t, &f);
	listed[0] = "rxe0";
	evr__devreg_set_lister(l, f_lister);
	ck_assert_int_eq(attach(l, &f, "rxe0", 1, &t), 0);
	d = evr__dev_of(&t.u);
	evr__dev_detach(&t.u);
	ck_assert_ptr_null(d->ctx);
	/* nothing else on the loop: ev_run returns at once */
	ev_run(l->ev, 0);
	/* the rescan sees the device leave the list */
	listed[0] = NULL;
	run_secs(l, 1.3);
	ck_assert_int_eq(d->state, EVR__DEV_GONE);
	ck_assert_uint_eq(d->events[EVR__DEV_EK_REMOVAL], 1);
	/* and stops looking once nothing is left to watch */
	ev_run(l->ev, 0);
	evr_loop_free(l);
	fake_fini(&f);
}
END_TEST

/* ---- librdmacm told to re-read its list (issue 37) ---- */

/* The fake resync: how often librdmacm would have re-read its device
 * list (rdma_get_devices(), which opens every device present). */
static unsigned resyncs;

static void f_resync(void)
{
	resyncs++;
}

/* Run the loop until the rescan has read the fake list k times more
 * (it does once a second; 10 s at most). */
static void scan_n(struct evr_loop *l, unsigned k)
{
	unsigned want = scans + k;
	int i;

	for (i = 0; i < 100 && scans < want; i++)
		run_secs(l, 0.1);
	ck_assert_uint_ge(scans, want);
}

static struct evr_loop *resync_loop(void)
{
	struct evr_loop *l = new_loop();

	resyncs = 0;
	evr__devreg_set_lister(l, f_lister);
	evr__devreg_set_resync(l, f_resync);
	evr__devreg_set_monitor(l, -1);
	return l;
}

/* librdmacm's list is re-read when a device leaves the list, once, and
 * never otherwise: a scan that finds the list as it was, or one more
 * device in it, leaves librdmacm alone (a re-read opens a context of
 * every device, which then holds up its removal).  A device the
 * registry remembers leaving is the same single re-read. */
START_TEST(test_resync_when_one_leaves)
{
	struct evr_loop *l = resync_loop();
	struct fake f;
	struct tuser t;

	fake_init(&f, 1);
	tuser_init(&t, &f);
	listed[0] = "rxe0";
	listed[1] = "rxe1";
	listed[2] = NULL;
	ck_assert_int_eq(attach(l, &f, "rxe0", 1, &t), 0);
	evr__dev_detach(&t.u); /* remembered, unused: the rescan runs */
	scan_n(l, 2);
	ck_assert_uint_eq(resyncs, 0);
	listed[2] = "siw0"; /* one more */
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 0);
	listed[1] = "siw0"; /* rxe1 leaves, a device nobody here used */
	listed[2] = NULL;
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 1);
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 1);
	listed[0] = "siw0"; /* rxe0 leaves: in the list and remembered */
	listed[1] = NULL;
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 2);
	ck_assert_int_eq(evr__devreg_first(l)->state, EVR__DEV_GONE);
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 2);
	evr_loop_free(l);
	fake_fini(&f);
	listed[0] = NULL;
}
END_TEST

/* After a re-read, librdmacm holds every device that was present: the
 * rescan goes on with nothing idle and nobody waiting, so that any of
 * them leaving is a re-read within a second, and it never keeps the
 * loop running.  Before it, nothing in use: no rescan. */
START_TEST(test_rescan_goes_on_after_resync)
{
	struct evr_loop *l = resync_loop();
	struct fake f;
	struct tuser t;
	unsigned s0;

	fake_init(&f, 1);
	tuser_init(&t, &f);
	listed[0] = "rxe0";
	listed[1] = "rxe1";
	listed[2] = NULL;
	ck_assert_int_eq(attach(l, &f, "rxe0", 1, &t), 0);
	s0 = scans;
	run_secs(l, 1.3);
	ck_assert_uint_eq(scans, s0);
	/* an id on a device going away was destroyed: one re-read */
	evr__devreg_kick(l);
	run_secs(l, 0.1);
	ck_assert_uint_eq(resyncs, 1);
	scan_n(l, 2);
	ck_assert_uint_eq(resyncs, 1);
	listed[1] = NULL; /* rxe1, opened by that re-read, leaves */
	scan_n(l, 1);
	ck_assert_uint_eq(resyncs, 2);
	ck_assert_int_eq(evr__dev_of(&t.u)->state, EVR__DEV_ACTIVE);
	ck_assert_uint_eq(t.gones, 0);
	/* nothing else on the loop: ev_run returns at once */
	evr__dev_detach(&t.u);
	ev_run(l->ev, 0);
	scan_n(l, 1);
	evr_loop_free(l);
	fake_fini(&f);
	listed[0] = NULL;
	listed[1] = NULL;
}
END_TEST

/* The default lister (libibverbs' list) never calls rdma_get_devices():
 * three scans while someone waits for a device leave librdmacm alone.  A
 * device the registry remembers, which this host has not, is found gone
 * by the next scan: librdmacm re-reads its list that once (the default
 * resync), and the scans after it leave it alone again. */
static unsigned cm_gets, cm_frees, verbs_lists;

struct ibv_context **__wrap_rdma_get_devices(int *num);
struct ibv_context **__wrap_rdma_get_devices(int *num)
{
	cm_gets++;
	if (num)
		*num = 0;
	return calloc(1, sizeof(struct ibv_context *));
}

void __wrap_rdma_free_devices(struct ibv_context **list);
void __wrap_rdma_free_devices(struct ibv_context **list)
{
	cm_frees++;
	free(list);
}

struct ibv_device **__real_ibv_get_device_list(int *num);
struct ibv_device **__wrap_ibv_get_device_list(int *num);
struct ibv_device **__wrap_ibv_get_device_list(int *num)
{
	verbs_lists++;
	return __real_ibv_get_device_list(num);
}

/* Run the loop until the rescan has read the list k times more, whoever
 * reads it (libibverbs or, were it that, librdmacm). */
#define READS (verbs_lists > cm_gets ? verbs_lists : cm_gets)
static void default_scans(struct evr_loop *l, unsigned k)
{
	unsigned want = READS + k;
	int i;

	for (i = 0; i < 100 && READS < want; i++)
		run_secs(l, 0.1);
}

START_TEST(test_default_lister_opens_nothing)
{
	struct evr_loop *l = new_loop();
	struct evr__dev *d;
	struct twatch w;
	struct fake f;
	struct tuser t;

	fake_init(&f, 1);
	tuser_init(&t, &f);
	memset(&w, 0, sizeof(w));
	w.w.back = t_back;
	evr__devreg_set_monitor(l, -1);
	cm_gets = cm_frees = verbs_lists = 0;
	evr__devreg_watch(l, &w.w);
	evr__devreg_wait(l, &w.w, 1);
	default_scans(l, 3);
	ck_assert_uint_eq(cm_gets, 0);
	ck_assert_uint_ge(verbs_lists, 3);
	/* a remembered device leaves: one re-read, then none */
	ck_assert_int_eq(attach(l, &f, "evrfake9", 1, &t), 0);
	d = evr__dev_of(&t.u);
	evr__dev_detach(&t.u);
	default_scans(l, 3);
	ck_assert_int_eq(d->state, EVR__DEV_GONE);
	ck_assert_uint_eq(cm_gets, 1);
	ck_assert_uint_eq(cm_frees, 1);
	ck_assert_uint_ge(verbs_lists, 6);
	evr__devreg_unwatch(l, &w.w);
	evr_loop_free(l);
	fake_fini(&f);
}
END_TEST

/* ---- the kernel's RDMA netlink monitor (src/loop/nlmon.c) ---- */

/* A datagram as the kernel builds one: messages of the monitor's type
 * (RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_MONITOR), 5148) or any
 * other, each with attributes. */
struct dgram {
	unsigned char b[1024];
	size_t len, msg;          /* bytes so far; the open message's start */
};

static void put(struct dgram *g, const void *p, size_t n)
{
	ck_assert_uint_le(g->len + n, sizeof(g->b));
	memcpy(g->b + g->len, p, n);
	g->len += n;
}

static void pad4(struct dgram *g)
{
	static const unsigned char z[4];

	put(g, z, (4 - g->len % 4) % 4);
}

static void msg_open(struct dgram *g, uint16_t type)
{
	struct nlmsghdr h = { .nlmsg_type = type };

	g->msg = g->len;
	put(g, &h, sizeof(h));
}

/* the open message's length into its header */
static void msg_close(struct dgram *g)
{
	uint32_t n = (uint32_t)(g->len - g->msg);

	memcpy(g->b + g->msg, &n, sizeof(n));
	pad4(g);
}

static void attr(struct dgram *g, uint16_t type, const void *p, uint16_t n)
{
	struct nlattr a = { .nla_len = (uint16_t)(sizeof(a) + n),
			    .nla_type = type };

	put(g, &a, sizeof(a));
	put(g, p, n);
	pad4(g);
}

#define T_MONITOR 5148
#define A_DEV_NAME 2
#define A_NDEV_NAME 51
#define A_EVENT 102

static void event(struct dgram *g, uint8_t kind, const char *dev,
		  const char *netdev)
{
	uint32_t idx = 7;

	msg_open(g, T_MONITOR);
	attr(g, A_EVENT, &kind, 1);
	attr(g, 1, &idx, sizeof(idx)); /* DEV_INDEX: skipped */
	if (dev)
		attr(g, A_DEV_NAME, dev, (uint16_t)(strlen(dev) + 1));
	if (netdev)
		attr(g, A_NDEV_NAME, netdev, (uint16_t)(strlen(netdev) + 1));
	msg_close(g);
}

/* The monitor's messages as the kernel sends them, several in one
 * datagram, and every length read from them checked: a message or an
 * attribute longer than what came, a name without its NUL or longer than
 * its bound, a monitor message without its event type, and bytes left
 * over are each a malformed datagram (-1: the registry looks at the list
 * itself), never read beyond. */
START_TEST(test_nlmon_parse)
{
	struct evr__nlmon_event e[4];
	struct dgram g;
	char longname[80];
	uint8_t kind;

	memset(&g, 0, sizeof(g));
	event(&g, 0, "rxe0", NULL);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), 1);
	ck_assert_int_eq(e[0].kind, EVR__NLMON_REGISTER);
	ck_assert_str_eq(e[0].dev, "rxe0");
	ck_assert_str_eq(e[0].netdev, "");

	/* three in one: an attach, another kind of message, an unknown
	 * event */
	memset(&g, 0, sizeof(g));
	event(&g, 2, "rxe1", "veth1");
	msg_open(&g, NLMSG_ERROR);
	attr(&g, 9, "x", 1);
	msg_close(&g);
	event(&g, 42, "rxe1", NULL);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), 2);
	ck_assert_int_eq(e[0].kind, EVR__NLMON_NETDEV_ATTACH);
	ck_assert_str_eq(e[0].netdev, "veth1");
	ck_assert_int_eq(e[1].kind, EVR__NLMON_OTHER);
	ck_assert_str_eq(evr__nlmon_kind_name(e[1].kind), "OTHER");
	/* no more than asked for */
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 1), 1);
	ck_assert_int_eq(evr__nlmon_parse(g.b, 0, e, 4), 0);

	/* a message longer than the datagram */
	memset(&g, 0, sizeof(g));
	event(&g, 1, "rxe0", NULL);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len - 4, e, 4), -1);
	/* bytes after the last message that are no header */
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len + 3, e, 4), -1);
	/* an attribute longer than its message */
	g.b[sizeof(struct nlmsghdr) + 8] = 0xff;
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);
	/* an attribute shorter than its own header */
	memset(&g, 0, sizeof(g));
	event(&g, 1, "rxe0", NULL);
	g.b[sizeof(struct nlmsghdr)] = 2;
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);

	/* a name without its NUL, and one over the bound */
	memset(&g, 0, sizeof(g));
	msg_open(&g, T_MONITOR);
	kind = 0;
	attr(&g, A_EVENT, &kind, 1);
	attr(&g, A_DEV_NAME, "rxe0", 4);
	msg_close(&g);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);
	memset(longname, 'r', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memset(&g, 0, sizeof(g));
	event(&g, 0, longname, NULL);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);

	/* an event type with no byte, and none at all */
	memset(&g, 0, sizeof(g));
	msg_open(&g, T_MONITOR);
	attr(&g, A_EVENT, "", 0);
	msg_close(&g);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);
	memset(&g, 0, sizeof(g));
	msg_open(&g, T_MONITOR);
	attr(&g, A_DEV_NAME, "rxe0", 5);
	msg_close(&g);
	ck_assert_int_eq(evr__nlmon_parse(g.b, g.len, e, 4), -1);
}
END_TEST

/* With a monitor, a device's return is heard, not polled for: a device
 * gone and awaited stays gone while the list has it back and nothing is
 * heard (no rescan once a second); a REGISTER brings it back at once.  A
 * malformed datagram is a rescan too (what it said is lost), and a
 * monitor that breaks hands back to the rescan. */
START_TEST(test_monitor_hears_return)
{
	struct evr_loop *l = new_loop();
	struct fake f, f2;
	struct tuser t;
	struct twatch w;
	struct dgram g;
	int sp[2];
	ev_tstamp t0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	fake_init(&f, 1);
	tuser_init(&t, &f);
	memset(&w, 0, sizeof(w));
	w.w.back = t_back;
	evr__devreg_set_lister(l, f_lister);
	evr__devreg_set_monitor(l, sp[0]);
	ck_assert_int_eq(evr__devreg_monitored(l), 1);
	evr__devreg_watch(l, &w.w);
	ck_assert_int_eq(attach(l, &f, "rxe0", 1, &t), 0);
	listed[0] = NULL;
	evr__dev_gone(&t.u);
	evr__dev_detach(&t.u);
	evr__devreg_wait(l, &w.w, 1);
	run_secs(l, 0.2); /* the kick of the detach: gone from the list */
	ck_assert_uint_eq(w.backs, 0);
	/* back in the list, but nothing heard: no rescan finds it */
	listed[0] = "rxe0";
	run_secs(l, 1.5);
	ck_assert_uint_eq(w.backs, 0);
	/* the kernel says so: found on the next loop pass */
	memset(&g, 0, sizeof(g));
	event(&g, 0, "rxe0", NULL);
	ck_assert_int_eq(send(sp[1], g.b, g.len, 0), (ssize_t)g.len);
	t0 = ev_time();
	run_secs(l, 0.1);
	ck_assert_uint_eq(w.backs, 1);
	ck_assert_double_lt(ev_time() - t0, 0.5);

	/* gone again; a malformed datagram brings it back just as well */
	fake_init(&f2, 1);
	tuser_init(&t, &f2);
	ck_assert_int_eq(attach(l, &f2, "rxe0", 1, &t), 0);
	evr__dev_gone(&t.u);
	evr__dev_detach(&t.u);
	listed[0] = NULL;
	run_secs(l, 0.2);
	listed[0] = "rxe0";
	ck_assert_int_eq(send(sp[1], "\1\2\3", 3, 0), 3);
	run_secs(l, 0.1);
	ck_assert_uint_eq(w.backs, 2);

	/* the monitor's end: the registry is back to rescanning */
	close(sp[1]);
	run_secs(l, 0.1);
	ck_assert_int_eq(evr__devreg_monitored(l), 0);
	evr__devreg_unwatch(l, &w.w);
	evr_loop_free(l);
	fake_fini(&f);
	fake_fini(&f2);
	listed[0] = NULL;
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("registry");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_attach_reads_ports);
	tcase_add_test(tc, test_hundred_events_one_wakeup);
	tcase_add_test(tc, test_other_port_ignored);
	tcase_add_test(tc, test_gid_reread_after_port_active);
	tcase_add_test(tc, test_lost_port_active);
	tcase_add_test(tc, test_gone_reaches_every_user);
	tcase_add_test(tc, test_refresh_sees_the_link);
	tcase_add_test(tc, test_device_fatal);
	tcase_add_test(tc, test_query_eio_is_gone);
	tcase_add_test(tc, test_async_fd_fails);
	tcase_add_test(tc, test_return_noticed);
	tcase_add_test(tc, test_idle_removal_and_loop_ends);
	tcase_add_test(tc, test_resync_when_one_leaves);
	tcase_add_test(tc, test_rescan_goes_on_after_resync);
	tcase_add_test(tc, test_default_lister_opens_nothing);
	tcase_add_test(tc, test_nlmon_parse);
	tcase_add_test(tc, test_monitor_hears_return);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(device_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
