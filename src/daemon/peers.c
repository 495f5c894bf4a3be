/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The mesh's peers file (peers.h): read and checked as a whole, all good
 * or refused (mesh_load()), a line at a time (mesh_parse_line(): name,
 * address, labels), this host's own lines set apart, then the peers this
 * host probes chosen by group_by and across (mesh_select()).  No probe,
 * timer or loop here: mesh.c runs the mesh a good read gives.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peers.h"

static const char *const reserved[] = {
	"probe", "peer", "reason", "le", "quantile", "check", "responder",
	NULL,
};

/* s[0..n) is one of the labels the daemon's own metrics have. */
static int reserved_name(const char *s, size_t n)
{
	size_t i;

	for (i = 0; reserved[i]; i++)
		if (strlen(reserved[i]) == n && !strncmp(reserved[i], s, n))
			return 1;
	return 0;
}

static int label_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || (!isalpha((unsigned char)s[0]) && s[0] != '_'))
		return 0;
	if (n >= 2 && s[0] == '_' && s[1] == '_')
		return 0; /* Prometheus keeps those for itself */
	for (i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return !reserved_name(s, n);
}

int mesh_label_name_ok(const char *name, size_t n)
{
	return label_name_ok(name, n);
}

/* A UTF-8 sequence's first byte *c: the bytes that follow (*need), its
 * own bits of the code point (*c) and the least code point a sequence
 * this long may have (*min); 0 if it starts no sequence. */
static int utf8_lead(unsigned long *c, size_t *need, unsigned long *min)
{
	if ((*c & 0xe0) == 0xc0)
		*need = 1, *c &= 0x1f, *min = 0x80;
	else if ((*c & 0xf0) == 0xe0)
		*need = 2, *c &= 0x0f, *min = 0x800;
	else if ((*c & 0xf8) == 0xf0)
		*need = 3, *c &= 0x07, *min = 0x10000;
	else
		return 0;
	return 1;
}

/* The need continuation bytes at s, their bits appended to *c; 0 if one
 * of them is not a continuation byte. */
static int utf8_more(const unsigned char *s, size_t need, unsigned long *c)
{
	size_t k;

	for (k = 0; k < need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		*c = *c << 6 | (s[k] & 0x3f);
	}
	return 1;
}

/* s[0..n) is UTF-8 (Prometheus refuses a scrape with a label value that
 * is not): no overlong form, no surrogate, nothing above U+10FFFF. */
static int utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0, need;
	unsigned long c, min;

	while (i < n) {
		c = s[i++];
		if (c < 0x80)
			continue;
		if (!utf8_lead(&c, &need, &min) || n - i < need ||
		    !utf8_more(s + i, need, &c))
			return 0;
		i += need;
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
	}
	return 1;
}

/* Append name="value" (value escaped) to buf at *pos; -1 if it is full. */
static int put_label(char *buf, size_t len, size_t *pos, const char *name,
		     size_t nlen, const char *v, size_t vlen)
{
	size_t i;
	int n;

	n = snprintf(buf + *pos, len - *pos, "%s%.*s=\"", *pos ? "," : "",
		     (int)nlen, name);
	if (n < 0 || (size_t)n >= len - *pos)
		return -1;
	*pos += (size_t)n;
	for (i = 0; i < vlen; i++) {
		if (*pos + 3 >= len)
			return -1;
		if (v[i] == '\\' || v[i] == '"')
			buf[(*pos)++] = '\\';
		buf[(*pos)++] = v[i];
	}
	if (*pos + 2 >= len)
		return -1;
	buf[(*pos)++] = '"';
	buf[*pos] = '\0';
	return 0;
}

