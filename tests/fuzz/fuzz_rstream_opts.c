/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream's command line (rstream_parse, and through it rstream_test_opt):
 * NUL-separated arguments.  Besides memory errors, checks what the program
 * relies on: a bad value leaves exactly one message on the stream it gave,
 * anything else leaves none there, and an accepted command line is
 * consistent and builds a test plan.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/rstream_opts.h"
#include "stream/plan.h"

#include "fuzz_argv.h"

/* The parser asks the engine's transport table whether -i means anything
 * there (a note on the error stream); scripts/fuzz.sh links the parser
 * without the engine, so this weak one answers as the table does (RDMA
 * sends inline, TCP not).  Where the engine is linked (the replay of
 * make check), its definition is the one taken. */
__attribute__((weak)) unsigned
evr_stream_transport_caps(enum evr_stream_transport kind)
{
	return kind == EVR_TRANSPORT_RDMA ? EVR_TRANSPORT_CAP_INLINE : 0;
}

static void check_accepted(const struct fuzz_argv *a,
			   const struct rstream_cli *cli)
{
	const struct evr_stream_opts *o = &cli->o;
	struct evr_plan p;
	unsigned i, j;

	FUZZ_CHECK(o->transport == EVR_TRANSPORT_TCP ||
		   o->transport == EVR_TRANSPORT_RDMA);
	FUZZ_CHECK(o->io == (cli->async ? EVR_IO_ASYNC :
			     cli->blocking ? EVR_IO_BLOCK : EVR_IO_NONBLOCK));
	FUZZ_CHECK(o->addr_fmt >= EVR_ADDR_NAME && o->addr_fmt <= EVR_ADDR_GID);
	FUZZ_CHECK(o->addr_fmt != EVR_ADDR_GID || o->resolve_rdma);
	FUZZ_CHECK(!o->server == !!o->host);
	FUZZ_CHECK(!o->host || fuzz_argv_owns(a, o->host));
	FUZZ_CHECK(!o->bind_addr || fuzz_argv_owns(a, o->bind_addr));
	FUZZ_CHECK(o->port && *o->port);
	FUZZ_CHECK(!strcmp(o->port, EVR_DEFAULT_PORT) ||
		   fuzz_argv_owns(a, o->port));
	FUZZ_CHECK(o->buffer_size >= 0 && o->buffer_size <= (1 << 30));
	FUZZ_CHECK(o->inline_size >= 0 && o->inline_size <= 65536);
	FUZZ_CHECK(o->keepalive >= 0 && o->keepalive <= 32767);
	FUZZ_CHECK(!(o->custom && o->size_all));
	FUZZ_CHECK(!(o->no_negotiate && o->force_negotiate));
	FUZZ_CHECK(!o->server || (!o->duration_ms && !o->percentiles &&
				  o->conns <= 1 && !o->all_at_once));
	FUZZ_CHECK(o->server || !o->fork);
	FUZZ_CHECK(!o->duration_ms || (o->duration_ms >= 10 &&
				       o->duration_ms <= 86400000 &&
				       !o->no_negotiate && !o->verify));
	FUZZ_CHECK(!o->interval_ms || (o->interval_ms >= 10 &&
				       o->interval_ms <= 86400000));
	FUZZ_CHECK(!o->stall_ms || (o->stall_ms >= 10 &&
				    o->stall_ms <= 86400000));
	FUZZ_CHECK(o->conns <= EVR_MAX_CONNS);
	FUZZ_CHECK(o->conns <= 1 || o->io != EVR_IO_BLOCK);
	FUZZ_CHECK(o->conns <= 1 || !o->verify || o->no_negotiate ||
		   o->force_negotiate);

	/* What the engine does next with it (evr_stream_new). */
	FUZZ_CHECK(evr__plan_build(&p, o) == 0);
	FUZZ_CHECK(p.nconns >= 1 && p.nconns <= EVR_PLAN_MAX_CONNS);
	for (i = 0; i < p.nconns; i++) {
		const struct evr_conn_plan *cp = &p.conns[i];

		FUZZ_CHECK(cp->ntests >= 1 && cp->ntests <= EVR_PLAN_MAX_TESTS);
		FUZZ_CHECK(evr__conn_plan_max_size(cp) <= EVR_MAX_XFER_SIZE);
		for (j = 0; j < cp->ntests; j++) {
			const struct evr_test *t = &cp->tests[j];

			FUZZ_CHECK(t->size >= 1 && t->size <= EVR_MAX_XFER_SIZE);
			FUZZ_CHECK(t->count >= 1 && t->count <= EVR_MAX_COUNT);
			FUZZ_CHECK(t->iters >= 1 && t->iters <= EVR_MAX_COUNT);
			FUZZ_CHECK(memchr(t->name, '\0', sizeof(t->name)) &&
				   t->name[0]);
		}
	}
	if (o->custom) {
		const struct evr_test *t = &p.conns[0].tests[0];

		FUZZ_CHECK(p.nconns == 1 && t->size == o->size &&
			   t->count == o->count && t->iters == o->iters);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rstream_cli cli;
	struct fuzz_argv a;
	char *msg = NULL;
	size_t len = 0;
	FILE *err, *saved;
	int ret;

	if (fuzz_argv_make(&a, "rstream", data, size))
		return 0;
	err = open_memstream(&msg, &len);
	if (!err) {
		fuzz_argv_free(&a);
		return 0;
	}
	saved = fuzz_quiet_stderr();
	ret = rstream_parse(a.argc, a.argv, &cli, err);
	fuzz_restore_stderr(saved);
	FUZZ_CHECK(fclose(err) == 0);

	switch (ret) {
	case RSTREAM_PARSE_OK:
		/* silent, but for the one note on -i over TCP */
		FUZZ_CHECK(len == 0 ||
			   (fuzz_one_line(&a, msg, len, "rstream") &&
			    !strncmp(msg, "rstream: note: -i ", 18) &&
			    cli.o.transport == EVR_TRANSPORT_TCP));
		check_accepted(&a, &cli);
		break;
	case RSTREAM_PARSE_BAD:
		FUZZ_CHECK(fuzz_one_line(&a, msg, len, "rstream"));
		break;
	case RSTREAM_PARSE_USAGE:
		/* the program prints the usage (getopt's own complaint, if
		 * any, went to stderr); a bad -T value is named first */
		FUZZ_CHECK(len == 0 ||
			   (fuzz_one_line(&a, msg, len, "rstream") &&
			    !strncmp(msg, "rstream: invalid value '", 24) &&
			    strstr(msg, "' for -T: ")));
		break;
	case RSTREAM_PARSE_HELP:
	case RSTREAM_PARSE_VERSION:
		FUZZ_CHECK(len == 0);
		break;
	default:
		FUZZ_CHECK(!"rstream_parse returned an unknown status");
	}
	free(msg);
	fuzz_argv_free(&a);
	return 0;
}
