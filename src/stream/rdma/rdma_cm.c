/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport (rdma_int.h): the engine side, its top.  Setting a
 * connection up (buffers, cell, QP), the RDMA CM event channel (connect,
 * accept, disconnect, a device's removal), and the transport ops
 * (listen, open, connect, free); it fills rdma_xport.up, through which
 * the files below call back up.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"
#include "../../loop/channel.h"
#include "rdma_int.h"

#define RESOLVE_MS 2000
#define RESOLVE_RETRIES 3
#define LISTEN_BACKLOG 1024
#define PDATA_MAX 256
#define RELISTEN_S 1.0     /* a lost listener tries again this often */

/* ---- setting a connection up ---- */

static struct rconn *rconn_new(struct rdma_xport *x, int inline_size)
{
	struct rconn *rc = calloc(1, sizeof(*rc));
	const struct evr_stream_opts *o = x->base.o;

	if (!rc)
		return NULL;
	rc->base.ops = &evr__rdma_conn_ops;
	rc->base.fd = -1;
	rc->base.can_skip = 1;
	rc->base.takes_more = 1;
	if (o->keepalive) {
		/* what rgetsockopt reads back on an rsocket */
		rc->base.ka_on = 1;
		rc->base.ka_idle = o->keepalive;
	}
	rc->x = x;
	rc->id_no = x->next_no++;
	rc->inline_req = inline_size < 0 ? EVR_RDMA_DEFAULT_INLINE : inline_size;
	ev_init(&rc->close_w, evr__rdma_close_cb);
	ev_init(&rc->ka_w, evr__rdma_ka_cb);
	rc->next = x->conns;
	if (x->conns)
		x->conns->prev = rc;
	x->conns = rc;
	x->nconns++;
	return rc;
}

/* The connection's device and port, for a failure to name them. */
static void name_device(struct rconn *rc)
{
	const char *name;

	if (rc->base.dev[0] || !rc->id || !rc->id->verbs)
		return;
	name = ibv_get_device_name(rc->id->verbs->device);
	snprintf(rc->base.dev, sizeof(rc->base.dev), "%s", name ? name : "?");
	rc->base.port = rc->id->port_num;
}

/*
 * rs_create_ep's equivalent: a completion channel and one CQ for both
 * queues, an RC QP through librdmacm (so that it makes every state
 * transition), the three buffers, and every receive posted before the
 * peer can send.
 */
static int create_ep(struct rconn *rc, const char **what)
{
	const struct evr_stream_opts *o = rc->x->base.o;
	struct rdma_cm_id *id = rc->id;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t maxwr = EVR_RS_QP_MAX;
	int ret;

	name_device(rc);
	/* iWARP has no write with immediate: rsockets speak their message
	 * dialect there (RS_OPT_MSG_SEND), picked from the device as they
	 * do, on both sides */
	rc->msg_send = id->verbs->device->transport_type ==
		       IBV_TRANSPORT_IWARP;
	if (!ibv_query_device(id->verbs, &da) && da.max_qp_wr > 0)
		maxwr = (uint32_t)da.max_qp_wr;
	/* a client knows how many it opens; a server counts what it holds */
	evr__rdma_mem_sizes(rc, o->server || o->conns <= 1 ? rc->x->nconns :
			    (unsigned)o->conns, maxwr);

	ret = evr__rdma_cq_reserve(rc, rc->sq_size + rc->rq_post, what);
	if (ret)
		return ret;
	*what = "memory";
	ret = evr__rdma_slot_get(rc);
	if (ret)
		return ret;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rc;
	qa.send_cq = rc->rcq->cq;
	qa.recv_cq = rc->rcq->cq;
	qa.qp_type = IBV_QPT_RC;
	/* iWARP: a message's write goes unsignaled, its send completes
	 * for both */
	qa.sq_sig_all = !rc->msg_send;
	qa.cap.max_send_wr = rc->sq_size;
	qa.cap.max_recv_wr = rc->rq_post;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = (uint32_t)rc->inline_req;
	/* the iWARP dialect's messages go inline (-I 0 too: rdma-core
	 * v51's fc82b150b; v44 fails there) */
	if (rc->msg_send && qa.cap.max_inline_data < EVR_RS_MSG_LEN)
		qa.cap.max_inline_data = EVR_RS_MSG_LEN;
	*what = "rdma_create_qp";
	if (rdma_create_qp(id, NULL, &qa))
		return -errno ? -errno : -EINVAL;
	/* the provider may give more than asked */
	rc->max_inline = qa.cap.max_inline_data;
	*what = "inline data (iWARP's messages need 4 bytes)";
	if (rc->msg_send && rc->max_inline < EVR_RS_MSG_LEN)
		return -EOPNOTSUPP;

	ret = evr__rdma_mem_setup(rc, id->pd, what);
	if (ret)
		return ret;
	*what = "ibv_post_recv";
	ret = evr__rdma_post_recvs(rc, rc->rq_post);
	if (ret)
		return ret;
	return 0;
}

static void our_conn_data(struct rconn *rc, uint8_t *out)
{
	struct evr_rs_conn_data cd;

	evr__rs_conn_data_init(&cd, (uint16_t)rc->rq_size,
			       (uintptr_t)rc->tsgl, rc->tmr->rkey,
			       (uintptr_t)rc->rbuf, rc->rmr->rkey,
			       rc->rbuf_size);
	evr__rs_conn_data_encode(out, &cd);
}

static void established(struct rconn *rc)
{
	const struct evr_stream_opts *o = rc->x->base.o;

	evr__rdma_set_state(rc, EVR_RC_OPEN);
	if (o->keepalive) {
		ev_timer_set(&rc->ka_w, o->keepalive, o->keepalive);
		ev_timer_start(rc->x->base.loop->ev, &rc->ka_w);
	}
	/* the first CQ processing after ESTABLISHED: our second half goes
	 * to the peer's entry 1 (and whatever came early is taken in) */
	evr__rdma_process(rc);
}

/* A connect that failed while our own port is down (its link went: the
 * route is gone with it, or the CM cannot send) is the port's failure,
 * named as such, not the network's: -EVR_E_PORTDOWN, else err. */
static int port_down_err(struct rconn *rc, int err)
{
	struct ibv_port_attr pa;

	if (err == -EVR_E_DEVGONE || err == -EVR_E_PORTDOWN || !rc->id ||
	    !rc->id->verbs || !rc->id->port_num ||
	    ibv_query_port(rc->id->verbs, rc->id->port_num, &pa) ||
	    pa.state == IBV_PORT_ACTIVE)
		return err;
	name_device(rc);
	rc->base.dev_detail = 1; /* down before the connection */
	return -EVR_E_PORTDOWN;
}

/* Client: a connect attempt failed; the owner closes the connection. */
static void connect_failed(struct rconn *rc, int err)
{
	evr__rdma_close_step(rc, EVR_RC_E_CONN_FAIL, port_down_err(rc, err));
}

static int resolve_route(struct rconn *rc)
{
	if (rc->route_len) {
		/* -T r gave a path: set it, which resolves the route */
		if (!rdma_set_option(rc->id, RDMA_OPTION_IB,
				     RDMA_OPTION_IB_PATH, rc->route,
				     (socklen_t)rc->route_len))
			return 0;
	}
	return rdma_resolve_route(rc->id, RESOLVE_MS) ? -errno : 0;
}

static int do_connect(struct rconn *rc)
{
	uint8_t pd[EVR_RS_AFIB_HDR_LEN + EVR_RS_CONN_DATA_LEN];
	struct rdma_conn_param p;
	const char *what;
	size_t off = 0;
	int ret;

	ret = create_ep(rc, &what);
	if (ret) {
		evr__rdma_trace_err(rc, what, ret);
		rc->base.setup_where = what;
		return ret;
	}
	memset(pd, 0, sizeof(pd));
	/* AF_IB: the kernel adds no CMA header, so rsockets leaves room for
	 * one (zeros here) and the listener skips it */
	if (rc->dst.ss_family == AF_IB)
		off = EVR_RS_AFIB_HDR_LEN;
	our_conn_data(rc, pd + off);
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = (uint8_t)(off + EVR_RS_CONN_DATA_LEN);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;   /* RNR: retry for ever, as upstream */
	/* as rsockets on iWARP, whose connection setup may issue an RDMA
	 * read (the server echoes it) */
	if (rc->msg_send)
		p.initiator_depth = 1;
	if (rdma_connect(rc->id, &p))
		return -errno;
	evr__rdma_set_state(rc, EVR_RC_CONNECTING);
	return 0;
}

/* ---- the CM event channel ---- */

/* --trace: the private data as it came (rsproto's fuzz seeds are made
 * from such captures: tests/fuzz/trace2seed.sh) */
static void trace_pdata(struct rdma_xport *x, const char *what,
			const void *p, size_t len)
{
	struct evr_loop *l = x->base.loop;
	char hex[2 * EVR_RS_CONN_DATA_LEN + 1];
	size_t i;

	if (!evr__tracing(l) || !p)
		return;
	if (len > EVR_RS_CONN_DATA_LEN)
		len = EVR_RS_CONN_DATA_LEN;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)p)[i]);
	hex[2 * len] = '\0';
	evr__trace(l, "rdma: %s private data %s", what, hex);
}

