/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The configuration file.  One JSON object:
 *
 *   { "listen_address": "127.0.0.1", "listen_port": 9471,
 *     "http": { "max_connections": 64, ... },
 *     "probes": [ { "name": ..., "type": "rstream" | "mckey", ... } ],
 *     "responders": [ { "transport": "tcp" | "rdma", "port": N,
 *                       "bind": ADDR, ... } ] }
 *
 * Every key is checked against the list of keys its object may hold, so
 * a misspelt key is an error rather than a silently ignored setting.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pconf.h"
#include "peers.h"
#include "runlog.h"

struct ctx {
	const char *file;
	char *err;
	size_t len;
	char where[128];        /* "probes[2] (\"lo\")" or "" */
};

static int fail(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct ctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->len, "%s: %s%s%s", c->file, c->where,
		 c->where[0] ? ": " : "", msg);
	return -1;
}

/* The keys of EVR_STREAM_OPTIONS' rows (their DKEY column): the
 * objects that have each (a probe's, a responder's), its kind and range,
 * and the field of struct evr_stream_opts it sets. */
enum { DK_PROBE = 1, DK_RESP = 2, DK_PROBE_RESP = DK_PROBE | DK_RESP };
enum dk_kind { DK_NONE, DK_NUM, DK_MS, DK_FLAG };

struct dkey {
	const char *key;            /* NULL: not a key of the daemon's */
	unsigned whose;             /* DK_PROBE, DK_RESP */
	enum dk_kind kind;
	unsigned long long lo, hi;  /* DK_MS: milliseconds */
	unsigned flags;             /* EVR_SOPT_* */
	size_t off, size;
};

#define DKEY_DKEY(k, w, l, h) .key = (k), .whose = DK_##w
#define DKEY_NODKEY .key = NULL
/* the daemon's own range where the row narrows it */
#define DLO_DKEY(k, w, l, h) (l)
#define DLO_NODKEY 0
#define DHI_DKEY(k, w, l, h) (h)
#define DHI_NODKEY 0
#define DK_KIND_NUM DK_NUM
#define DK_KIND_MS DK_MS
#define DK_KIND_FLAG DK_FLAG
#define DK_KIND_STR DK_NONE
#define DK_KIND_WORD DK_NONE
#define DK_ROW(f, kind_, lo_, hi_, def, fl, side, cli, help, json, dkey) \
	{ DKEY_##dkey, .kind = DK_KIND_##kind_, \
	  .lo = DLO_##dkey ? DLO_##dkey : (lo_), \
	  .hi = DHI_##dkey ? DHI_##dkey : (hi_), \
	  .flags = (fl), .off = offsetof(struct evr_stream_opts, f), \
	  .size = sizeof(((struct evr_stream_opts *)0)->f) },
static const struct dkey dkeys[] = { EVR_STREAM_OPTIONS(DK_ROW) };
#undef DK_ROW
#undef DKEY_DKEY
#undef DKEY_NODKEY
#undef DLO_DKEY
#undef DLO_NODKEY
#undef DHI_DKEY
#undef DHI_NODKEY
#undef DK_KIND_NUM
#undef DK_KIND_MS
#undef DK_KIND_FLAG
#undef DK_KIND_STR
#undef DK_KIND_WORD

static int dkey_of(const struct dkey *d, unsigned whose)
{
	return d->key && (d->whose & whose);
}

/* key is one of allowed (NULL-terminated), or a key of the table's
 * rows that objects of whose (DK_*, or 0) have */
static int key_allowed(const char *key, const char *const *allowed,
		       unsigned whose)
{
	size_t i;

	for (i = 0; allowed[i]; i++)
		if (!strcmp(key, allowed[i]))
			return 1;
	for (i = 0; i < sizeof(dkeys) / sizeof(dkeys[0]); i++)
		if (dkey_of(&dkeys[i], whose) && !strcmp(key, dkeys[i].key))
			return 1;
	return 0;
}

static int check_keys_of(struct ctx *c, json_t *obj,
			 const char *const *allowed, unsigned whose)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
		if (!key_allowed(key, allowed, whose))
			return fail(c, "unknown key \"%s\"", key);
	return 0;
}

static int check_keys(struct ctx *c, json_t *obj, const char *const *allowed)
{
	return check_keys_of(c, obj, allowed, 0);
}

/* A string member: absent -> def (may be NULL). */
static int get_str(struct ctx *c, json_t *obj, const char *key,
		   const char *def, char **out)
{
	json_t *v = json_object_get(obj, key);
	const char *s = def;

	if (v) {
		if (!json_is_string(v))
			return fail(c, "\"%s\" must be a string", key);
		s = json_string_value(v);
		if (!s[0])
			return fail(c, "\"%s\" must not be empty", key);
		if (strlen(s) > 255)
			return fail(c, "\"%s\" is too long", key);
	}
	*out = NULL;
	if (s && !(*out = strdup(s)))
		return fail(c, "out of memory");
	return 0;
}

static int get_num(struct ctx *c, json_t *obj, const char *key, double min,
		   double max, double def, double *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (!v)
		return 0;
	if (!json_is_number(v))
		return fail(c, "\"%s\" must be a number", key);
	*out = json_number_value(v);
	if (!(*out >= min && *out <= max))
		return fail(c, "\"%s\" is %g, must be %g to %g", key, *out, min,
			    max);
	return 0;
}

