/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The mesh's peers file, read into one probe per peer.  Reading is the
 * same as a reload of probes: a peer whose line is unchanged (name,
 * address, labels) keeps its probe, its run in flight and its counters;
 * a removed peer's probe goes with its series; a new one starts at a
 * random point of its first interval, so that N peers do not fire at
 * once.  The file's stat is looked at every MESH_POLL_S (an edit in place
 * or a new file renamed over it both change it); a file that cannot be
 * read leaves the peers as they are.
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
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mesh.h"

static const char *const reserved[] = {
	"probe", "peer", "reason", "le", "quantile", "check", "responder",
	NULL,
};

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
	for (i = 0; reserved[i]; i++)
		if (strlen(reserved[i]) == n && !strncmp(reserved[i], s, n))
			return 0;
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

int mesh_addr_is_local(const char *addr)
{
	unsigned char a[sizeof(struct in6_addr)];
	struct ifaddrs *ifs, *i;
	int fam, local = 0;

	if (inet_pton(AF_INET, addr, a) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, addr, a) == 1)
		fam = AF_INET6;
	else
		return 0; /* a name: resolving it here would block the loop */
	if (getifaddrs(&ifs))
		return 0;
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
	freeifaddrs(ifs);
	return local;
}

/* The file, bounded, NUL-terminated; NULL with errno. */
static char *slurp(const char *path)
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

/* The next line of a peers file, from *cur on (split in place): 1 a peer
 * (name, addr and labels allocated), -1 a bad line (err says why), 0 at
 * the end; blank lines and comments are passed over. */
static int next_peer(char **cur, unsigned *lineno, char **name, char **addr,
		     char **labels, char *err, size_t errlen)
{
	char *line, *next;
	int r;

	while ((line = *cur)) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		*cur = next;
		(*lineno)++;
		r = mesh_parse_line(line, name, addr, labels, err, errlen);
		if (r <= 0)
			return r < 0 ? -1 : 1;
	}
	return 0;
}

int mesh_check(const char *path, FILE *out, struct mesh_counts *c)
{
	char *buf, *line, *name, *addr, *labels, err[256];
	char **names = NULL;
	size_t n = 0, nlines = 1, i;
	unsigned lineno = 0;
	int r, ret = 0;

	memset(c, 0, sizeof(*c));
	buf = slurp(path);
	if (!buf) {
		fprintf(out, "evrdma-probed: mesh: %s: %s\n", path,
			slurp_error(errno));
		return -1;
	}
	for (line = buf; *line; line++)
		nlines += *line == '\n';
	names = calloc(nlines, sizeof(*names));
	if (!names) {
		fprintf(out, "evrdma-probed: mesh: %s: out of memory\n", path);
		free(buf);
		return -1;
	}
	line = buf;
	while ((r = next_peer(&line, &lineno, &name, &addr, &labels, err,
			      sizeof(err)))) {
		if (r < 0) {
			fprintf(out, "evrdma-probed: %s:%u: %s\n", path, lineno,
				err);
			c->bad++;
			continue;
		}
		/* in mesh_reread()'s order: this host's first, then names
		 * listed twice among the others */
		for (i = 0; i < n && strcmp(names[i], name); i++)
			;
		if (mesh_addr_is_local(addr)) {
			c->own++;
			free(name);
		} else if (i < n) {
			fprintf(out, "evrdma-probed: %s:%u: peer \"%s\" is "
				"listed twice\n", path, lineno, name);
			c->bad++;
			free(name);
		} else {
			c->peers++;
			names[n++] = name;
		}
		free(addr);
		free(labels);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(buf);
	if (c->bad) {
		fprintf(out, "evrdma-probed: mesh: %s: %zu bad line%s, which "
			"the daemon skips\n", path, c->bad,
			c->bad == 1 ? "" : "s");
		ret = 1;
	}
	return ret;
}

static int peer_same(const struct probe_cfg *a, const struct probe_cfg *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->host, b->host) &&
	       !strcmp(a->labels, b->labels);
}

static void free_peers(struct mesh_peer *pe, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		probe_free(pe[i].p);
		pconf_probe_fini(&pe[i].cfg);
	}
	free(pe);
}