static void on_request(struct rdma_xport *x, struct rdma_cm_event *e)
{
	size_t off = x->listen_afib ? EVR_RS_AFIB_HDR_LEN : 0;
	struct evr_rs_conn_data cd;
	struct rdma_conn_param p;
	uint8_t pd[EVR_RS_CONN_DATA_LEN];
	struct rconn *rc;
	const char *what = "private data";
	int ret;

	if (e->param.conn.private_data_len >= off)
		trace_pdata(x, "request's",
			    (const uint8_t *)e->param.conn.private_data + off,
			    e->param.conn.private_data_len - off);
	ret = e->param.conn.private_data_len < off ? -EMSGSIZE :
	      evr__rs_conn_data_decode((const uint8_t *)
				       e->param.conn.private_data + off,
				       e->param.conn.private_data_len - off,
				       &cd);
	if (ret || !x->lid) {
		/* not an rsocket of our version: refused, as upstream */
		rdma_reject(e->id, NULL, 0);
		rdma_destroy_id(e->id);
		return;
	}
	/* the inline size is invisible on the wire: the default */
	rc = rconn_new(x, -1);
	if (!rc) {
		rdma_reject(e->id, NULL, 0);
		rdma_destroy_id(e->id);
		return;
	}
	rc->id = e->id;
	rc->id->context = rc;
	evr__sockaddr_str(rdma_get_peer_addr(rc->id), rc->base.peer,
			  sizeof(rc->base.peer));
	ret = create_ep(rc, &what);
	if (ret)
		goto fail;
	evr__rdma_take_peer(rc, &cd);
	our_conn_data(rc, pd);
	/* echo the REQ's parameters; replace only the private data */
	p = e->param.conn;
	p.private_data = pd;
	p.private_data_len = sizeof(pd);
	what = "rdma_accept";
	if (rdma_accept(rc->id, &p)) {
		ret = -errno;
		goto fail;
	}
	evr__rdma_set_state(rc, EVR_RC_ACCEPTING);
	x->starved = 0;
	/* the peer may write before ESTABLISHED: take it in meanwhile */
	evr__rdma_own_watch(rc);
	return;
fail:
	evr__rdma_trace_err(rc, what, ret);
	rdma_reject(rc->id, NULL, 0);
	/* Out of fds (the completion channel) or memory: the request is
	 * gone (rejected), so nothing spins; say so once per episode. */
	if (!x->starved && x->base.cbs->refused) {
		x->starved = 1;
		x->base.cbs->refused(x->base.ud, ret,
				     rdma_get_peer_addr(rc->id));
	}
	evr__rdma_close_step(rc, EVR_RC_E_ABORT, 0);
}