static int get_uint(struct ctx *c, json_t *obj, const char *key,
		    unsigned long long min, unsigned long long max,
		    unsigned long long def, unsigned long long *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t i;

	*out = def;
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return fail(c, "\"%s\" must be an integer", key);
	i = json_integer_value(v);
	if (i < 0 || (unsigned long long)i < min ||
	    (unsigned long long)i > max)
		return fail(c, "\"%s\" is %lld, must be %llu to %llu", key,
			    (long long)i, min, max);
	*out = (unsigned long long)i;
	return 0;
}

static int get_bool(struct ctx *c, json_t *obj, const char *key, int def,
		    int *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(c, "\"%s\" must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

/* A whole number into a field of 4 or 8 bytes. */
static void put_field(struct evr_stream_opts *o, const struct dkey *d,
		      long long v)
{
	char *p = (char *)o + d->off;
	uint64_t u64 = (uint64_t)v;
	uint32_t u32 = (uint32_t)v;

	if (d->size == sizeof(u64))
		memcpy(p, &u64, sizeof(u64));
	else
		memcpy(p, &u32, sizeof(u32));
}

/* One key of the table's, given: checked against its row's range, and
 * stored as the row's option. */
static int get_opt_key(struct ctx *c, json_t *obj, const struct dkey *d,
		       struct evr_stream_opts *o)
{
	unsigned long long u;
	double sec;
	int b;

	switch (d->kind) {
	case DK_MS:
		if (get_num(c, obj, d->key, d->lo / 1000.0, d->hi / 1000.0, 0,
			    &sec))
			return -1;
		put_field(o, d, (long long)(sec * 1000 + 0.5));
		return 0;
	case DK_FLAG:
		if (get_bool(c, obj, d->key, 0, &b))
			return -1;
		put_field(o, d, b);
		return 0;
	default:
		if (get_uint(c, obj, d->key, d->lo, d->hi, 0, &u))
			return -1;
		/* rstream --poll-usec 0's never */
		put_field(o, d, !u && (d->flags & EVR_SOPT_ZERO_NEVER) ?
				EVR_POLL_NEVER : (long long)u);
		return 0;
	}
}

/* The keys of EVR_STREAM_OPTIONS' rows that objects of whose have, as
 * given in obj, into o; a key left out leaves o as it is (the preset of
 * the probe or the responder).  A key of a custom test's (size, count,
 * iters) makes it one. */
static int get_opt_keys(struct ctx *c, json_t *obj, unsigned whose,
			struct evr_stream_opts *o)
{
	size_t i;

	for (i = 0; i < sizeof(dkeys) / sizeof(dkeys[0]); i++) {
		const struct dkey *d = &dkeys[i];

		if (!dkey_of(d, whose) || !json_object_get(obj, d->key))
			continue;
		if (get_opt_key(c, obj, d, o))
			return -1;
		if (d->flags & EVR_SOPT_CUSTOM)
			o->custom = 1;
	}
	return 0;
}

/* One of a fixed set of words: the index into words. */
/* The words of an enum whose values are 0, 1, ... from its public name
 * function (NULL past the last), NULL-terminated, for get_enum(). */
#define MAX_WORDS 8
#define ENUM_WORDS(words, name_fn) \
	do { \
		int i_; \
		for (i_ = 0; i_ < MAX_WORDS - 1 && (name_fn)(i_); i_++) \
			(words)[i_] = (name_fn)(i_); \
		(words)[i_] = NULL; \
	} while (0)

/* The failure of get_enum(): s is none of words, of which the first
 * three at most are named. */
static int enum_fail(struct ctx *c, const char *key, const char *s,
		     const char *const *words)
{
	return fail(c, "\"%s\" is \"%s\", must be one of %s%s%s%s%s", key, s,
		    words[0], words[1] ? ", " : "", words[1] ? words[1] : "",
		    words[1] && words[2] ? ", " : "",
		    words[1] && words[2] ? words[2] : "");
}

static int get_enum(struct ctx *c, json_t *obj, const char *key,
		    const char *const *words, int def, int *out)
{
	json_t *v = json_object_get(obj, key);
	const char *s;
	int i;

	*out = def;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return fail(c, "\"%s\" must be a string", key);
	s = json_string_value(v);
	for (i = 0; words[i]; i++)
		if (!strcmp(s, words[i])) {
			*out = i;
			return 0;
		}
	return enum_fail(c, key, s, words);
}

/* A port as a number or a numeric string. */
static int get_port(struct ctx *c, json_t *obj, const char *key,
		    unsigned def, unsigned *out)
{
	json_t *v = json_object_get(obj, key);
	char *end;
	long p;

	*out = def;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		p = (long)json_integer_value(v);
	} else if (json_is_string(v)) {
		errno = 0;
		p = strtol(json_string_value(v), &end, 10);
		if (errno || *end || end == json_string_value(v))
			p = -1;
	} else {
		return fail(c, "\"%s\" must be a port number", key);
	}
	if (p < 1 || p > 65535)
		return fail(c, "\"%s\" must be a port number 1 to 65535", key);
	*out = (unsigned)p;
	return 0;
}

/* No control character: C0, DEL, nor C1 (U+0080 to U+009F, 0xc2 0x80
 * to 0xc2 0x9f in UTF-8, which Jansson's strings are). */
static int name_ok(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (; *u; u++)
		if (*u < 0x20 || *u == 0x7f ||
		    (*u == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f))
			return 0;
	return 1;
}

/* What is wrong with s as a host the engines can use (a name, an IPv4
 * address, an IPv6 address with an optional %scope), or NULL: a string
 * the resolver would be sent for nothing, every run, is refused here. */
static const char *host_problem(const char *s)
{
	unsigned char a[16];
	char buf[256], *pct;
	size_t n = strlen(s), lab = 0;
	int numeric = 1;
	const char *p;

	if (!n)
		return "is empty";
	if (n > 253)
		return "is longer than 253 characters";
	if (strstr(s, "://"))
		return "is a URL: give the host alone";
	if (s[0] == '[')
		return "has brackets: give an IPv6 address without them";
	for (p = s; *p; p++)
		if (*p == ' ' || *p == '\t')
			return "has a blank in it";
	if (strchr(s, ':')) {
		if (strchr(s, ':') == strrchr(s, ':'))
			return "has a port: give it in \"port\"";
		snprintf(buf, sizeof(buf), "%s", s);
		pct = strchr(buf, '%');
		if (pct)
			*pct = '\0';
		if (inet_pton(AF_INET6, buf, a) == 1 && (!pct || pct[1]))
			return NULL;
		return "is not an IPv6 address";
	}
	for (p = s; *p; p++) {
		if (!(*p >= '0' && *p <= '9') && *p != '.')
			numeric = 0;
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
		      *p == '.'))
			return "has a character no host name has";
		if (*p != '.' && ++lab > 63)
			return "has a label longer than 63 characters";
		if (*p == '.') {
			/* one dot at the end: a rooted name */
			if (!lab && !(p[1] == '\0' && p != s))
				return "has an empty label";
			lab = 0;
		}
	}
	if (numeric && inet_pton(AF_INET, s, a) != 1)
		return "is not an IPv4 address (four numbers 0 to 255)";
	return NULL;
}