int mesh_parse_line(const char *line, char **name, char **addr,
		    char **labels, char *err, size_t len)
{
	const char *tok[2 + MESH_MAX_LABELS], *p = line;
	size_t tl[2 + MESH_MAX_LABELS], ntok = 0, i, j, pos = 0;
	char lb[2048];

	*name = *addr = *labels = NULL;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p || *p == '#' || *p == '\n')
			break;
		if (ntok == 2 + MESH_MAX_LABELS) {
			snprintf(err, len, "more than %d labels",
				 MESH_MAX_LABELS);
			return -1;
		}
		tok[ntok] = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r' &&
		       *p != '\n' && *p != '#')
			p++;
		tl[ntok] = (size_t)(p - tok[ntok]);
		ntok++;
	}
	if (!ntok)
		return 1;
	for (i = 0; i < ntok; i++)
		for (j = 0; j < tl[i]; j++)
			if ((unsigned char)tok[i][j] < 0x20 ||
			    tok[i][j] == 0x7f) {
				snprintf(err, len, "a control character");
				return -1;
			}
	for (i = 0; i < ntok; i++)
		if (!utf8_ok((const unsigned char *)tok[i], tl[i])) {
			snprintf(err, len, "not UTF-8 text");
			return -1;
		}
	if (ntok < 2) {
		snprintf(err, len, "a peer is NAME ADDRESS [KEY=VALUE ...]");
		return -1;
	}
	if (tl[0] > PCONF_NAME_MAX) {
		snprintf(err, len, "a name longer than %d characters",
			 PCONF_NAME_MAX);
		return -1;
	}
	if (tl[1] > 255) {
		snprintf(err, len, "an address longer than 255 characters");
		return -1;
	}
	put_label(lb, sizeof(lb), &pos, "peer", 4, tok[0], tl[0]);
	for (i = 2; i < ntok; i++) {
		const char *eq = memchr(tok[i], '=', tl[i]);
		size_t nl = eq ? (size_t)(eq - tok[i]) : 0;

		if (!eq) {
			snprintf(err, len, "\"%.*s\" is not KEY=VALUE",
				 (int)tl[i], tok[i]);
			return -1;
		}
		if (!label_name_ok(tok[i], nl)) {
			snprintf(err, len, "\"%.*s\" is not a usable label "
				 "name ([a-zA-Z_][a-zA-Z0-9_]*, not __*, none "
				 "of the daemon's own)", (int)nl, tok[i]);
			return -1;
		}
		for (j = 2; j < i; j++)
			if (!strncmp(tok[j], tok[i], nl + 1)) {
				snprintf(err, len, "label \"%.*s\" given "
					 "twice", (int)nl, tok[i]);
				return -1;
			}
		if (put_label(lb, sizeof(lb), &pos, tok[i], nl, eq + 1,
			      tl[i] - nl - 1)) {
			snprintf(err, len, "the labels are too long");
			return -1;
		}
	}
	*name = strndup(tok[0], tl[0]);
	*addr = strndup(tok[1], tl[1]);
	*labels = strdup(lb);
	if (!*name || !*addr || !*labels) {
		free(*name);
		free(*addr);
		free(*labels);
		*name = *addr = *labels = NULL;
		snprintf(err, len, "out of memory");
		return -1;
	}
	return 0;
}

/* addr is one of the addresses of ifs (numeric addresses only). */
static int addr_in(const struct ifaddrs *ifs, const char *addr)
{
	unsigned char a[sizeof(struct in6_addr)];
	const struct ifaddrs *i;
	int fam, local = 0;

	if (inet_pton(AF_INET, addr, a) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, addr, a) == 1)
		fam = AF_INET6;
	else
		return 0; /* a name: resolving it here would block the loop */
	for (i = ifs; i && !local; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
			continue;
		if (fam == AF_INET)
			local = !memcmp(&((struct sockaddr_in *)(void *)
					  i->ifa_addr)->sin_addr, a, 4);
		else
			local = !memcmp(&((struct sockaddr_in6 *)(void *)
					  i->ifa_addr)->sin6_addr, a, 16);
	}
	return local;
}

int mesh_addr_is_local(const char *addr)
{
	struct ifaddrs *ifs;
	int local;

	if (getifaddrs(&ifs))
		return 0;
	local = addr_in(ifs, addr);
	freeifaddrs(ifs);
	return local;
}

/* The file, bounded, NUL-terminated, its length in *got (it may hold
 * NULs of its own); NULL with errno. */
static char *slurp(const char *path, size_t *gotp)
{
	struct stat sb;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb))
		goto out;
	if (!S_ISREG(sb.st_mode) || sb.st_size > MESH_FILE_MAX) {
		errno = S_ISREG(sb.st_mode) ? EFBIG : EINVAL;
		goto out;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf)
		goto out;
	while (got < (size_t)sb.st_size &&
	       (n = read(fd, buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)n;
	if (n < 0) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[got] = '\0';
	*gotp = got;
out:
	close(fd);
	return buf;
}

static const char *slurp_error(int err)
{
	if (err == EINVAL)
		return "not a regular file";
	if (err == EFBIG)
		return "larger than 1 MiB";
	return strerror(err);
}

void mesh_list_free(struct mesh_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->e[i].name);
		free(l->e[i].addr);
		free(l->e[i].labels);
	}
	free(l->e);
	l->e = NULL;
	l->n = 0;
	free(l->self_name);
	free(l->self_labels);
	l->self_name = l->self_labels = NULL;
}