static void on_established(struct rconn *rc, struct rdma_cm_event *e)
{
	struct evr_rs_conn_data cd;
	int ret;

	if (rc->state == EVR_RC_ACCEPTING) {
		established(rc);
		evr__rdma_pend_add(rc, PEND_ACCEPTED);
		return;
	}
	if (rc->state != EVR_RC_CONNECTING)
		return;
	trace_pdata(rc->x, "reply's", e->param.conn.private_data,
		    e->param.conn.private_data_len);
	ret = evr__rs_conn_data_decode(e->param.conn.private_data,
				       e->param.conn.private_data_len, &cd);
	if (ret) {
		/* upstream: ENOTSUP; the close sends the DREQ */
		connect_failed(rc, ret == -EPROTONOSUPPORT ? -ENOTSUP : ret);
		return;
	}
	evr__rdma_take_peer(rc, &cd);
	established(rc);
	evr__rdma_pend_add(rc, PEND_CONNECTED);
}

static void on_disconnected(struct rconn *rc)
{
	evr__rdma_facts(rc, EVR_RC_F_CM_DISC, 0);
	/* ends a connect attempt with ECONNRESET */
	evr__rdma_close_step(rc, EVR_RC_E_CM_DISC, -ECONNRESET);
}

/* ---- a device or a port lost ---- */