/* key's value, when there is one, must be a host (host_problem) */
static int check_host(struct ctx *c, const char *key, const char *v)
{
	const char *why = v ? host_problem(v) : NULL;

	return why ? fail(c, "\"%s\" \"%s\" %s", key, v, why) : 0;
}

/* A numeric group must be a multicast address (a name is looked up when
 * the probe runs). */
static int check_group(struct ctx *c, const char *g)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (check_host(c, "group", g))
		return -1;
	if ((inet_pton(AF_INET, g, &a4) == 1 &&
	     !IN_MULTICAST(ntohl(a4.s_addr))) ||
	    (inet_pton(AF_INET6, g, &a6) == 1 && !IN6_IS_ADDR_MULTICAST(&a6)))
		return fail(c, "\"group\" \"%s\" is not a multicast "
			    "address (224.0.0.0/4, ff00::/8)", g);
	return 0;
}

/* Every address of a family: "0.0.0.0", "::" or none given. */
static int wildcard(const char *bind)
{
	return !bind || !strcmp(bind, "0.0.0.0") || !strcmp(bind, "::");
}

/* The engines' defaults, as the library resolves them: a key left out
 * means what the engine would do with a zero. */
static struct evr_stream_opts stream_defaults(void)
{
	struct evr_stream_opts d = { 0 };

	evr_stream_opts_resolve(&d, &d);
	return d;
}

static struct evr_mcast_opts mcast_defaults(void)
{
	struct evr_mcast_opts d = { 0 };

	evr_mcast_opts_resolve(&d, &d);
	return d;
}

/* What an rstream probe runs before its keys: one custom test of its
 * kind (latency: round trips of one transfer; bandwidth: a train of
 * transfers in one iteration), as a host wants it run (-T a, 64 bytes
 * inline), with its latency's percentiles, and its plan sent (evrdma
 * servers run it, verify or not); the rest the engine's defaults (its
 * zeros). */
static struct evr_stream_opts probe_preset(int bandwidth)
{
	struct evr_stream_opts d = { 0 };

	d.io = EVR_IO_ASYNC;
	d.inline_size = 64;
	d.custom = 1;
	d.size = bandwidth ? 65536 : 64;
	d.count = bandwidth ? 100 : 1;
	d.iters = bandwidth ? 1 : 100;
	d.percentiles = 1;
	d.force_negotiate = 1;
	return d;
}

/* 'peer="V"' with \\ and " escaped, or NULL without memory */
static char *peer_label(const char *v)
{
	char *l = malloc(2 * strlen(v) + 8);
	size_t k;

	if (!l)
		return NULL;
	k = (size_t)sprintf(l, "peer=\"");
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			l[k++] = '\\';
		l[k++] = *v;
	}
	l[k++] = '"';
	l[k] = '\0';
	return l;
}

/* "peer": the host it probes, as the mesh's probes say it: the label
 * peer="NAME" on its series (the fabric's rules pair it with the host
 * that runs it) */
