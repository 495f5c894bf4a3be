/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* One error vocabulary for both engines: a failure is a negative errno
 * or a negative EVR_E_* code, and each code has a stable name.  Included
 * by <evrdma/stream.h> and <evrdma/mcast.h>. */
#ifndef EVRDMA_ERROR_H
#define EVRDMA_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The engines' failure codes, beyond negative errno values, as one list
 * (libuv's UV_ERRNO_MAP is the model): X(CODE, name, text) gives
 * EVR_E_CODE, the stable name evr_err_name() returns (rstream --json's
 * "error") and the reason evr_failure_str() writes when the failure
 * carries no facts of its own.  Codes are only ever added at the end. */
#define EVR_ERRORS(X) \
	X(EOF, "eof", "peer closed the connection") \
	X(STALL, "stall", "no progress within the stall timeout") \
	X(VERIFY, "verify", "data verification failed") \
	X(REJECTED, "rejected", "test plan rejected") \
	X(RESOLVE, "resolve", "name resolution failed") \
	X(NODEV, "nodev", "No RDMA devices were detected") \
	X(EXTRA, "extra", "peer sent more data than the test plan holds") \
	X(CANCELLED, "cancelled", "interrupted") \
	X(PROTO, "proto", "malformed negotiation message") \
	X(NOTSUP, "notsup", "not supported") \
	X(DEVGONE, "devgone", "the RDMA device went away") \
	X(PORTDOWN, "portdown", "the RDMA port went down")

enum {
	EVR_E_BASE = 100000,
#define EVR__E_ENUM(code, name, text) EVR_E_##code,
	EVR_ERRORS(EVR__E_ENUM)
#undef EVR__E_ENUM
};

/* The stable name of a failure code: "eof" for -EVR_E_EOF (EVR_ERRORS),
 * "system" for any other value (a negative errno: see strerror). */
const char *evr_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif
