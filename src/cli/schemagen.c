/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Built and run by the build, never installed: schemagen IN > OUT copies
 * IN (doc/rstream.schema.json.in) with the one @RSTREAM_OPTIONS@ in it
 * replaced by the schema of the start record's "options", made from the
 * option table (jo_rstream_options_schema()), so that a new option needs
 * no hand edit of the schema.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"

#define MARK "@RSTREAM_OPTIONS@"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *nb = realloc(buf, len + n + 1);

		if (!nb) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = nb;
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* The options' schema, one property a line, indented to stand where the
 * mark stood. */
static int put_options(FILE *out)
{
	json_t *s = jo_rstream_options_schema();
	const char *key;
	json_t *v;
	char *txt;
	int first = 1;

	if (!s)
		return -1;
	fprintf(out, "{\n          \"type\": \"object\", \"additionalProperties\": false,\n");
	txt = json_dumps(json_object_get(s, "required"), JSON_COMPACT);
	fprintf(out, "          \"required\": %s,\n", txt ? txt : "[]");
	free(txt);
	fprintf(out, "          \"properties\": {\n");
	json_object_foreach(json_object_get(s, "properties"), key, v) {
		txt = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fprintf(out, "%s            \"%s\": %s", first ? "" : ",\n", key,
			txt ? txt : "{}");
		free(txt);
		first = 0;
	}
	fprintf(out, "\n          }\n        }");
	json_decref(s);
	return 0;
}

int main(int argc, char **argv)
{
	char *in, *at;

	if (argc != 2) {
		fprintf(stderr, "usage: schemagen SCHEMA.json.in > SCHEMA.json\n");
		return 2;
	}
	in = slurp(argv[1]);
	if (!in || !(at = strstr(in, MARK))) {
		fprintf(stderr, "schemagen: %s: %s\n", argv[1],
			in ? "no " MARK " in it" : "cannot read it");
		free(in);
		return 1;
	}
	fwrite(in, 1, (size_t)(at - in), stdout);
	if (put_options(stdout)) {
		free(in);
		return 1;
	}
	fputs(at + strlen(MARK), stdout);
	free(in);
	return fflush(stdout) ? 1 : 0;
}