static int get_peer_label(struct ctx *c, json_t *o, struct probe_cfg *p)
{
	json_t *peer = json_object_get(o, "peer");
	const char *v;

	if (!peer)
		return 0;
	v = json_is_string(peer) ? json_string_value(peer) : NULL;
	if (!v || !v[0] || strlen(v) > PCONF_NAME_MAX || !name_ok(v))
		return fail(c, "\"peer\" must be a string of 1 to %d "
			    "bytes with no control character", PCONF_NAME_MAX);
	if (!(p->labels = peer_label(v)))
		return fail(c, "out of memory");
	return 0;
}

/* An rstream probe's server (host, required; port, transport) and its
 * bind address. */
static int get_rs_target(struct ctx *c, json_t *o, struct probe_cfg *p)
{
	const struct evr_stream_opts d = stream_defaults();
	const char *xports[MAX_WORDS];
	unsigned port;
	char pbuf[8];
	int x;

	ENUM_WORDS(xports, evr_stream_transport_name);
	if (!json_object_get(o, "host"))
		return fail(c, "\"host\" is required");
	if (get_str(c, o, "host", NULL, &p->host) ||
	    get_str(c, o, "bind", NULL, &p->bind) ||
	    check_host(c, "host", p->host) || check_host(c, "bind", p->bind) ||
	    get_port(c, o, "port", (unsigned)atoi(d.port), &port) ||
	    get_enum(c, o, "transport", xports, EVR_TRANSPORT_RDMA, &x))
		return -1;
	snprintf(pbuf, sizeof(pbuf), "%u", port);
	if (!(p->port = strdup(pbuf)))
		return fail(c, "out of memory");
	p->transport = (enum evr_stream_transport)x;
	return 0;
}

static int parse_rstream(struct ctx *c, json_t *o, struct probe_cfg *p)
{
	static const char *const keys[] = {
		"name", "type", "interval_s", "timeout_s", "host", "port",
		"bind", "transport", "kind", "peer", "exclusive", NULL,
	};
	static const char *const kinds[] = { "latency", "bandwidth", NULL };
	int kind;

	if (check_keys_of(c, o, keys, DK_PROBE) || get_rs_target(c, o, p) ||
	    get_enum(c, o, "kind", kinds, 0, &kind) ||
	    get_bool(c, o, "exclusive", 1, &p->exclusive))
		return -1;
	p->o = probe_preset(kind);
	if (get_opt_keys(c, o, DK_PROBE, &p->o) || get_peer_label(c, o, p))
		return -1;
	/* "negotiate": false speaks exactly upstream's wire */
	p->o.no_negotiate = !p->o.force_negotiate;
	return 0;
}

/* An mckey probe's group (required) and bind address, checked. */
static int get_mckey_addrs(struct ctx *c, json_t *o, struct probe_cfg *p)
{
	if (!json_object_get(o, "group"))
		return fail(c, "\"group\" is required");
	if (get_str(c, o, "group", NULL, &p->group) ||
	    get_str(c, o, "bind", NULL, &p->bind) ||
	    check_group(c, p->group) || check_host(c, "bind", p->bind))
		return -1;
	return 0;
}

static int parse_mckey(struct ctx *c, json_t *o, struct probe_cfg *p)
{
	static const char *const keys[] = {
		"name", "type", "interval_s", "timeout_s", "group", "bind",
		"transport", "role", "count", "size", "settle_s", "udp_port",
		NULL,
	};
	const struct evr_mcast_opts d = mcast_defaults();
	const char *xports[MAX_WORDS];
	static const char *const roles[] = { "receiver", "sender", NULL };
	unsigned long long count, size;
	int x, role;

	ENUM_WORDS(xports, evr_mc_transport_name);
	if (check_keys(c, o, keys))
		return -1;
	if (get_mckey_addrs(c, o, p) ||
	    get_enum(c, o, "transport", xports, 0, &x) ||
	    get_enum(c, o, "role", roles, 0, &role) ||
	    get_uint(c, o, "count", 0, 1000000, 10, &count) ||
	    get_uint(c, o, "size", 1, 65000, 100, &size) ||
	    get_num(c, o, "settle_s", 0, 60, 0.5, &p->settle_s) ||
	    get_port(c, o, "udp_port", d.udp_port, &p->udp_port))
		return -1;
	p->mc_transport = (enum evr_mc_transport)x;
	p->sender = role;
	p->mc_count = (unsigned)count;
	p->mc_size = (unsigned)size;
	return 0;
}

/* A probe's "name" (required): a string of 1 to PCONF_NAME_MAX bytes
 * (UTF-8: a character may take several) with no control character. */
static int check_probe_name(struct ctx *c, json_t *name)
{
	if (!name)
		return fail(c, "\"name\" is required");
	if (!json_is_string(name) || !json_string_value(name)[0] ||
	    strlen(json_string_value(name)) > PCONF_NAME_MAX ||
	    !name_ok(json_string_value(name)))
		return fail(c, "\"name\" must be a string of 1 to %d "
			    "bytes with no control character", PCONF_NAME_MAX);
	return 0;
}

static int parse_probe(struct ctx *c, json_t *o, size_t i,
		       struct probe_cfg *p)
{
	static const char *const types[] = { "rstream", "mckey", NULL };
	json_t *name;
	int type;

