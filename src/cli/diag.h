/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host's diagnosis, as rstream and mckey give it (the checks are the
 * library's, evrdma/hostcheck.h): before an RDMA run, after a failure the
 * host explains, and as the whole table for --check.  Each failed check
 * is one line, "<prog>: <check>: <fact>; <fix>", and exit status 5.
 */
#ifndef EVR_CLI_DIAG_H
#define EVR_CLI_DIAG_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "evrdma/hostcheck.h"

#define DIAG_EXIT 5 /* a local error: rstream.1 and mckey.1, EXIT STATUS */

/* "memlock: <fact>; <fix>" */
void diag_line(char *buf, size_t len, const struct evr_hc_row *r);

/* Raise the soft RLIMIT_MEMLOCK to the hard one (anyone may), as the
 * programs do before an RDMA run. */
void diag_memlock_raise(void);

/*
 * Before an RDMA run: every check that fails is a line on stderr
 * ("<prog>: " first); the first, without the prefix, into first.
 * Returns the number of failed checks (0: go ahead).  unowned_ok: an
 * address this host does not have is left to the run (mckey: upstream's
 * "addr bind failure" and its status).
 */
int diag_preflight(const char *prog, const struct evr_hc_need *need,
		   int unowned_ok, char *first, size_t len);

/*
 * After an RDMA run failed with err (a negative errno) in the call
 * where (NULL when unknown): 1 when the host explains it (its lines on
 * stderr, the first into first), else 0 (the failure is said as before).
 * ENOMEM from a verbs call is locked memory; EPERM or EACCES, the device
 * nodes; any other, an address, port or GID check that fails.
 */
int diag_failure(const char *prog, const struct evr_hc_need *need, int err,
		 const char *where, char *first, size_t len);

/* --check: every check, as a table or (json) one "hostcheck" record on
 * out.  Returns the exit status: 0 when none failed, else DIAG_EXIT
 * (1 for an address that does not parse, with a line on stderr). */
int diag_check_mode(FILE *out, const char *prog, const char *version,
		    const struct evr_hc_need *need, int json);

/* The "hostcheck" record (doc/hostcheck.schema.json). */
json_t *jo_hostcheck(const char *prog, const char *version,
		     const struct evr_hc_need *need,
		     const struct evr_hc_report *rep, int exit_status);

#endif
