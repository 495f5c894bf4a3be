/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What every evrdma program does around its engine: the default libev
 * loop, the evrdma loop on it, --trace, and SIGINT/SIGTERM turned into a
 * cancel of the engine.
 */
#ifndef EVR_CLI_COMMON_H
#define EVR_CLI_COMMON_H

#include <ev.h>
#include <stdio.h>

#include "evrdma/loop.h"

struct cli_loop {
	const char *prog;           /* "rstream": prefix of trace lines */
	struct ev_loop *evl;
	struct evr_loop *loop;
	ev_signal sigint_w, sigterm_w;
	void (*on_signal)(void *ud);
	void *ud;
	int signum;                 /* the first SIGINT/SIGTERM caught, or 0 */
};

/* Ignore SIGPIPE, create the loops, set the trace sink when trace is set.
 * 0, or -1 after "<prog>: cannot create the event loop" on stderr. */
int cli_loop_open(struct cli_loop *cl, const char *prog, int trace);
/* SIGINT and SIGTERM call on_signal(ud) from the loop. */
void cli_loop_signals(struct cli_loop *cl, void (*on_signal)(void *ud),
		      void *ud);
/* The engine is done: stop catching signals and leave evr_loop_run(). */
void cli_loop_finish(struct cli_loop *cl);
/* Free both loops (the signal watchers are stopped first). */
void cli_loop_close(struct cli_loop *cl);

/* "SIGINT" or "SIGTERM": what cl caught (for "interrupted by ..."). */
const char *cli_signame(const struct cli_loop *cl);

/* Standard output, watched as coreutils' close_stdout does, but as it
 * goes: the first write to it that fails (a full disk; a closed pipe,
 * since SIGPIPE is ignored; a closed descriptor) is said in one line on
 * stderr, "<prog>: write error on standard output: <reason>", and the
 * program stops its run rather than compute results nobody will see. */
struct cli_out {
	const char *prog;
	int failed;
	int err;                    /* errno of the failed write */
	int werr;                   /* the first failed write's errno, kept
				     * by cli_out_init()'s stream */
};
/* The program's first act, before any output, loop or socket:
 * - descriptors 0, 1 and 2 open: a closed one gets /dev/null opened the
 *   other way round (stdin for writing, stdout and stderr for reading),
 *   so that its use fails as the closed descriptor's would (EBADF), and
 *   no socket or event loop takes its number and gets the output;
 * - SIGPIPE ignored: a closed pipe is a write error (EPIPE), said once,
 *   not a silent death;
 * - stdout a stream on descriptor 1 that keeps the first failed write's
 *   errno in o, whichever write or flush met it (stdio forgets it).
 * 0, or a negative errno when stdout stays the plain stream. */
int cli_out_init(struct cli_out *o);
/* After a write or fflush to stdout: 1 once a write has failed. */
int cli_out_check(struct cli_out *o);
/* The last act: flush and close stdout.  Returns status, or, when status
 * is 0 and output was lost, write_status (CLI_WRITE_ERRNO: mckey's
 * convention, the write's negative errno modulo 256). */
#define CLI_WRITE_ERRNO (-1)
int cli_out_close(struct cli_out *o, int status, int write_status);

/* The parser's messages, kept for an error record as well: open() gives
 * the stream to parse with (stderr if memory is short); close() writes
 * what was said to stderr, copies its first line to first ("" if none),
 * without a leading "<prog>: ", and frees the rest. */
struct cli_msg {
	char *buf;
	size_t len;
	FILE *f;
};
FILE *cli_msg_open(struct cli_msg *m);
void cli_msg_close(struct cli_msg *m, char *first, size_t len,
		   const char *prog);

/* opt (e.g. "--json") among the arguments, before any "--": the parser
 * may have stopped before it. */
int cli_argv_has(int argc, char **argv, const char *opt);

/* evr_mc_failure_str(), with mckey's option names where the engine
 * speaks of its settings (the one it refuses: -M over UDP). */
struct evr_mc_failure;
void cli_mc_failure_str(const struct evr_mc_failure *f, char *buf,
			size_t len);

#endif
