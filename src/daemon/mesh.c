/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The running mesh: one probe per peer of a good read of the peers file
 * (peers.c reads and checks it).  Reading is the same as a reload of
 * probes: a peer whose line is unchanged (name, address, labels) keeps
 * its probe, its run in flight and its counters; a removed peer's probe
 * goes with its series; a new one starts at a random point of its first
 * interval, so that N peers do not fire at once (or, "sample", takes its
 * turn).  The file's stat is looked at every MESH_POLL_S (an edit in
 * place or a new file renamed over it both change it); a file that
 * cannot be read leaves the peers as they are.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mesh.h"
#include "reconcile.h"

static int peer_same(const struct probe_cfg *a, const struct probe_cfg *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->host, b->host) &&
	       !strcmp(a->labels, b->labels);
}

static void free_peers(struct probe_cfg *cfgs, struct probe **probes,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (probes)
			probe_free(probes[i]);
		pconf_probe_fini(&cfgs[i]);
	}
	free(cfgs);
	free(probes);
}

/* A peer of a line (its strings taken): the template's probe keys, the
 * peer's name, host and labels. */
static int make_peer(struct mesh *m, struct probe_cfg *pc,
		     struct mesh_entry *e)
{
	struct probe_cfg t = m->cfg->tmpl;
	char full[PCONF_NAME_MAX + 8];