	snprintf(c->where, sizeof(c->where), "probes[%zu]", i);
	if (!json_is_object(o))
		return fail(c, "must be an object");
	name = json_object_get(o, "name");
	if (check_probe_name(c, name))
		return -1;
	snprintf(c->where, sizeof(c->where), "probes[%zu] (\"%s\")", i,
		 json_string_value(name));
	if (!json_object_get(o, "type"))
		return fail(c, "\"type\" is required");
	if (get_enum(c, o, "type", types, 0, &type))
		return -1;
	if (!(p->name = strdup(json_string_value(name))))
		return fail(c, "out of memory");
	p->type = type;
	if (get_num(c, o, "interval_s", 0.1, 86400, 10, &p->interval_s) ||
	    get_num(c, o, "timeout_s", 0.1, 3600, 5, &p->timeout_s))
		return -1;
	if (type == PROBE_RSTREAM ? parse_rstream(c, o, p) :
				    parse_mckey(c, o, p))
		return -1;
	p->raw = json_incref(o);
	return 0;
}

/* A responder's transport, port (both required: no defaults for what a
 * peer must know to reach it) and bind address. */
static int get_resp_listener(struct ctx *c, json_t *o,
			     struct responder_cfg *r)
{
	const char *xports[MAX_WORDS];
	int x;

	ENUM_WORDS(xports, evr_stream_transport_name);
	if (!json_object_get(o, "transport"))
		return fail(c, "\"transport\" is required");
	if (!json_object_get(o, "port"))
		return fail(c, "\"port\" is required");
	if (get_enum(c, o, "transport", xports, 0, &x) ||
	    get_port(c, o, "port", 0, &r->port) ||
	    get_str(c, o, "bind", NULL, &r->bind))
		return -1;
	r->transport = (enum evr_stream_transport)x;
	return 0;
}

/* What a responder serves with before its keys: the engine's defaults
 * (its zeros; max_conns' and max_memory's are responder.c's), and, for a
 * client that sends no plan, rstream's series, or a test of 64 bytes, one
 * a round trip, 100 round trips, as far as the keys that make it custom
 * do not say. */
static struct evr_stream_opts responder_preset(void)
{
	struct evr_stream_opts d = { 0 };

	d.size = 64;
	d.count = 1;
	d.iters = 100;
	return d;
}

/* A responder's bind address, if any: printable, and a usable host. */
static int check_resp_bind(struct ctx *c, const char *bind)
{
	if (bind && !name_ok(bind))
		return fail(c, "\"bind\" must be printable");
	return check_host(c, "bind", bind);
}

/* A responder's label, transport:address:port, which names it in the
 * metrics and tells two responders apart. */
static int resp_label(struct ctx *c, struct responder_cfg *r)
{
	char buf[300];

	snprintf(buf, sizeof(buf), strchr(r->bind ? r->bind : "", ':') ?
		 "%s:[%s]:%u" : "%s:%s:%u",
		 evr_stream_transport_name(r->transport),
		 r->bind ? r->bind : "*", r->port);
	if (!(r->label = strdup(buf)))
		return fail(c, "out of memory");
	return 0;
}

static int parse_responder(struct ctx *c, json_t *o, size_t i,
			   struct responder_cfg *r)
{
	static const char *const keys[] = {
		"transport", "port", "bind", NULL,
	};

	snprintf(c->where, sizeof(c->where), "responders[%zu]", i);
	if (!json_is_object(o))
		return fail(c, "must be an object");
	if (check_keys_of(c, o, keys, DK_RESP))
		return -1;
	r->o = responder_preset();
	if (get_resp_listener(c, o, r) || get_opt_keys(c, o, DK_RESP, &r->o) ||
	    check_resp_bind(c, r->bind) || resp_label(c, r))
		return -1;
	r->raw = json_incref(o);
	return 0;
}

static void responder_cfg_fini(struct responder_cfg *r)
{
	free(r->label);
	free(r->bind);
	json_decref(r->raw);
}

void pconf_probe_fini(struct probe_cfg *p)
{
	free(p->name);
	free(p->host);
	free(p->port);
	free(p->bind);
	free(p->group);
	free(p->labels);
	free(p->peer);
	json_decref(p->raw);
	memset(p, 0, sizeof(*p));
}

static int dup_or_null(char **dst, const char *src)
{
	*dst = NULL;
	return src && !(*dst = strdup(src)) ? -ENOMEM : 0;
}

int pconf_probe_copy(struct probe_cfg *dst, const struct probe_cfg *src)
{
	*dst = *src;
	dst->raw = json_incref(src->raw);
	if (dup_or_null(&dst->name, src->name) |
	    dup_or_null(&dst->host, src->host) |
	    dup_or_null(&dst->port, src->port) |
	    dup_or_null(&dst->bind, src->bind) |
	    dup_or_null(&dst->group, src->group) |
	    dup_or_null(&dst->labels, src->labels) |
	    dup_or_null(&dst->peer, src->peer)) {
		pconf_probe_fini(dst);
		return -ENOMEM;
	}
	return 0;
}

/* The keys of a probe that are each peer's (from the peers file), which
 * "mesh" must not have. */
static int refuse_peer_keys(struct ctx *c, json_t *o)
{
	static const char *const own[] = { "name", "type", "host", NULL };
	int i;

	for (i = 0; own[i]; i++)
		if (json_object_get(o, own[i]))
			return fail(c, "unknown key \"%s\" (each peer's, "
				    "from the peers file)", own[i]);
	return 0;
}