/* rc's device went away (port 0) or its port went down: the facts, the
 * owner's error (the device's reason wins over a work request's EIO),
 * and the close machine decides the rest: flush, tell, tear down. */
static void conn_lost(struct rconn *rc, unsigned port, int fatal)
{
	int err = port ? -EVR_E_PORTDOWN : -EVR_E_DEVGONE;

	name_device(rc);
	if (!port) {
		evr__rdma_facts(rc, EVR_RC_F_DEV_GONE, 0);
		rc->base.dev_detail = fatal;
	}
	evr__rdma_err_reason(rc, err);
	if (rc->state == EVR_RC_OPEN)
		evr__rdma_set_err(rc, err, port ? "port down" : "device gone");
	evr__rdma_close_step(rc, port ? EVR_RC_E_PORT_DOWN : EVR_RC_E_DEV_GONE,
			     err);
}

static void relisten_arm(struct rdma_xport *x);

/* Our bound listener's device went away: the CM id goes (the device
 * waits for it), and we listen again once the device is back. */
static void listener_lost(struct rdma_xport *x)
{
	struct evr_loop *l = x->base.loop;

	if (!x->lid)
		return;
	evr__trace(l, "rdma: the listener's device went away: listening "
		   "again once it is back");
	rdma_destroy_id(x->lid);
	x->lid = NULL;
	x->listen_lost = 1;
	evr__devreg_kick(l);
	relisten_arm(x);
}

/* Every connection (and the listener) on verbs: the device went away
 * (port 0), or port went down. */
static void dev_lost(struct rdma_xport *x, struct ibv_context *verbs,
		     unsigned port, int fatal)
{
	struct rconn *rc, *next;

	for (rc = x->conns; rc; rc = next) {
		next = rc->next;
		if (!rc->id || rc->id->verbs != verbs ||
		    (port && rc->id->port_num != port))
			continue;
		conn_lost(rc, port, fatal);
	}
	if (!port && x->lid && x->lid->verbs == verbs)
		listener_lost(x);
}

/* The registry's word about one of our devices. */
void evr__rdma_dev_note(struct evr__dev_user *u, enum evr__dev_note n,
			unsigned port)
{
	struct rdev *d = evr__container_of(u, struct rdev, user);
	const struct evr__dev *dev = evr__dev_of(u);

	if (n == EVR__DEV_N_GONE)
		dev_lost(d->x, d->verbs, 0, dev && dev->fatal);
	else if (n == EVR__DEV_N_PORT_DOWN)
		dev_lost(d->x, d->verbs, port, 0);
}