/* A peer of line: the template's probe keys, its name, host, labels. */
static int make_peer(struct mesh *m, struct mesh_peer *pe, char *name,
		     char *addr, char *labels)
{
	char full[PCONF_NAME_MAX + 8];

	snprintf(full, sizeof(full), "mesh:%s", name);
	free(name);
	if (pconf_probe_copy(&pe->cfg, &m->cfg->tmpl)) {
		free(addr);
		free(labels);
		return -ENOMEM;
	}
	free(pe->cfg.name);
	free(pe->cfg.host);
	free(pe->cfg.labels);
	pe->cfg.host = addr;
	pe->cfg.labels = labels;
	pe->cfg.name = strdup(full);
	return pe->cfg.name ? 0 : -ENOMEM;
}

/* Sampling: k runs an interval at most, evenly spaced (this spreads the
 * starts as the jitter does), never more than k in flight. */
static size_t sample_k(const struct mesh *m)
{
	return m->cfg->sample < m->npeers ? m->cfg->sample : m->npeers;
}

static void sample_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct mesh *m = w->data;
	size_t i, busy = 0, k = sample_k(m), idx;

	(void)l;
	(void)revents;
	for (i = 0; i < m->npeers; i++)
		busy += m->peers[i].p && m->peers[i].p->running;
	if (busy >= k) {
		/* the turn waits: the same peer is next */
		plog(PLOG_DEBUG, "mesh: %zu runs in flight, a sample's turn "
		     "skipped", busy);
		return;
	}
	/* the next peer in turn that is not still running (a slow run
	 * from its last turn) */
	for (i = 0; i < m->npeers; i++) {
		idx = (m->cursor + i) % m->npeers;
		if (m->peers[idx].p && !probe_run_once(m->peers[idx].p)) {
			m->cursor = (idx + 1) % m->npeers;
			return;
		}
	}
}

/* (Re)arm the sampling timer for the peers there are now: the same
 * rotation goes on across a re-read. */
static void sample_arm(struct mesh *m)
{
	double period;

	if (!m->cfg->sample)
		return;
	if (!m->npeers) {
		ev_timer_stop(m->evl, &m->sample_w);
		return;
	}
	m->cursor %= m->npeers;
	period = m->cfg->tmpl.interval_s / (double)sample_k(m);
	if (ev_is_active(&m->sample_w)) {
		m->sample_w.repeat = period;
		return; /* from its next turn on */
	}
	/* the first turn anywhere in the first period */
	ev_timer_set(&m->sample_w, period * (rand_r(&m->seed) /
					     ((double)RAND_MAX + 1)), period);
	ev_timer_start(m->evl, &m->sample_w);
}