/* The mesh's own keys: peers_file (required), sample, group_by and
 * across. */
static int get_mesh_keys(struct ctx *c, json_t *o, struct mesh_cfg *m)
{
	unsigned long long sample, across;

	if (!json_object_get(o, "peers_file"))
		return fail(c, "\"peers_file\" is required");
	if (get_str(c, o, "peers_file", NULL, &m->peers_file) ||
	    get_uint(c, o, "sample", 1, MESH_SAMPLE_MAX, 0, &sample) ||
	    get_str(c, o, "group_by", NULL, &m->group_by) ||
	    get_uint(c, o, "across", 0, MESH_ACROSS_MAX, 1, &across))
		return -1;
	m->sample = (unsigned)sample;
	m->across = (unsigned)across;
	return 0;
}

/* group_by, if given, is a label a peers file can have; across needs
 * it. */
static int check_group_by(struct ctx *c, json_t *o, const struct mesh_cfg *m)
{
	if (m->group_by && !mesh_label_name_ok(m->group_by,
					       strlen(m->group_by)))
		return fail(c, "\"group_by\": \"%s\" is not a label a peers "
			    "file can have ([a-zA-Z_][a-zA-Z0-9_]*, not __*, "
			    "none of the daemon's own)", m->group_by);
	if (!m->group_by && json_object_get(o, "across"))
		return fail(c, "\"across\" without \"group_by\"");
	return 0;
}

/* A copy of "mesh" o as an rstream probe's keys: without the mesh's own
 * keys, with "host" "peer"; NULL without memory. */
static json_t *tmpl_json(json_t *o, const struct mesh_cfg *m)
{
	json_t *t = json_deep_copy(o);

	if (t && (json_object_del(t, "peers_file") ||
		  (m->sample && json_object_del(t, "sample")) ||
		  (m->group_by && json_object_del(t, "group_by")) ||
		  (json_object_get(t, "across") &&
		   json_object_del(t, "across")) ||
		  json_object_set_new(t, "host", json_string("peer")))) {
		json_decref(t);
		return NULL;
	}
	return t;
}

/* The peers' probe p, an rstream probe named "mesh", from the keys t. */
static int parse_tmpl(struct ctx *c, json_t *t, struct probe_cfg *p)
{
	p->type = PROBE_RSTREAM;
	if (!(p->name = strdup("mesh")))
		return fail(c, "out of memory");
	if (get_num(c, t, "interval_s", 0.1, 86400, 10, &p->interval_s) ||
	    get_num(c, t, "timeout_s", 0.1, 3600, 5, &p->timeout_s) ||
	    parse_rstream(c, t, p))
		return -1;
	return 0;
}

/* "mesh": the keys of an rstream probe but its name, type and host (the
 * peers'), and peers_file. */
static int parse_mesh(struct ctx *c, json_t *o, struct mesh_cfg *m)
{
	json_t *t;
	int ret;

	snprintf(c->where, sizeof(c->where), "mesh");
	if (!json_is_object(o))
		return fail(c, "must be an object");
	if (refuse_peer_keys(c, o) || get_mesh_keys(c, o, m) ||
	    check_group_by(c, o, m))
		return -1;
	t = tmpl_json(o, m);
	if (!t)
		return fail(c, "out of memory");
	ret = parse_tmpl(c, t, &m->tmpl);
	json_decref(t);
	if (ret)
		return -1;
	m->raw = json_incref(o);
	return 0;
}

/* "http": the limits of /metrics' connections (hguard.h) */
static int parse_http(struct ctx *c, json_t *o, struct http_limits *l)
{
	static const char *const keys[] = {
		"max_connections", "max_connections_per_ip",
		"request_timeout_s", NULL,
	};
	unsigned long long max, per_ip;

	snprintf(c->where, sizeof(c->where), "http");
	if (!o) {
		l->max_conns = HTTP_DEFAULT_MAX_CONNS;
		l->max_per_ip = HTTP_DEFAULT_MAX_PER_IP;
		l->request_timeout_s = HTTP_DEFAULT_REQUEST_TIMEOUT_S;
		c->where[0] = '\0';
		return 0;
	}
	if (!json_is_object(o))
		return fail(c, "must be an object");
	if (check_keys(c, o, keys) ||
	    get_uint(c, o, "max_connections", 1, HTTP_MAX_CONNS_MAX,
		     HTTP_DEFAULT_MAX_CONNS, &max) ||
	    get_uint(c, o, "max_connections_per_ip", 1, HTTP_MAX_CONNS_MAX,
		     HTTP_DEFAULT_MAX_PER_IP, &per_ip) ||
	    get_num(c, o, "request_timeout_s", 0.1, 300,
		    HTTP_DEFAULT_REQUEST_TIMEOUT_S, &l->request_timeout_s))
		return -1;
	/* the default per address under a smaller total: the total */
	if (!json_object_get(o, "max_connections_per_ip") && per_ip > max)
		per_ip = max;
	if (per_ip > max)
		return fail(c, "\"max_connections_per_ip\" is %llu, more than "
			    "\"max_connections\" (%llu)", per_ip, max);
	l->max_conns = (unsigned)max;
	l->max_per_ip = (unsigned)per_ip;
	c->where[0] = '\0';
	return 0;
}