struct loader {
	const char *path;
	mesh_say_fn *say;
	void *ud;
	struct mesh_list *l;
};

static void bad_line(struct loader *ld, unsigned lineno, const char *why)
{
	char msg[512];

	if (ld->l->bad++ < MESH_REPORT_MAX) {
		snprintf(msg, sizeof(msg), "%s:%u: %s", ld->path, lineno, why);
		ld->say(ld->ud, msg);
	}
}

static int by_name(const void *a, const void *b)
{
	const struct mesh_entry *x = *(const struct mesh_entry *const *)a;
	const struct mesh_entry *y = *(const struct mesh_entry *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->lineno > y->lineno) - (x->lineno < y->lineno);
}

/* A name listed twice: each line after its first is bad.  Sorted, so
 * that MESH_PEERS_MAX peers cost n log n, not n^2. */
static int dups(struct loader *ld)
{
	struct mesh_list *l = ld->l;
	struct mesh_entry **s;
	unsigned char *dup;
	char why[PCONF_NAME_MAX + 40];
	size_t i;

	if (l->n < 2)
		return 0;
	s = malloc(l->n * sizeof(*s));
	dup = calloc(l->n, 1);
	if (!s || !dup) {
		free(s);
		free(dup);
		return -ENOMEM;
	}
	for (i = 0; i < l->n; i++)
		s[i] = &l->e[i];
	qsort(s, l->n, sizeof(*s), by_name);
	for (i = 1; i < l->n; i++)
		if (!strcmp(s[i - 1]->name, s[i]->name))
			dup[s[i] - l->e] = 1;
	for (i = 0; i < l->n; i++)
		if (dup[i]) {
			snprintf(why, sizeof(why), "peer \"%s\" is listed twice",
				 l->e[i].name);
			bad_line(ld, l->e[i].lineno, why);
		}
	free(s);
	free(dup);
	return 0;
}

/* This host's line (its address is one of this host's): of several,
 * the least name (whatever their order) names this host. */
static void own_line(struct mesh_list *l, char *name, char *addr,
		     char *labels)
{
	l->own++;
	free(addr);
	if (!l->self_name || strcmp(name, l->self_name) < 0) {
		free(l->self_name);
		free(l->self_labels);
		l->self_name = name;
		l->self_labels = labels;
	} else {
		free(name);
		free(labels);
	}
}

/* A peer's line into l: past MESH_PEERS_MAX, only counted. */
static int add_peer(struct mesh_list *l, char *name, char *addr,
		    char *labels, unsigned lineno)
{
	struct mesh_entry *e;

	l->listed++;
	if (l->n == MESH_PEERS_MAX) {
		free(name);
		free(addr);
		free(labels);
		return 0; /* counted: refused as too many at the end */
	}
	/* n is 0 or a power of two: the array is full, double it */
	if (!(l->n & (l->n - 1))) {
		e = realloc(l->e, (l->n ? 2 * l->n : 1) * sizeof(*e));
		if (!e) {
			free(name);
			free(addr);
			free(labels);
			return -ENOMEM;
		}
		l->e = e;
	}
	l->e[l->n].name = name;
	l->e[l->n].addr = addr;
	l->e[l->n].labels = labels;
	l->e[l->n].lineno = lineno;
	l->n++;
	return 0;
}

