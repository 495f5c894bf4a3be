/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the transports of both engines have in common.
 *
 * The word is "transport" in both APIs: enum evr_stream_transport
 * (stream.h: EVR_TRANSPORT_TCP, EVR_TRANSPORT_RDMA) and enum
 * evr_mc_transport (mcast.h: EVR_MC_RDMA, EVR_MC_UDP), a field
 * `transport` in each engine's options (and in struct
 * evr_conn_settings), evr_stream_transport_name() / _check() / _caps()
 * and evr_mc_transport_name() / _check().  One enum per engine, not one
 * shared: each lists only what its engine implements, and each keeps
 * its values and its zero (the stream's TCP, mckey's RDMA; every zero of
 * an options struct is a default).
 *
 * A transport describes itself, so that a program never asks "TCP or
 * RDMA?": what it can do is its capabilities (EVR_TRANSPORT_CAP_*), and
 * its own settings are rows (struct evr_setting), which a program
 * prints, or looks up by key, without knowing which transport gave them.
 */
#ifndef EVRDMA_TRANSPORT_H
#define EVRDMA_TRANSPORT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a transport can do or needs, a bitmask
 * (evr_stream_transport_caps()). */
enum evr_transport_cap {
	/* it runs on an RDMA device (evr_stream_transport_check(), the
	 * host checks) */
	EVR_TRANSPORT_CAP_RDMA_DEVICE = 1u << 0,
	/* it takes GID addresses (EVR_ADDR_GID) */
	EVR_TRANSPORT_CAP_GID = 1u << 1,
	/* it sends small messages inline: opts.inline_size applies */
	EVR_TRANSPORT_CAP_INLINE = 1u << 2,
	/* it listens on a port of the host's kernel TCP, which any other
	 * TCP listener of the host on that port and address conflicts
	 * with (RDMA CM's ports are a space of their own) */
	EVR_TRANSPORT_CAP_KERNEL_PORT = 1u << 3,
};

/* A setting's flags. */
enum evr_setting_flag {
	/* the value is 0 or 1, a yes or no (--json: a boolean) */
	EVR_SETTING_BOOL = 1u << 0,
	/* one of the keepalive's own knobs beyond its idle time (TCP's
	 * interval and probes): given only while the keepalive runs */
	EVR_SETTING_KEEPALIVE = 1u << 1,
};

/*
 * One of a transport's settings, as the transport's own code names it.
 * key is its stable name (rstream --json's key, "sndbuf_bytes"); word
 * its name on rstream's --settings line ("sndbuf").  Where the line
 * shows them in another order than the record, a setting comes twice:
 * once with word NULL (the record only), once with key NULL (the line
 * only).  Both strings are the library's, valid as long as it is loaded.
 */
struct evr_setting {
	const char *key;
	const char *word;
	unsigned flags;           /* enum evr_setting_flag */
	int64_t value;
};

/* The most settings a transport gives. */
#define EVR_SETTINGS_MAX 16

#ifdef __cplusplus
}
#endif
#endif