/* "status": the status page's runs and its cells' bounds */
static int parse_status(struct ctx *c, json_t *o, struct status_cfg *st)
{
	static const char *const keys[] = {
		"runs", "p99_ok_us", "p99_warn_us", "loss_bad", NULL,
	};
	unsigned long long runs;

	snprintf(c->where, sizeof(c->where), "status");
	if (o && !json_is_object(o))
		return fail(c, "must be an object");
	if (o && check_keys(c, o, keys))
		return -1;
	if (get_uint(c, o, "runs", 0, RUNRING_MAX, PCONF_STATUS_RUNS, &runs) ||
	    get_num(c, o, "p99_ok_us", 0, 1e7, PCONF_STATUS_P99_OK_US,
		    &st->p99_ok_us) ||
	    get_num(c, o, "p99_warn_us", 0, 1e7, PCONF_STATUS_P99_WARN_US,
		    &st->p99_warn_us) ||
	    get_num(c, o, "loss_bad", 0, 1, PCONF_STATUS_LOSS_BAD,
		    &st->loss_bad))
		return -1;
	if (st->p99_warn_us < st->p99_ok_us)
		return fail(c, "\"p99_warn_us\" is %g, less than \"p99_ok_us\" "
			    "(%g)", st->p99_warn_us, st->p99_ok_us);
	st->runs = (unsigned)runs;
	c->where[0] = '\0';
	return 0;
}

void pconf_free(struct pconf *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nprobes; i++)
		pconf_probe_fini(&c->probes[i]);
	free(c->probes);
	for (i = 0; i < c->nresponders; i++)
		responder_cfg_fini(&c->responders[i]);
	free(c->responders);
	if (c->mesh) {
		free(c->mesh->peers_file);
		free(c->mesh->group_by);
		pconf_probe_fini(&c->mesh->tmpl);
		json_decref(c->mesh->raw);
		free(c->mesh);
	}
	free(c->listen_addr);
	free(c);
}

/* A configuration is a small regular file: a directory, a FIFO or a
 * device (/dev/zero would be read for ever) is named as what it is. */
#define PCONF_MAX_BYTES (1u << 20)

/* The size of file, open as fd, if it is one to read as a configuration
 * (0); -1 with err saying what it is if not. */
static int conf_file_size(int fd, const char *file, size_t *size, char *err,
			  size_t len)
{
	struct stat sb;

	if (fstat(fd, &sb)) {
		snprintf(err, len, "%s: %s", file, strerror(errno));
	} else if (S_ISDIR(sb.st_mode)) {
		snprintf(err, len, "%s: is a directory, not a configuration "
			 "file", file);
	} else if (!S_ISREG(sb.st_mode)) {
		snprintf(err, len, "%s: not a regular file", file);
	} else if (sb.st_size > PCONF_MAX_BYTES) {
		snprintf(err, len, "%s: %lld bytes, more than a configuration "
			 "may have (%u)", file, (long long)sb.st_size,
			 PCONF_MAX_BYTES);
	} else {
		*size = (size_t)sb.st_size;
		return 0;
	}
	return -1;
}

/* The JSON in fd, of size bytes when it was looked at: NULL with err
 * saying why if it cannot be read or parsed. */
static json_t *read_conf(int fd, const char *file, size_t size,
			 json_error_t *jerr, char *err, size_t len)
{
	json_t *root = NULL;
	size_t got = 0;
	ssize_t n;
	char *buf;

	if (!(buf = malloc(size + 1))) {
		snprintf(err, len, "%s: %s", file, strerror(ENOMEM));
		return NULL;
	}
	/* the file may change under us: read what is there, bounded */
	while (got <= size && (n = read(fd, buf + got, size + 1 - got)) > 0)
		got += (size_t)n;
	if (n < 0) {
		snprintf(err, len, "%s: %s", file, strerror(errno));
	} else {
		root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, jerr);
		if (!root && jerr->line > 0)
			snprintf(err, len, "%s:%d:%d: %s", file, jerr->line,
				 jerr->column, jerr->text);
		else if (!root)
			snprintf(err, len, "%s: %s", file, jerr->text);
	}
	free(buf);
	return root;
}

static json_t *load_file(const char *file, json_error_t *jerr, char *err,
			 size_t len)
{
	json_t *root = NULL;
	size_t size;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, len, "%s: %s", file, strerror(errno));
		return NULL;
	}
	if (!conf_file_size(fd, file, &size, err, len))
		root = read_conf(fd, file, size, jerr, err, len);
	close(fd);
	return root;
}

/* Responder r listens on the daemon's own HTTP port (listen_port), on
 * its address or on every address: a transport on the kernel's TCP
 * ports. */
static int takes_http_port(const struct pconf *conf,
			   const struct responder_cfg *r)
{
	return (evr_stream_transport_caps(r->transport) &
		EVR_TRANSPORT_CAP_KERNEL_PORT) &&
	       r->port == conf->listen_port &&
	       (wildcard(r->bind) || wildcard(conf->listen_addr) ||
		!strcmp(r->bind, conf->listen_addr));
}

