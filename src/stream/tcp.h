/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kernel TCP transport (rstream -T s). */
#ifndef EVR_SRC_TCP_H
#define EVR_SRC_TCP_H

#include "transport.h"

/* The engine side: listen/accept and open/connect (evr__xport_new_fn). */
evr__xport_new_fn evr__tcp_xport_new;

#endif