	snprintf(full, sizeof(full), "mesh:%s", e->name);
	t.name = t.host = t.labels = t.peer = NULL; /* the peer's own */
	if (pconf_probe_copy(pc, &t))
		return -ENOMEM;
	pc->peer = e->name;
	pc->host = e->addr;
	pc->labels = e->labels;
	e->name = e->addr = e->labels = NULL;
	pc->name = strdup(full);
	return pc->name ? 0 : -ENOMEM;
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
		busy += probe_running(m->probes[i]);
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
		if (!probe_run_once(m->probes[idx])) {
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

static double now_epoch(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void mesh_file_failed(struct mesh *m, const struct mesh_list *l)
{
	m->stats.file_ok = 0;
	m->stats.file_errors++;
	if (l && l->read) {
		m->stats.listed = l->listed;
		m->stats.selected = l->selected;
	}
}

/* mesh_set_peers()'s two sets, as the reconciler sees them: the running
 * peers (m) and the wanted ones (cfgs, their probes np). */
struct peers_rc {
	struct mesh *m;
	struct probe_cfg *cfgs;
	struct probe **np;
};

static const char *peer_key(void *ud, int old, size_t i)
{
	struct peers_rc *w = ud;

	return old ? w->m->cfgs[i].peer : w->cfgs[i].peer;
}

static int peer_same_rc(void *ud, size_t j, size_t i)
{
	struct peers_rc *w = ud;

	return peer_same(&w->m->cfgs[j], &w->cfgs[i]);
}

static int peer_make(void *ud, size_t i)
{
	struct peers_rc *w = ud;

	if (!probe_new(&w->np[i], w->m->loop, &w->cfgs[i]))
		return 0;
	w->np[i] = NULL;
	plog(PLOG_ERR, "mesh: peer \"%s\": out of memory", w->cfgs[i].peer);
	return RECONCILE_SKIP;
}

static void peer_unmake(void *ud, size_t i)
{
	struct peers_rc *w = ud;

	probe_free(w->np[i]);
	w->np[i] = NULL;
}

static void peer_keep(void *ud, size_t j, size_t i)
{
	struct peers_rc *w = ud;

	w->np[i] = w->m->probes[j];
	w->m->probes[j] = NULL;
	w->np[i]->cfg = &w->cfgs[i];
}

static void peer_drop(void *ud, size_t j)
{
	struct peers_rc *w = ud;

	plog(PLOG_INFO, "mesh: peer \"%s\": removed", w->m->cfgs[j].peer);
	probe_free(w->m->probes[j]);
	w->m->probes[j] = NULL;
}

/* anywhere in the first interval; sampled: when its turn comes
 * (sample_cb) */
static void peer_start(void *ud, size_t i)
{
	struct peers_rc *w = ud;
	struct mesh *m = w->m;

	if (!m->cfg->sample)
		probe_start_in(w->np[i], w->cfgs[i].interval_s *
			       (rand_r(&m->seed) / ((double)RAND_MAX + 1)));
}

static const struct reconcile_ops peer_ops = {
	.key = peer_key,
	.same = peer_same_rc,
	.make = peer_make,
	.unmake = peer_unmake,
	.keep = peer_keep,
	.drop = peer_drop,
	.start = peer_start,
};

/* The n peers whose probe was made, packed at the front of w's arrays
 * (a peer whose probe could not be made is left out): how many. */
static size_t keep_made(struct peers_rc *w, size_t n)
{
	size_t i, k;

	for (i = 0, k = 0; i < n; i++) {
		if (!w->np[i]) {
			pconf_probe_fini(&w->cfgs[i]);
			continue;
		}
		w->cfgs[k] = w->cfgs[i];
		w->np[k] = w->np[i];
		w->np[k]->cfg = &w->cfgs[k];
		k++;
	}
	return k;
}

void mesh_set_peers(struct mesh *m, struct mesh_list *l)
{
	const char *path = m->cfg->peers_file;
	struct peers_rc w = { m, NULL, NULL };
	struct reconcile rc;
	size_t n = 0;
	int in_file = l->self_labels != NULL;

	w.cfgs = calloc(l->n + 1, sizeof(*w.cfgs));
	w.np = calloc(l->n + 1, sizeof(*w.np));
	if (!w.cfgs || !w.np)
		goto oom;
	for (n = 0; n < l->n; n++)
		if (make_peer(m, &w.cfgs[n], &l->e[n])) {
			n++;
			goto oom;
		}
	mesh_list_free(l);
	if (reconcile_plan(&rc, m->npeers, n, &peer_ops, &w))
		goto oom;
	reconcile_commit(&rc);
	free_peers(m->cfgs, m->probes, m->npeers); /* their probes kept or gone */
	m->npeers = keep_made(&w, n);
	m->cfgs = w.cfgs;
	m->probes = w.np;
	sample_arm(m);
	m->stats.peers = m->npeers;
	m->stats.listed = l->listed;
	m->stats.selected = l->selected;
	m->stats.file_ok = 1;
	m->stats.last_good_ts = now_epoch();
	plog(PLOG_INFO, "mesh: %s: %zu peer%s (%zu added, %zu removed, %zu "
	     "unchanged; %zu of this host)", path, n, PLOG_S(n), rc.added,
	     rc.removed, rc.kept_n, l->own);
	if (m->cfg->group_by)
		plog(PLOG_INFO, "mesh: %zu of %zu peers selected by \"%s\", "
		     "%zu groups; this host %s", n, l->listed,
		     m->cfg->group_by, l->groups, in_file ?
		     "in its group" : "not in the file: no group of its own");
	return;
oom:
	plog(PLOG_ERR, "mesh: %s: out of memory; the %zu peers stay", path,
	     m->stats.peers);
	if (w.cfgs)
		free_peers(w.cfgs, w.np, n);
	else
		free(w.np);
	mesh_list_free(l);
	mesh_file_failed(m, l);
}

struct probe *const *mesh_probes(const struct mesh *m, size_t *n)
{
	*n = m ? m->npeers : 0;
	return m ? m->probes : NULL;
}

static void say_log(void *ud, const char *msg)
{
	(void)ud;
	plog(PLOG_ERR, "%s", msg);
}

int mesh_reread(struct mesh *m)
{
	struct mesh_list l;
	char err[512];

	if (mesh_load_cfg(m->cfg, &l, say_log, NULL, err, sizeof(err))) {
		mesh_file_failed(m, &l);
		plog(PLOG_ERR, "%s; the %zu peers of its last good read stay",
		     err, m->stats.peers);
		return -1;
	}
	mesh_set_peers(m, &l);
	return 0;
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
	/* gone (deleted, or for a moment in an editor's save): the peers
	 * stay, the file counted as failed once, read again once back */
	if (stat_now(m, &changed)) {
		if (!m->missing) {
			m->missing = 1;
			mesh_file_failed(m, NULL);
			plog(PLOG_ERR, "mesh: %s: %s; the %zu peers of its last "
			     "good read stay", m->cfg->peers_file,
			     strerror(errno), m->stats.peers);
		}
		return;
	}
	if (m->missing)
		changed = 1;
	m->missing = 0;
	if (!changed)
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

void mesh_start(struct mesh *m, struct mesh_list *l)
{
	int changed;

	/* the file was read just before (mesh_load()): a change since is
	 * seen at the next look */
	(void)stat_now(m, &changed);
	mesh_set_peers(m, l);
	ev_timer_start(m->evl, &m->poll_w);
}

void mesh_free(struct mesh *m)
{
	if (!m)
		return;
	ev_timer_stop(m->evl, &m->poll_w);
	ev_timer_stop(m->evl, &m->sample_w);
	free_peers(m->cfgs, m->probes, m->npeers);
	free(m);
}