/* Responder i against the ones before it and the daemon's own HTTP
 * port: one listener per transport, address and port, and one on every
 * address takes the port from any other (listen() would fail, and the
 * daemon retry every 5 s for ever). */
static int resp_clash(struct ctx *c, const struct pconf *conf, size_t i)
{
	const struct responder_cfg *r = &conf->responders[i], *o;
	size_t j;

	if (takes_http_port(conf, r))
		return fail(c, "\"port\" %u is the daemon's own HTTP port "
			    "(listen_port) on %s", r->port,
			    wildcard(r->bind) ? "every address" : r->bind);
	for (j = 0; j < i; j++) {
		o = &conf->responders[j];
		if (!strcmp(o->label, r->label))
			return fail(c, "the same transport, bind and port as "
				    "responders[%zu]", j);
		if (o->transport == r->transport && o->port == r->port &&
		    (wildcard(o->bind) || wildcard(r->bind)))
			return fail(c, "port %u is taken by responders[%zu], "
				    "one of them on every address", r->port,
				    j);
	}
	return 0;
}

int pconf_load(struct pconf **out, const char *file, char *err, size_t len)
{
	static const char *const keys[] = {
		"listen_address", "listen_port", "probes", "responders", "mesh",
		"dns_cache_s", "dns_negative_cache_s", "dns_timeout_s",
		"http", "status", NULL,
	};
	struct ctx c = { .file = file, .err = err, .len = len };
	struct pconf *conf = NULL;
	json_error_t jerr;
	json_t *root, *probes, *resp, *mesh;
	size_t i, j;
	int ret = -1;

	*out = NULL;
	root = load_file(file, &jerr, err, len);
	if (!root)
		return -1;
	if (!json_is_object(root)) {
		fail(&c, "the top level must be an object");
		goto out;
	}
	if (check_keys(&c, root, keys))
		goto out;
	conf = calloc(1, sizeof(*conf));
	if (!conf) {
		fail(&c, "out of memory");
		goto out;
	}
	if (get_str(&c, root, "listen_address", PCONF_DEFAULT_ADDR,
		    &conf->listen_addr) ||
	    check_host(&c, "listen_address", conf->listen_addr) ||
	    get_port(&c, root, "listen_port", PCONF_DEFAULT_PORT,
		     &conf->listen_port) ||
	    get_num(&c, root, "dns_cache_s", 0, 86400, PCONF_DNS_CACHE_S,
		    &conf->dns.cache_s) ||
	    get_num(&c, root, "dns_negative_cache_s", 0, 3600,
		    PCONF_DNS_NEGATIVE_S, &conf->dns.negative_s) ||
	    get_num(&c, root, "dns_timeout_s", 0.1, 60, PCONF_DNS_TIMEOUT_S,
		    &conf->dns.timeout_s) ||
	    parse_http(&c, json_object_get(root, "http"), &conf->http) ||
	    parse_status(&c, json_object_get(root, "status"), &conf->status))
		goto out;
	probes = json_object_get(root, "probes");
	if (probes && !json_is_array(probes)) {
		fail(&c, "\"probes\" must be an array");
		goto out;
	}
	if (probes && json_array_size(probes)) {
		conf->probes = calloc(json_array_size(probes),
				      sizeof(*conf->probes));
		if (!conf->probes) {
			fail(&c, "out of memory");
			goto out;
		}
	}
	for (i = 0; probes && i < json_array_size(probes); i++) {
		conf->nprobes = i + 1;
		if (parse_probe(&c, json_array_get(probes, i), i,
				&conf->probes[i]))
			goto out;
		for (j = 0; j < i; j++)
			if (!strcmp(conf->probes[j].name,
				    conf->probes[i].name)) {
				fail(&c, "\"name\" is already used by "
				     "probes[%zu]", j);
				goto out;
			}
	}
	c.where[0] = '\0';
	resp = json_object_get(root, "responders");
	if (resp && !json_is_array(resp)) {
		fail(&c, "\"responders\" must be an array");
		goto out;
	}
	if (resp && json_array_size(resp)) {
		conf->responders = calloc(json_array_size(resp),
					  sizeof(*conf->responders));
		if (!conf->responders) {
			fail(&c, "out of memory");
			goto out;
		}
	}
	for (i = 0; resp && i < json_array_size(resp); i++) {
		conf->nresponders = i + 1;
		if (parse_responder(&c, json_array_get(resp, i), i,
				    &conf->responders[i]))
			goto out;
		if (resp_clash(&c, conf, i))
			goto out;
	}
	mesh = json_object_get(root, "mesh");
	if (mesh) {
		conf->mesh = calloc(1, sizeof(*conf->mesh));
		if (!conf->mesh) {
			fail(&c, "out of memory");
			goto out;
		}
		if (parse_mesh(&c, mesh, conf->mesh))
			goto out;
	}
	*out = conf;
	conf = NULL;
	ret = 0;
out:
	pconf_free(conf);
	json_decref(root);
	return ret;
}

int pconf_probe_equal(const struct probe_cfg *a, const struct probe_cfg *b)
{
	return json_equal(a->raw, b->raw);
}

int pconf_responder_equal(const struct responder_cfg *a,
			  const struct responder_cfg *b)
{
	return json_equal(a->raw, b->raw);
}
