/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Replays a fuzz target's corpus without libFuzzer, so that `make check`
 * (gcc, with or without --enable-sanitizers) runs every target over every
 * seed and regression input.  A target reports a finding by crashing or
 * aborting, which fails the test.
 *
 *   replay_NAME [FILE|DIR]...
 *
 * With no argument it reads $EVR_SRCDIR/tests/fuzz/corpus/NAME (the
 * target's name is compiled in as FUZZ_TARGET).  A missing or empty
 * corpus is a hard error (exit 99): a replay that ran nothing must not
 * pass.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET (the target's name) must be defined"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long nrun;

static int run_file(const char *path)
{
	uint8_t *buf = NULL, *copy;
	size_t len = 0, cap = 0, n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "replay %s: %s: %s\n", FUZZ_TARGET, path,
			strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf) {
				fclose(f);
				return -1;
			}
		}
		n = fread(buf + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay %s: %s: read error\n", FUZZ_TARGET,
			path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	/* An exact-size copy, as libFuzzer gives: a read past the input's
	 * end is then a heap overflow under ASan. */
	copy = malloc(len ? len : 1);
	if (!copy) {
		free(buf);
		return -1;
	}
	if (len)
		memcpy(copy, buf, len);
	free(buf);
	if (getenv("REPLAY_VERBOSE"))
		fprintf(stderr, "replay %s: %s (%zu bytes)\n", FUZZ_TARGET,
			path, len);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
	nrun++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path)
{
	struct dirent *de;
	struct stat st;
	char **names = NULL;
	size_t n = 0, i;
	int ret = 0;
	DIR *d;

	if (stat(path, &st)) {
		fprintf(stderr, "replay %s: %s: %s\n", FUZZ_TARGET, path,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay %s: %s: %s\n", FUZZ_TARGET, path,
			strerror(errno));
		return -1;
	}
	/* in name order, so that a failure is reproducible */
	while ((de = readdir(d))) {
		char **nn;

		if (de->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn) {
			ret = -1;
			break;
		}
		names = nn;
		if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0) {
			ret = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp);
	for (i = 0; i < n; i++) {
		if (!ret && !stat(names[i], &st) && S_ISREG(st.st_mode))
			ret = run_file(names[i]);
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	const char *src = getenv("EVR_SRCDIR");
	char *def = NULL;
	int i;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (i = 1; i < argc; i++)
			if (run_path(argv[i]))
				return 99;
	} else {
		if (asprintf(&def, "%s/tests/fuzz/corpus/%s", src ? src : ".",
			     FUZZ_TARGET) < 0)
			return 99;
		if (run_path(def)) {
			free(def);
			return 99;
		}
	}
	if (!nrun) {
		fprintf(stderr, "replay %s: no input in %s\n", FUZZ_TARGET,
			def ? def : "the given paths");
		free(def);
		return 99;
	}
	printf("replay %s: %lu inputs, no finding\n", FUZZ_TARGET, nrun);
	free(def);
	return 0;
}