/* RDMA_CM_EVENT_DEVICE_REMOVAL on rc's id: the registry tells every
 * user of the device (our own connections on it among them, through
 * evr__rdma_dev_note); a connection that has no CQ on it yet (none of
 * ours has) is told here. */
static void dev_removed(struct rdma_xport *x, struct rconn *rc)
{
	struct rdev *d;

	for (d = x->devs; d; d = d->next)
		if (rc->id && d->verbs == rc->id->verbs)
			break;
	if (d) {
		evr__dev_gone(&d->user);
	} else {
		/* (an id the event names is bound to its device: no verbs
		 * would match every unbound id) */
		if (rc->id && rc->id->verbs)
			dev_lost(x, rc->id->verbs, 0, 0);
		else
			conn_lost(rc, 0, 0);
		evr__devreg_kick(x->base.loop);
	}
}

/* A connect's UNREACHABLE or CONNECT_ERROR: its status is the kernel
 * CM's -errno, but for librdmacm's own CONNECT_ERROR, when our QP could
 * not take the peer's reply (moving it to RTR or RTS failed), where it is
 * the -1 that librdmacm's call returned, not an errno (it said
 * "Operation not permitted").  That one is the peer's or its path's: seen
 * with the peer's RNIC removed and added back under a connect (a
 * monitor took it for this host's own "error"), and told as an -EIO
 * that blames the peer, as a failed completion that does. */
static int connect_error(struct rconn *rc, const struct rdma_cm_event *e)
{
	if (e->event == RDMA_CM_EVENT_CONNECT_ERROR && e->status == -1) {
		rc->base.eio_detail = EVR_EIO_PEER;
		return -EIO;
	}
	return e->status < 0 ? e->status : -ETIMEDOUT;
}

static void cm_event(struct rdma_xport *x, struct rdma_cm_event *e)
{
	struct rconn *rc;
	int ret;

	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(x, e);
		return;
	}
	if (e->event == RDMA_CM_EVENT_DEVICE_REMOVAL && e->id &&
	    e->id == x->lid) {
		listener_lost(x);
		return;
	}
	rc = e->id ? e->id->context : NULL;
	if (!rc || (void *)rc == (void *)x)
		return; /* the listener's own events */
	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rc->state != EVR_RC_RESOLVE_ADDR)
			break;
		rc->retries = 0;
		evr__rdma_set_state(rc, EVR_RC_RESOLVE_ROUTE);
		ret = resolve_route(rc);
		if (ret)
			connect_failed(rc, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rc->state != EVR_RC_RESOLVE_ROUTE)
			break;
		ret = do_connect(rc);
		if (ret)
			connect_failed(rc, ret);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (rc->state != EVR_RC_RESOLVE_ADDR &&
		    rc->state != EVR_RC_RESOLVE_ROUTE)
			break;
		if (e->status == -ETIMEDOUT && rc->retries++ < RESOLVE_RETRIES) {
			ret = rc->state == EVR_RC_RESOLVE_ADDR ?
			      (rdma_resolve_addr(rc->id, NULL,
						 (struct sockaddr *)&rc->dst,
						 RESOLVE_MS) ? -errno : 0) :
			      resolve_route(rc);
			if (!ret)
				break;
		}
		connect_failed(rc, e->status < 0 ? e->status : -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(rc, e);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (rc->state == EVR_RC_CONNECTING)
			connect_failed(rc, -ECONNREFUSED);
		else if (rc->state == EVR_RC_ACCEPTING)
			evr__rdma_close_step(rc, EVR_RC_E_ABORT, 0);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (rc->state == EVR_RC_CONNECTING)
			connect_failed(rc, connect_error(rc, e));
		else if (rc->state == EVR_RC_ACCEPTING)
			evr__rdma_close_step(rc, EVR_RC_E_ABORT, 0);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		on_disconnected(rc);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		dev_removed(x, rc);
		break;
	default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
		break;
	}
}

