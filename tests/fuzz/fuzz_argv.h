/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * For the option-parser targets: the input as a command line, its
 * arguments separated by NUL bytes (argv[0] is the program's name, not
 * part of the input).  Every argument is its own exact-size allocation,
 * so that a parser reading past an argument's end is caught by ASan.
 *
 * glibc's getopt reports unknown options and missing arguments on stderr
 * itself (the programs keep that, as upstream's do); while a parser runs,
 * stderr is pointed at /dev/null so that libFuzzer's output stays
 * readable.  The parser's own messages go to the stream it is given.
 */
#ifndef EVR_FUZZ_ARGV_H
#define EVR_FUZZ_ARGV_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define FUZZ_MAX_ARGS 64

struct fuzz_argv {
	int argc;
	char *argv[FUZZ_MAX_ARGS + 2];
	char *own[FUZZ_MAX_ARGS + 1];   /* getopt permutes argv */
};

static inline void fuzz_argv_free(struct fuzz_argv *a)
{
	int i;

	for (i = 0; i < a->argc; i++)
		free(a->own[i]);
	a->argc = 0;
}

/* 0, or -1 when memory is short (the input is then skipped). */
static inline int fuzz_argv_make(struct fuzz_argv *a, const char *prog,
				 const uint8_t *data, size_t size)
{
	size_t start = 0, i;

	memset(a, 0, sizeof(*a));
	a->own[0] = strdup(prog);
	if (!a->own[0])
		return -1;
	a->argc = 1;
	for (i = 0; i <= size && a->argc <= FUZZ_MAX_ARGS; i++) {
		char *s;

		if (i < size && data[i])
			continue;
		/* an empty input is no argument; a trailing NUL ends the
		 * last one */
		if (i == size && start == size)
			break;
		s = malloc(i - start + 1);
		if (!s) {
			fuzz_argv_free(a);
			return -1;
		}
		memcpy(s, data + start, i - start);
		s[i - start] = '\0';
		a->own[a->argc++] = s;
		start = i + 1;
	}
	memcpy(a->argv, a->own, a->argc * sizeof(char *));
	a->argv[a->argc] = NULL;
	return 0;
}

/* Is p one of the argument strings (or inside one)? */
static inline int fuzz_argv_owns(const struct fuzz_argv *a, const char *p)
{
	int i;

	for (i = 0; i < a->argc; i++)
		if (p >= a->own[i] && p <= a->own[i] + strlen(a->own[i]))
			return 1;
	return 0;
}

static FILE *fuzz_devnull;

static inline FILE *fuzz_quiet_stderr(void)
{
	FILE *saved = stderr;

	if (!fuzz_devnull)
		fuzz_devnull = fopen("/dev/null", "w");
	if (fuzz_devnull)
		stderr = fuzz_devnull;
	return saved;
}

static inline void fuzz_restore_stderr(FILE *saved)
{
	stderr = saved;
}

/* Does any argument hold a newline (which a message quoting it repeats)? */
static inline int fuzz_argv_has_newline(const struct fuzz_argv *a)
{
	int i;

	for (i = 0; i < a->argc; i++)
		if (strchr(a->own[i], '\n'))
			return 1;
	return 0;
}

/* A parser's message: one line that starts with "<prog>: " and ends with
 * a newline, the only one unless an argument brought its own. */
static inline int fuzz_one_line(const struct fuzz_argv *a, const char *buf,
				size_t len, const char *prog)
{
	size_t plen = strlen(prog);

	if (!len || buf[len - 1] != '\n')
		return 0;
	if (memchr(buf, '\n', len) != buf + len - 1 &&
	    !fuzz_argv_has_newline(a))
		return 0;
	return len > plen + 2 && !memcmp(buf, prog, plen) &&
	       buf[plen] == ':' && buf[plen + 1] == ' ';
}

#endif