void mesh_reread(struct mesh *m)
{
	const char *path = m->cfg->peers_file;
	struct mesh_peer *np;
	size_t nlines = 1, n = 0, i, j, added = 0, kept = 0, own = 0, bad = 0;
	size_t removed = 0;
	unsigned lineno = 0;
	char *buf, *line, *name, *addr, *labels, err[256];
	int r;

	buf = slurp(path);
	if (!buf) {
		plog(PLOG_WARN, "mesh: cannot read %s: %s; the %zu peers stay",
		     path, slurp_error(errno), m->npeers);
		return;
	}
	for (line = buf; *line; line++)
		nlines += *line == '\n';
	np = calloc(nlines, sizeof(*np));
	if (!np) {
		plog(PLOG_ERR, "mesh: %s: out of memory; the peers stay", path);
		free(buf);
		return;
	}
	line = buf;
	while ((r = next_peer(&line, &lineno, &name, &addr, &labels, err,
			      sizeof(err)))) {
		if (r < 0) {
			plog(PLOG_WARN, "%s:%u: %s; line skipped", path, lineno,
			     err);
			bad++;
			continue;
		}
		if (mesh_addr_is_local(addr)) {
			plog(PLOG_DEBUG, "%s:%u: %s is this host's own address; "
			     "peer \"%s\" skipped", path, lineno, addr, name);
			own++;
			free(name);
			free(addr);
			free(labels);
			continue;
		}
		for (i = 0; i < n; i++)
			if (!strcmp(np[i].cfg.name + 5, name))
				break;
		if (i < n) {
			plog(PLOG_WARN, "%s:%u: peer \"%s\" is listed twice; "
			     "line skipped", path, lineno, name);
			bad++;
			free(name);
			free(addr);
			free(labels);
			continue;
		}
		if (make_peer(m, &np[n], name, addr, labels)) {
			plog(PLOG_ERR, "mesh: %s: out of memory; the peers stay",
			     path);
			n++;
			free_peers(np, n);
			free(buf);
			return;
		}
		n++;
	}
	free(buf);
	/* the unchanged keep their probes; then new ones for the rest */
	for (i = 0; i < n; i++) {
		for (j = 0; j < m->npeers; j++)
			if (m->peers[j].p &&
			    peer_same(&m->peers[j].cfg, &np[i].cfg))
				break;
		if (j < m->npeers) {
			np[i].p = m->peers[j].p;
			m->peers[j].p = NULL;
			np[i].p->cfg = &np[i].cfg;
			kept++;
		}
	}
	for (i = 0; i < n; i++) {
		if (np[i].p)
			continue;
		if (probe_new(&np[i].p, m->loop, &np[i].cfg)) {
			np[i].p = NULL;
			plog(PLOG_ERR, "mesh: peer \"%s\": out of memory",
			     np[i].cfg.name + 5);
			continue;
		}
		/* anywhere in the first interval; sampled: when its turn
		 * comes (sample_cb) */
		if (!m->cfg->sample)
			probe_start_in(np[i].p, np[i].cfg.interval_s *
				       (rand_r(&m->seed) /
					((double)RAND_MAX + 1)));
		added++;
	}
	for (j = 0; j < m->npeers; j++)
		if (m->peers[j].p) {
			plog(PLOG_INFO, "mesh: peer \"%s\": removed",
			     m->peers[j].cfg.name + 5);
			removed++;
		}
	free_peers(m->peers, m->npeers);
	m->peers = np;
	m->npeers = n;
	sample_arm(m);
	plog(PLOG_INFO, "mesh: %s: %zu peers (%zu added, %zu removed, %zu "
	     "unchanged; %zu of this host, %zu bad lines skipped)", path, n,
	     added, removed, kept, own, bad);
}

static int stat_now(struct mesh *m, int *changed)
{
	struct stat sb;

	if (stat(m->cfg->peers_file, &sb))
		return -1;
	*changed = !m->have_stat || m->st.dev != (long long)sb.st_dev ||
		   m->st.ino != (long long)sb.st_ino ||
		   m->st.size != (long long)sb.st_size ||
		   m->st.mtime_ns != sb.st_mtim.tv_sec * 1000000000LL +
				     sb.st_mtim.tv_nsec ||
		   m->st.ctime_ns != sb.st_ctim.tv_sec * 1000000000LL +
				     sb.st_ctim.tv_nsec;
	m->have_stat = 1;
	m->st.dev = (long long)sb.st_dev;
	m->st.ino = (long long)sb.st_ino;
	m->st.size = (long long)sb.st_size;
	m->st.mtime_ns = sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
	m->st.ctime_ns = sb.st_ctim.tv_sec * 1000000000LL + sb.st_ctim.tv_nsec;
	return 0;
}

static void poll_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct mesh *m = w->data;
	int changed = 0;

	(void)l;
	(void)revents;
	/* gone for a moment (a rename's window, an editor's save): the
	 * peers stay until it is back */
	if (stat_now(m, &changed) || !changed)
		return;
	plog(PLOG_INFO, "mesh: %s changed, reading it", m->cfg->peers_file);
	mesh_reread(m);
}

int mesh_new(struct mesh **out, struct evr_loop *loop,
	     const struct mesh_cfg *cfg)
{
	struct mesh *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->cfg = cfg;
	m->loop = loop;
	m->evl = evr_loop_ev(loop);
	m->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	ev_timer_init(&m->poll_w, poll_cb, MESH_POLL_S, MESH_POLL_S);
	m->poll_w.data = m;
	ev_init(&m->sample_w, sample_cb);
	m->sample_w.data = m;
	*out = m;
	return 0;
}

void mesh_start(struct mesh *m)
{
	int changed;

	(void)stat_now(m, &changed); /* before reading: a change after it
				      * is seen at the next look */
	mesh_reread(m);
	ev_timer_start(m->evl, &m->poll_w);
}

void mesh_free(struct mesh *m)
{
	if (!m)
		return;
	ev_timer_stop(m->evl, &m->poll_w);
	ev_timer_stop(m->evl, &m->sample_w);
	free_peers(m->peers, m->npeers);
	free(m);
}