/* Drain the CM channel; each event is copied and acked before it is
 * handled, so that destroying its id never waits for an ack. */
void evr__rdma_cm_drain(struct rdma_xport *x)
{
	struct rdma_cm_event *ev;

	while (x->ch && !rdma_get_cm_event(x->ch, &ev)) {
		struct rdma_cm_event e = *ev;
		uint8_t pd[PDATA_MAX];

		if ((e.event == RDMA_CM_EVENT_CONNECT_REQUEST ||
		     e.event == RDMA_CM_EVENT_ESTABLISHED) &&
		    e.param.conn.private_data) {
			size_t n = e.param.conn.private_data_len;

			if (n > sizeof(pd))
				n = sizeof(pd);
			memcpy(pd, e.param.conn.private_data, n);
			e.param.conn.private_data = pd;
			e.param.conn.private_data_len = (uint8_t)n;
		}
		rdma_ack_cm_event(ev);
		cm_event(x, &e);
	}
}

static void cm_cb(struct ev_loop *l, ev_io *w, int revents)
{
	evr__rdma_cm_drain(evr__container_of(w, struct rdma_xport, cm_w));
}

/* ---- the engine side ---- */

/* AF_IB (-f gid) needs native InfiniBand addressing: an IB port.  RoCE
 * (rxe among them) and iWARP ports have none, and the kernel would only
 * say "No such device" once resolution fails. */
static int have_ib_port(void)
{
	struct ibv_device **l;
	int i, n = 0, found = 0;

	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n && !found; i++) {
		struct ibv_context *ctx = ibv_open_device(l[i]);
		struct ibv_device_attr da;
		struct ibv_port_attr pa;
		uint8_t p;

		if (!ctx)
			continue;
		if (!ibv_query_device(ctx, &da))
			for (p = 1; p <= da.phys_port_cnt && !found; p++)
				found = !ibv_query_port(ctx, p, &pa) &&
					pa.link_layer ==
						IBV_LINK_LAYER_INFINIBAND;
		ibv_close_device(ctx);
	}
	if (l)
		ibv_free_device_list(l);
	return found;
}

static int check_family(int family, struct evr_failure *f)
{
	if (family != AF_IB || have_ib_port())
		return 0;
	f->err = -EVR_E_NOTSUP;
	f->detail = EVR_NOTSUP_AF_IB;
	f->where = NULL;
	return f->err;
}

/* A listener on ss: 0, or a negative errno with the call that failed in
 * *where (the id is gone then). */
static int listen_on(struct rdma_xport *x, const struct sockaddr_storage *ss,
		     int dual, const char **where)
{
	int one = 1, zero = 0, ret;

	*where = "rdma_create_id";
	if (rdma_create_id(x->ch, &x->lid, x, RDMA_PS_TCP))
		return errno ? -errno : -EINVAL;
	/* SO_REUSEADDR, as rstream sets it on its listener */
	*where = "rdma_set_option REUSEADDR";
	if (rdma_set_option(x->lid, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
			    &one, sizeof(one)))
		goto fail;
	/* IPv6's wildcard for IPv4's clients too */
	*where = "rdma_set_option AFONLY";
	if (dual && rdma_set_option(x->lid, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_AFONLY, &zero,
				    sizeof(zero)))
		goto fail;
	*where = "rdma_bind_addr";
	if (rdma_bind_addr(x->lid, (struct sockaddr *)ss))
		goto fail;
	/* upstream listens with a backlog of 1; we serve many */
	*where = "listen";
	if (rdma_listen(x->lid, LISTEN_BACKLOG))
		goto fail;
	return 0;
fail:
	ret = errno ? -errno : -EINVAL;
	rdma_destroy_id(x->lid);
	x->lid = NULL;
	return ret;
}

