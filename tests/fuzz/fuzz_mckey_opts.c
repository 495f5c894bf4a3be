/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey's command line (mckey_parse): NUL-separated arguments.  Besides
 * memory errors, checks what the program relies on: a bad value leaves
 * exactly one message on the stream it gave, anything else none, and an
 * accepted command line is within the limits the engine assumes.
 */
#include "config.h"

#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/mckey_opts.h"

#include "fuzz_argv.h"

static void check_accepted(const struct fuzz_argv *a,
			   const struct mckey_cli *cli)
{
	const struct evr_mcast_opts *o = &cli->o;

	/* --check runs nothing and needs no -m */
	FUZZ_CHECK(cli->check ? !o->group || fuzz_argv_owns(a, o->group) :
		   o->group && fuzz_argv_owns(a, o->group));
	FUZZ_CHECK(!o->unmapped || (fuzz_argv_owns(a, o->unmapped) &&
				   o->bind_addr));
	FUZZ_CHECK(!o->bind_addr || fuzz_argv_owns(a, o->bind_addr));
	FUZZ_CHECK(o->transport == EVR_MC_RDMA || o->transport == EVR_MC_UDP);
	FUZZ_CHECK(o->nqps >= 1 && o->nqps <= 1024);
	FUZZ_CHECK(o->count <= 100000000);
	FUZZ_CHECK(o->size <= 65507);
	FUZZ_CHECK(o->port_space == RDMA_PS_UDP ||
		   o->port_space == RDMA_PS_IPOIB);
	FUZZ_CHECK(o->settle_ms <= 3600000);
	/* 0: the engine's default, evr_mcast_opts_resolve()'s to fill */
	FUZZ_CHECK(o->deadline_ms == 0 ||
		   (o->deadline_ms >= 10 && o->deadline_ms <= 86400000));
	FUZZ_CHECK(o->rate == 0 || (o->rate > 0 && o->rate <= 1e7));
	FUZZ_CHECK(o->window % 64 == 0);
	FUZZ_CHECK(o->max_senders <= EVR_MC_MAX_MAX_SENDERS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mckey_cli cli;
	struct fuzz_argv a;
	char *msg = NULL;
	size_t len = 0;
	FILE *err, *saved;
	int ret;

	if (fuzz_argv_make(&a, "mckey", data, size))
		return 0;
	err = open_memstream(&msg, &len);
	if (!err) {
		fuzz_argv_free(&a);
		return 0;
	}
	saved = fuzz_quiet_stderr();
	ret = mckey_parse(a.argc, a.argv, &cli, err);
	fuzz_restore_stderr(saved);
	FUZZ_CHECK(fclose(err) == 0);

	switch (ret) {
	case MCKEY_PARSE_OK:
		FUZZ_CHECK(len == 0);
		check_accepted(&a, &cli);
		break;
	case MCKEY_PARSE_BAD:
		FUZZ_CHECK(fuzz_one_line(&a, msg, len, "mckey"));
		break;
	case MCKEY_PARSE_UNMAPPED:
		FUZZ_CHECK(len == 0);
		FUZZ_CHECK(cli.o.unmapped && !cli.o.bind_addr);
		break;
	case MCKEY_PARSE_USAGE:
	case MCKEY_PARSE_HELP:
	case MCKEY_PARSE_VERSION:
		FUZZ_CHECK(len == 0);
		break;
	default:
		FUZZ_CHECK(!"mckey_parse returned an unknown status");
	}
	free(msg);
	fuzz_argv_free(&a);
	return 0;
}
