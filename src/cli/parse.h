/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The command-line toolkit of rstream and mckey: a table of options read
 * with getopt_long, the number and seconds parsers their values go
 * through, and the one line a bad value is reported with.  A new option
 * is a row of its tool's table; what it means beyond its own value
 * (rules between options, derived settings) stays with the tool.
 */
#ifndef EVR_CLI_PARSE_H
#define EVR_CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* cli_num flags */
#define CLI_SUFFIX   0x1u   /* k, m or g (binary: 1024...) may follow */
#define CLI_ANY_BASE 0x2u   /* 0x... hexadecimal, 0... octal, as strtol's
			     * base 0 (upstream mckey's -p) */
/* struct cli_opt flags */
#define CLI_BAD_USAGE 0x4u  /* a bad value: its line, then the usage
			     * (CLI_PARSE_USAGE; rstream's -T) */
#define CLI_ZERO_NEG  0x8u  /* CLI_NUM: a 0 given is stored as -1 (the
			     * field's "never", its 0 being its default:
			     * rstream's --poll-usec 0) */

/* A whole number in [min, max] (flags above).  0, or -1 (*out untouched)
 * for anything else: empty, trailing characters, out of range. */
int cli_num(const char *s, long long min, long long max, unsigned flags,
	    long long *out);
/* Seconds, a decimal number in [min, max], as milliseconds rounded to
 * nearest.  0, or -1 (*ms untouched): empty, trailing characters, NaN,
 * out of range. */
int cli_secs_ms(const char *s, double min, double max, long long *ms);
/* The one line of every bad value:
 * "PROG: invalid value 'VAL' for OPT: WHAT". */
void cli_bad(FILE *err, const char *prog, const char *opt, const char *val,
	     const char *what);

/* What an option does with its value. */
enum cli_kind {
	CLI_FLAG = 0,   /* no value; sets the field to 1 */
	CLI_CONST,      /* no value; sets the field to lo (an enum's) */
	CLI_STR,        /* the const char * field points at the argument */
	CLI_NUM,        /* cli_num(arg, lo, hi, flags) into the field */
	CLI_SECS,       /* cli_secs_ms(arg, lo, hi) into the field */
	CLI_CALL,       /* set(obj, arg) decides: 0, -1 (a bad value), or
			 * CLI_SET_NUMBER: a number after all, read as
			 * CLI_NUM's (rstream's -S: "all" or a size) */
	CLI_RETURN,     /* no value; parsing stops with ret (--help) */
};

/* Which side of a client/server tool an option belongs to. */
enum cli_side {
	CLI_BOTH = 0,
	CLI_CLIENT,
	CLI_SERVER,
};

/* One row of a tool's option table. */
struct cli_opt {
	int val;                    /* the letter, or a value >= 256 */
	const char *lname;          /* long name without "--", or NULL */
	const char *name;           /* as messages name it: "-D/--duration" */
	enum cli_kind kind;
	unsigned flags;             /* CLI_NUM: CLI_SUFFIX, CLI_ANY_BASE;
				     * any: CLI_BAD_USAGE */
	double lo, hi;              /* CLI_NUM, CLI_SECS: the range (whole
				     * numbers below 2^53 are exact);
				     * CLI_CONST: lo is the value */
	size_t off, size;           /* the field set: CLI_FIELD() */
	const char *what;           /* a bad value: why, after "OPT: " */
	int (*set)(void *obj, const char *arg); /* CLI_CALL */
	void (*after)(void *obj);   /* called once the value is stored (of a
				     * CLI_CALL row, a number only) */
	int ret;                    /* CLI_RETURN: what cli_getopt returns
				     * (> 0) */
	enum cli_side side;
	const char *why;            /* with side: why the other side has no
				     * use for it, or NULL */
	/* CLI_CALL: what set() found wrong, in place of what (NULL: what) */
	const char *(*why_bad)(void *obj);
};

/* What a CLI_CALL row's set() returns for an argument that is a number
 * for the row's range to check and its field to take. */
#define CLI_SET_NUMBER 1

/* off and size of a member of TYPE, for struct cli_opt. */
#define CLI_FIELD(type, member) \
	offsetof(type, member), sizeof(((type *)0)->member)

/* Outcomes of cli_getopt other than a row's ret (which must be > 0). */
#define CLI_PARSE_DONE  0           /* every argument read */
#define CLI_PARSE_USAGE (-1)        /* unknown option, missing argument */
#define CLI_PARSE_BAD   (-2)        /* one line already on err */

/* The most rows a table may have (one bit each in *seen). */
#define CLI_MAX_OPTS 64

/*
 * Read argv with getopt_long: the short options and long ones are the
 * table's, in its order (which getopt_long's messages for ambiguous
 * prefixes list); glibc's getopt says what it has to say on stderr, as
 * upstream's tools do.  Each option's value is checked and stored into
 * obj; a bad one is reported with cli_bad() under prog.  An argument
 * that is no option is "PROG: unexpected argument 'ARG'".  *seen gets
 * bit i for each row i given (1ull << i).  Returns CLI_PARSE_DONE,
 * CLI_PARSE_USAGE, CLI_PARSE_BAD, or a CLI_RETURN row's ret.
 */
int cli_getopt(int argc, char **argv, const struct cli_opt *opts, size_t n,
	       void *obj, const char *prog, FILE *err, uint64_t *seen);

/* The number of elements of an array (not a pointer). */
#define CLI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