static void relisten(struct rdma_xport *x)
{
	struct evr_loop *l = x->base.loop;
	const char *where;
	int ret;

	if (!x->listen_lost || x->lid)
		return;
	ret = listen_on(x, &x->listen_ss, x->listen_dual, &where);
	if (ret) {
		evr__trace(l, "rdma: listening again: %s: %s", where,
			   strerror(-ret));
		return;
	}
	evr__trace(l, "rdma: listening again");
	x->listen_lost = 0;
	ev_timer_stop(l->ev, &x->relisten_w);
	evr__devreg_wait(l, &x->relisten, 0);
}

static void relisten_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	relisten(evr__container_of(w, struct rdma_xport, relisten_w));
}

/* The registry saw a device come back: try at once. */
static void relisten_back(struct evr__dev_watch *w, const char *name)
{
	relisten(evr__container_of(w, struct rdma_xport, relisten));
}

/* Listen again when the device is back: the registry's rescan says so,
 * and a timer tries once a second meanwhile (an address may come back
 * after its device). */
static void relisten_arm(struct rdma_xport *x)
{
	struct evr_loop *l = x->base.loop;

	if (!x->relisten.back) {
		x->relisten.back = relisten_back;
		evr__devreg_watch(l, &x->relisten);
	}
	evr__devreg_wait(l, &x->relisten, 1);
	ev_timer_again(l->ev, &x->relisten_w);
}

static int x_listen(struct evr_xport *xp, struct evr_failure *f, int *ka_on,
		    int *ka_idle)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct evr_addr a;
	int ret;

	ret = evr__resolve(xp->o, xp->o->bind_addr, xp->o->port, 1, &a, f);
	if (ret)
		return ret;
	if (check_family(a.family, f))
		return f->err;
	/* no -b: every address, IPv6's too, where the CM takes [::] */
	ret = -EAFNOSUPPORT;
	if (evr__addr_is_wildcard4(xp->o, &a)) {
		struct evr_addr a6 = a;

		evr__addr_wildcard6(&a6);
		ret = listen_on(x, &a6.ss, 1, &f->where);
		if (!ret) {
			a = a6;
			x->listen_dual = 1;
		}
	}
	if (ret)
		ret = listen_on(x, &a.ss, 0, &f->where);
	if (ret) {
		f->err = ret;
		if (!strcmp(f->where, "rdma_bind_addr")) {
			evr__bind_failed(f, ret, &a, NULL);
			if (a.family == AF_IB)
				f->where = "rdma_bind_addr (AF_IB)";
		}
		return f->err;
	}
	memcpy(&x->listen_ss, &a.ss, sizeof(x->listen_ss));
	x->listen_afib = a.family == AF_IB;
	if (xp->o->keepalive) {
		*ka_on = 1;
		*ka_idle = xp->o->keepalive;
	}
	return 0;
}

static void x_listen_addr(struct evr_xport *xp, char *buf, size_t len)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);

	buf[0] = '\0';
	if (x->lid)
		evr__sockaddr_str(rdma_get_local_addr(x->lid), buf, len);
}

static void x_stop_listen(struct evr_xport *xp)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct evr_loop *l = xp->loop;

	x->listen_lost = 0;
	ev_timer_stop(l->ev, &x->relisten_w);
	if (x->relisten.back)
		evr__devreg_unwatch(l, &x->relisten);
	x->relisten.back = NULL;
	if (x->lid) {
		rdma_destroy_id(x->lid);
		x->lid = NULL;
	}
}

static int x_open(struct evr_xport *xp, const struct evr_addr *dst,
		  int inline_size, struct evr_conn **out,
		  struct evr_failure *f)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct rconn *rc;

	if (check_family(dst->family, f))
		return f->err;
	rc = rconn_new(x, inline_size);
	if (!rc) {
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	if (rdma_create_id(x->ch, &rc->id, rc, RDMA_PS_TCP)) {
		f->err = -errno;
		f->where = "rdma_create_id";
		evr__rdma_close_step(rc, EVR_RC_E_ABORT, 0);
		return f->err;
	}
	evr__rdma_facts(rc, EVR_RC_F_OWNED, 0);
	*out = &rc->base;
	return 0;
}