/* One line (len bytes at p, not terminated): a peer into l, or bad. */
static int load_line(struct loader *ld, const struct ifaddrs *ifs,
		     char *p, size_t len, unsigned lineno)
{
	struct mesh_list *l = ld->l;
	char *name, *addr, *labels, err[256], save;
	int r;

	if (memchr(p, '\0', len)) {
		/* a peer line all the same: it does not go unnoticed */
		l->listed++;
		bad_line(ld, lineno, "a NUL byte (not a text file)");
		return 0;
	}
	if (len > MESH_LINE_MAX) {
		l->listed++;
		bad_line(ld, lineno, "a line longer than 4096 bytes");
		return 0;
	}
	save = p[len];
	p[len] = '\0';
	r = mesh_parse_line(p, &name, &addr, &labels, err, sizeof(err));
	p[len] = save;
	if (r > 0)
		return 0;
	if (r < 0) {
		l->listed++;
		bad_line(ld, lineno, err);
		return 0;
	}
	if (addr_in(ifs, addr)) {
		own_line(l, name, addr, labels);
		return 0;
	}
	return add_peer(l, name, addr, labels, lineno);
}

/* Every line of buf (size bytes, the file) through load_line(): 0, or
 * -ENOMEM. */
static int load_lines(struct loader *ld, char *buf, size_t size)
{
	struct ifaddrs *ifs = NULL;
	size_t left, ll;
	unsigned lineno = 0;
	char *p, *nl;
	int r = 0;

	if (getifaddrs(&ifs))
		ifs = NULL; /* no address is this host's */
	for (p = buf, left = size; left && !r; ) {
		nl = memchr(p, '\n', left);
		ll = nl ? (size_t)(nl - p) : left;
		r = load_line(ld, ifs, p, ll, ++lineno);
		p += ll + !!nl;
		left -= ll + !!nl;
	}
	if (ifs)
		freeifaddrs(ifs);
	return r;
}

/* This host not in the file: its host name seeds its choices. */
static int self_from_host(struct mesh_list *l)
{
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	if (!(l->self_name = strdup(host)))
		return -ENOMEM;
	return 0;
}

/* What is wrong with the list l read from path, in err (-1), r being
 * what loading it returned; 0 if nothing is. */
static int list_problem(const char *path, const struct mesh_list *l, int r,
			char *err, size_t len)
{
	if (r) {
		snprintf(err, len, "mesh: %s: out of memory", path);
	} else if (l->bad) {
		snprintf(err, len, "mesh: %s: %zu bad line%s%s", path, l->bad,
			 l->bad == 1 ? "" : "s", l->bad > MESH_REPORT_MAX ?
			 " (the first 10 named)" : "");
	} else if (l->listed > MESH_PEERS_MAX) {
		snprintf(err, len, "mesh: %s: %zu peers, more than %d", path,
			 l->listed, MESH_PEERS_MAX);
	} else if (!l->listed && !l->own) {
		snprintf(err, len, "mesh: %s: lists no peer (without a mesh, "
			 "the configuration has no \"mesh\")", path);
	} else {
		return 0;
	}
	return -1;
}

static int load_sel(const char *path, const struct mesh_cfg *cfg,
		    struct mesh_list *l, mesh_say_fn *say, void *ud, char *err,
		    size_t len)
{
	struct loader ld = { path, say, ud, l };
	size_t size;
	char *buf;
	int r;

	memset(l, 0, sizeof(*l));
	buf = slurp(path, &size);
	if (!buf) {
		snprintf(err, len, "mesh: %s: %s", path, slurp_error(errno));
		return -1;
	}
	l->read = 1;
	r = load_lines(&ld, buf, size);
	free(buf);
	if (!r)
		r = dups(&ld);
	l->selected = l->listed;
	if (!r && !l->self_labels)
		r = self_from_host(l);
	if (!r && cfg && cfg->group_by)
		r = mesh_select(l, cfg->group_by, cfg->across);
	if (!list_problem(path, l, r, err, len))
		return 0;
	mesh_list_free(l);
	return -1;
}

int mesh_load(const char *path, struct mesh_list *l, mesh_say_fn *say,
	      void *ud, char *err, size_t len)
{
	return load_sel(path, NULL, l, say, ud, err, len);
}

int mesh_load_cfg(const struct mesh_cfg *cfg, struct mesh_list *l,
		  mesh_say_fn *say, void *ud, char *err, size_t len)
{
	return load_sel(cfg->peers_file, cfg, l, say, ud, err, len);
}

/* ---- the selection (mesh_select()) ---- */

/* The end of the escaped value at q: its closing quote, or the string's
 * end if it has none. */
static const char *value_end(const char *q)
{
	while (*q && *q != '"')
		q += q[0] == '\\' && q[1] ? 2 : 1;
	return q;
}

