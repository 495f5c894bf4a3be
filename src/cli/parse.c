/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/*
 * Scale *v by the size suffix at **end (k, m or g, any case: powers of
 * 1024) and step over it; -1 if the suffix is unknown or *v overflows.
 */
static int apply_suffix(long long *v, char **end)
{
	long long mul;

	switch (**end) {
	case 'k': case 'K':
		mul = 1024;
		break;
	case 'm': case 'M':
		mul = 1024 * 1024;
		break;
	case 'g': case 'G':
		mul = 1024LL * 1024 * 1024;
		break;
	default:
		return -1;
	}
	if (__builtin_mul_overflow(*v, mul, v))
		return -1;
	(*end)++;
	return 0;
}

int cli_num(const char *s, long long min, long long max, unsigned flags,
	    long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, flags & CLI_ANY_BASE ? 0 : 10);
	if (end == s || errno)
		return -1;
	if ((flags & CLI_SUFFIX) && *end && apply_suffix(&v, &end))
		return -1;
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_secs_ms(const char *s, double min, double max, long long *ms)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(s, &end);
	/* !(sec >= min): NaN too */
	if (end == s || *end || errno || !(sec >= min) || sec > max)
		return -1;
	*ms = (long long)(sec * 1000.0 + 0.5);
	return 0;
}

void cli_bad(FILE *err, const char *prog, const char *opt, const char *val,
	     const char *what)
{
	fprintf(err, "%s: invalid value '%s' for %s: %s\n", prog, val, opt,
		what);
}

static int takes_arg(const struct cli_opt *r)
{
	return r->kind != CLI_FLAG && r->kind != CLI_CONST &&
	       r->kind != CLI_RETURN;
}

/* getopt_long's view of the table: "s:b:..." and the long options, both
 * in the table's order. */
static void getopt_tables(const struct cli_opt *opts, size_t n,
			  char *shorts, struct option *longs)
{
	size_t i, nl = 0;

	for (i = 0; i < n; i++) {
		if (opts[i].val < 256) {
			*shorts++ = (char)opts[i].val;
			if (takes_arg(&opts[i]))
				*shorts++ = ':';
		}
		if (opts[i].lname)
			longs[nl++] = (struct option){
				opts[i].lname,
				takes_arg(&opts[i]) ? required_argument :
						      no_argument,
				NULL, opts[i].val };
	}
	*shorts = '\0';
	longs[nl] = (struct option){ NULL, 0, NULL, 0 };
}

/* The field a row sets: whole numbers by their size, so that one table
 * can fill int, unsigned, uint16_t, uint32_t and uint64_t members. */
static void store(void *obj, const struct cli_opt *r, long long v)
{
	char *p = (char *)obj + r->off;
	uint64_t u64 = (uint64_t)v;
	uint32_t u32 = (uint32_t)v;
	uint16_t u16 = (uint16_t)v;

	switch (r->size) {
	case sizeof(u64):
		memcpy(p, &u64, sizeof(u64));
		break;
	case sizeof(u32):
		memcpy(p, &u32, sizeof(u32));
		break;
	case sizeof(u16):
		memcpy(p, &u16, sizeof(u16));
		break;
	default:
		assert(!"cli_opt: no whole number of this size");
	}
}

/* A CLI_NUM row's value: 0, or -1 for a bad one. */
static int number(const struct cli_opt *r, const char *arg, long long *v)
{
	if (cli_num(arg, (long long)r->lo, (long long)r->hi, r->flags, v))
		return -1;
	if (!*v && (r->flags & CLI_ZERO_NEG))
		*v = -1;
	return 0;
}

/* One option's value: 0 once stored, else what cli_getopt returns. */
static int apply(const struct cli_opt *r, const char *arg, void *obj,
		 const char *prog, FILE *err)
{
	long long v = 1;
	int bad = 0, store_v = 1;

	switch (r->kind) {
	case CLI_FLAG:
		break;
	case CLI_CONST:
		v = (long long)r->lo;
		break;
	case CLI_STR:
		assert(r->size == sizeof(arg));
		memcpy((char *)obj + r->off, &arg, sizeof(arg));
		store_v = 0;
		break;
	case CLI_CALL:
		bad = r->set(obj, arg);
		if (bad == CLI_SET_NUMBER)
			bad = number(r, arg, &v);
		else if (!bad)
			return 0;   /* set() took it whole */
		break;
	case CLI_NUM:
		bad = number(r, arg, &v);
		break;
	case CLI_SECS:
		bad = cli_secs_ms(arg, r->lo, r->hi, &v);
		break;
	case CLI_RETURN:
		return r->ret;
	}
	if (bad) {
		cli_bad(err, prog, r->name, arg,
			r->why_bad ? r->why_bad(obj) : r->what);
		return r->flags & CLI_BAD_USAGE ? CLI_PARSE_USAGE :
						  CLI_PARSE_BAD;
	}
	if (store_v)
		store(obj, r, v);
	if (r->after)
		r->after(obj);
	return 0;
}

int cli_getopt(int argc, char **argv, const struct cli_opt *opts, size_t n,
	       void *obj, const char *prog, FILE *err, uint64_t *seen)
{
	char shorts[3 * CLI_MAX_OPTS + 1];
	struct option longs[CLI_MAX_OPTS + 1];
	size_t i;
	int op, ret;

	assert(n <= CLI_MAX_OPTS);
	getopt_tables(opts, n, shorts, longs);
	*seen = 0;
	optind = 0; /* 0: glibc also forgets a half-parsed "-xyz" group */
	opterr = 1;
	while ((op = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		for (i = 0; i < n && opts[i].val != op; i++)
			;
		if (i == n)
			return CLI_PARSE_USAGE;  /* '?': getopt has said why */
		*seen |= 1ull << i;
		ret = apply(&opts[i], optarg, obj, prog, err);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		fprintf(err, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		return CLI_PARSE_BAD;
	}
	return CLI_PARSE_DONE;
}