static int x_connect(struct evr_xport *xp, struct evr_conn *c,
		     const struct evr_addr *dst, const struct evr_addr *src,
		     struct evr_failure *f, int *err)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	memcpy(&rc->dst, &dst->ss, sizeof(rc->dst));
	if (dst->route_len && dst->route_len <= sizeof(rc->route)) {
		memcpy(rc->route, dst->route, dst->route_len);
		rc->route_len = dst->route_len;
	}
	evr__sockaddr_str((const struct sockaddr *)&dst->ss, c->peer,
			  sizeof(c->peer));
	if (src && src->valid &&
	    rdma_bind_addr(rc->id, (struct sockaddr *)&src->ss)) {
		evr__bind_failed(f, -errno, src, dst);
		return f->err;
	}
	evr__rdma_set_state(rc, EVR_RC_RESOLVE_ADDR);
	if (rdma_resolve_addr(rc->id, NULL, (struct sockaddr *)&rc->dst,
			      RESOLVE_MS)) {
		*err = port_down_err(rc, -errno);
		return EVR_XP_FAILED_NOW;
	}
	return EVR_XP_CONNECTING;
}

static unsigned x_lingering(struct evr_xport *xp)
{
	return evr__container_of(xp, struct rdma_xport, base)->nlinger;
}

static void x_free(struct evr_xport *xp)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct ev_loop *l = xp->loop->ev;

	while (x->conns)
		evr__rdma_close_step(x->conns, EVR_RC_E_ABORT, 0);
	/* the last connection's teardown freed its CQ and channel */
	while (x->devs) {
		if (x->devs->cqs)
			/* the last frees the device */
			evr__rdma_cq_free(x->devs->cqs);
		else
			evr__rdma_dev_free(x->devs);
	}
	free(x->slots);
	while (x->ncell_pages)
		free(x->cell_pages[--x->ncell_pages]);
	free(x->cell_pages);
	x_stop_listen(xp);
	ev_timer_stop(l, &x->defer_w);
	if (x->ch) {
		ev_io_stop(l, &x->cm_w);
		rdma_destroy_event_channel(x->ch);
	}
	free(x);
}

static const struct evr_xport_ops rdma_xport_ops = {
	.listen = x_listen,
	.listen_addr = x_listen_addr,
	.stop_listen = x_stop_listen,
	.open = x_open,
	.connect = x_connect,
	.lingering = x_lingering,
	.free = x_free,
};

int evr__rdma_xport_new(struct evr_xport **out, const struct evr_xport *base,
			struct evr_failure *f)
{
	struct rdma_xport *x = calloc(1, sizeof(*x));
	int ret;

	if (!x) {
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	x->base = *base;
	x->base.ops = &rdma_xport_ops;
	ret = evr__cm_channel_open(&x->ch);
	if (ret) {
		f->err = ret == -ENODEV ? -EVR_E_NODEV : ret;
		f->where = "rdma_create_event_channel";
		free(x);
		return f->err;
	}
	ev_io_init(&x->cm_w, cm_cb, x->ch->fd, EV_READ);
	ev_io_start(base->loop->ev, &x->cm_w);
	x->up = (struct rdma_up){
		.recv_wc = evr__rdma_recv_wc,
		.send_wc = evr__rdma_send_wc,
		.repost = evr__rdma_repost,
		.closing_polled = evr__rdma_closing_polled,
		.dev_note = evr__rdma_dev_note,
		.cm_drain = evr__rdma_cm_drain,
	};
	evr__rdma_upcall_init(x);
	ev_timer_init(&x->relisten_w, relisten_cb, RELISTEN_S, RELISTEN_S);
	*out = &x->base;
	return 0;
}