/* The value of label key in labels ('peer="NAME",k="v"', escaped): the
 * escaped text, which is one to one with the value; "" if absent. */
static void label_value(const char *labels, const char *key,
			const char **v, size_t *vl)
{
	size_t kl = strlen(key);
	const char *p = labels, *eq, *q;

	*v = "";
	*vl = 0;
	while (p && *p) {
		eq = strchr(p, '=');
		if (!eq || eq[1] != '"')
			return;
		q = value_end(eq + 2);
		if ((size_t)(eq - p) == kl && !strncmp(p, key, kl)) {
			*v = eq + 2;
			*vl = (size_t)(q - (eq + 2));
			return;
		}
		if (!*q)
			return;
		p = q[1] == ',' ? q + 2 : q + 1;
	}
}

/* FNV-1a, 64 bits: the same on every host */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 0x100000001b3ULL;
	return h;
}
#define FNV_INIT 0xcbf29ce484222325ULL

struct sel {
	const char *g;              /* its group's value (escaped) */
	size_t gl;
	const char *name;
	size_t i;                   /* in l->e */
};

static int sel_cmp(const void *a, const void *b)
{
	const struct sel *x = a, *y = b;
	int c = memcmp(x->g, y->g, x->gl < y->gl ? x->gl : y->gl);

	if (c)
		return c;
	if (x->gl != y->gl)
		return x->gl < y->gl ? -1 : 1;
	return strcmp(x->name, y->name);
}

int mesh_select(struct mesh_list *l, const char *group_by, unsigned across)
{
	const char *sg = NULL, *seed = l->self_name ? l->self_name : "";
	size_t sgl = 0, i, j, s, n, r = 0, kept = 0, groups = 0;
	struct sel *v;
	unsigned char *keep;
	uint64_t h, rk;
	int own;

	if (l->self_labels)
		label_value(l->self_labels, group_by, &sg, &sgl);
	v = malloc((l->n ? l->n : 1) * sizeof(*v));
	keep = calloc(l->n ? l->n : 1, 1);
	if (!v || !keep) {
		free(v);
		free(keep);
		return -ENOMEM;
	}
	for (i = 0; i < l->n; i++) {
		label_value(l->e[i].labels, group_by, &v[i].g, &v[i].gl);
		v[i].name = l->e[i].name;
		v[i].i = i;
	}
	qsort(v, l->n, sizeof(*v), sel_cmp);
	/* this host's rank in its group: the members named before it */
	if (sg) {
		for (i = 0; i < l->n; i++)
			r += v[i].gl == sgl && !memcmp(v[i].g, sg, sgl) &&
			     strcmp(v[i].name, seed) < 0;
	} else {
		r = (size_t)(fnv(FNV_INIT, seed, strlen(seed)) >> 1);
	}
	for (i = 0; i < l->n; i += n) {
		for (n = 1; i + n < l->n && v[i + n].gl == v[i].gl &&
			    !memcmp(v[i + n].g, v[i].g, v[i].gl); n++)
			;
		groups++;
		own = sg && v[i].gl == sgl && !memcmp(v[i].g, sg, sgl);
		if (own) {
			for (j = 0; j < n; j++)
				keep[v[i + j].i] = 1;
			continue;
		}
		/* the same h for every host of this host's group: their
		 * ranks take consecutive members of the other */
		h = fnv(FNV_INIT, sg ? sg : "", sg ? sgl : 0);
		h = fnv(h, sg ? "\x01" : "\x02", 1);
		h = fnv(h, v[i].g, v[i].gl);
		s = n;
		rk = (uint64_t)(r % s) * (across % s) % s;
		for (j = 0; j < across && j < s; j++)
			keep[v[i + (h % s + rk + j) % s].i] = 1;
	}
	if (sg) {
		/* this host's group counted, had it no other member */
		for (i = 0; i < l->n; i++)
			if (v[i].gl == sgl && !memcmp(v[i].g, sg, sgl))
				break;
		groups += i == l->n;
	}
	free(v);
	for (i = 0; i < l->n; i++) {
		if (keep[i]) {
			l->e[kept++] = l->e[i];
			continue;
		}
		free(l->e[i].name);
		free(l->e[i].addr);
		free(l->e[i].labels);
	}
	free(keep);
	l->selected = l->listed - l->n + kept;
	l->n = kept;
	l->groups = groups;
	return 0;
}
