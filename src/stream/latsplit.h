/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A round trip told in its parts (rstream --split, the daemon's probes):
 * what the network took, what the server held the request before its
 * echo left, and what this end took to read the echo once it had
 * arrived.  The server says its hold in the echo (wire.h, "hold
 * stamps"); the arrival times are the kernel's receive timestamps where
 * the transport has them (TCP), else the moment the bytes were read.
 *
 *   round trip = net + peer + local
 *
 * An iteration whose parts do not fit in its round trip (a clock step,
 * a peer that lies) is left out of all three and counted as rejected.
 */
#ifndef EVR_SRC_LATSPLIT_H
#define EVR_SRC_LATSPLIT_H

#include <stdint.h>

#include "evrdma/stream.h"
#include "latstats.h"

struct evr_latsplit {
	struct evr_latstats part[EVR_SPLIT_PARTS];
	uint64_t rejected;
	struct evr_lat_split res;     /* of the test just computed */
};

void evr__split_init(struct evr_latsplit *s);
void evr__split_reset(struct evr_latsplit *s);
void evr__split_free(struct evr_latsplit *s);
/* One iteration: its round trip, the peer's hold, and this end's delay
 * (have_local 0: the transport cannot tell, local counts as 0 and no
 * local sample is kept).  Returns 0 (added), 1 (rejected: hold + local >
 * rtt) or -ENOMEM (a sample lost to the percentiles, as evr__lat_add). */
int evr__split_add(struct evr_latsplit *s, uint64_t rtt_ns, uint64_t hold_ns,
		   int have_local, uint64_t local_ns);
/* All of src's samples into dst (an aggregate over connections). */
int evr__split_merge(struct evr_latsplit *dst, const struct evr_latsplit *src);
/* The distributions into s->res. */
void evr__split_compute(struct evr_latsplit *s);

#endif
