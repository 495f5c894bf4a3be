/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma-probed: runs rstream and mckey probes periodically and serves
 * their outcome as Prometheus metrics, and answers its peers' probes with
 * rstream servers of its own (responders).  One libev loop carries all of
 * it: the engines (attached with evr_loop_new(&l, host)), libmicrohttpd
 * (see http.c) and the signals.  Only the public API, include/evrdma/, is used.
 *
 * Exit status: 0 stopped by SIGTERM/SIGINT, or --check-config found the
 * file good; 1 usage or a bad configuration file; 2 cannot listen on the
 * HTTP address; 3 another local failure (memory, the event loop).
 */
#include "config.h"

#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evrdma/loop.h"
#include "http.h"
#include "log.h"
#include "mesh.h"
#include "metrics.h"
#include "pconf.h"
#include "probe.h"
#include "responder.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONF SYSCONFDIR "/evrdma-probed.conf"

enum { EXIT_OK = 0, EXIT_CONFIG = 1, EXIT_LISTEN = 2, EXIT_LOCAL = 3 };

struct probed {
	const char *conf_file;
	struct pconf *conf;
	struct probe **probes;
	size_t nprobes;
	struct responder **responders;
	size_t nresponders;
	struct mesh *mesh;          /* NULL: no "mesh" */
	struct ev_loop *evl;
	struct evr_loop *loop;
	struct http http;
	ev_signal hup_w, term_w, int_w;
	struct metrics_daemon md;
};

static int page(void *ud, const char *url, char **body, size_t *len,
		const char **type)
{
	struct probed *d = ud;
	static const char index_page[] =
		"evrdma-probed: metrics at /metrics\n";

	if (!strcmp(url, "/metrics")) {
		struct probe **all;
		size_t n = d->nprobes, i;
		int ret;

		*type = METRICS_CONTENT_TYPE;
		if (!d->mesh || !d->mesh->npeers)
			return metrics_render(body, len, d->probes, n,
					      &d->md) ? -1 : 1;
		/* the configured probes, then the mesh's */
		all = calloc(n + d->mesh->npeers, sizeof(*all));
		if (!all)
			return -1;
		memcpy(all, d->probes, n * sizeof(*all));
		for (i = 0; i < d->mesh->npeers; i++)
			if (d->mesh->peers[i].p)
				all[n++] = d->mesh->peers[i].p;
		ret = metrics_render(body, len, all, n, &d->md);
		free(all);
		return ret ? -1 : 1;
	}
	if (!strcmp(url, "/")) {
		*type = "text/plain; charset=utf-8";
		*body = strdup(index_page);
		*len = sizeof(index_page) - 1;
		return *body ? 1 : -1;
	}
	return 0;
}

/* The responders of conf, as apply() does the probes: an unchanged one
 * keeps listening and its counters.  Step one allocates (new ones into
 * nr, not started; 0 or -1 with nothing changed); step two commits. */
struct resp_plan {
	struct responder **nr;
	char *reused, *isnew;
	size_t kept, added, removed;
};

static int resp_prepare(struct probed *d, struct pconf *conf,
			struct resp_plan *rp)
{
	size_t i, j;

	memset(rp, 0, sizeof(*rp));
	rp->nr = calloc(conf->nresponders + 1, sizeof(*rp->nr));
	rp->reused = calloc(d->nresponders + 1, 1);
	rp->isnew = calloc(conf->nresponders + 1, 1);
	if (!rp->nr || !rp->reused || !rp->isnew)
		goto fail;
	for (i = 0; i < conf->nresponders; i++) {
		for (j = 0; j < d->nresponders; j++)
			if (!rp->reused[j] &&
			    pconf_responder_equal(d->responders[j]->cfg,
						  &conf->responders[i]))
				break;
		if (j < d->nresponders) {
			rp->reused[j] = 1;
			rp->nr[i] = d->responders[j];
			rp->kept++;
			continue;
		}
		if (responder_new(&rp->nr[i], d->loop, &conf->responders[i]))
			goto fail;
		rp->isnew[i] = 1;
		rp->added++;
	}
	return 0;
fail:
	for (i = 0; rp->isnew && i < conf->nresponders; i++)
		if (rp->isnew[i])
			responder_free(rp->nr[i]);
	free(rp->nr);
	free(rp->reused);
	free(rp->isnew);
	memset(rp, 0, sizeof(*rp));
	return -1;
}

static void resp_commit(struct probed *d, struct pconf *conf,
			struct resp_plan *rp)
{
	size_t i, j;

	for (i = 0; i < conf->nresponders; i++)
		rp->nr[i]->cfg = &conf->responders[i];
	/* the removed first: a changed responder's port is free for its
	 * successor */
	for (j = 0; j < d->nresponders; j++) {
		if (rp->reused[j])
			continue;
		plog(PLOG_INFO, "responder %s: removed",
		     d->responders[j]->cfg->label);
		responder_free(d->responders[j]);
		rp->removed++;
	}
	for (i = 0; i < conf->nresponders; i++) {
		if (!rp->isnew[i])
			continue;
		plog(PLOG_INFO, "responder %s: started", rp->nr[i]->cfg->label);
		responder_start(rp->nr[i]);
	}
	free(d->responders);
	d->responders = rp->nr;
	d->nresponders = conf->nresponders;
	d->md.responders = d->responders;
	d->md.nresponders = d->nresponders;
	free(rp->reused);
	free(rp->isnew);
}

/* The mesh of conf: the same keys keep the running one (its peers' probes
 * and counters), which reads its peers file again (SIGHUP); other keys
 * start it afresh. */
static void apply_mesh(struct probed *d, struct pconf *conf)
{
	if (d->mesh && conf->mesh &&
	    json_equal(d->mesh->cfg->raw, conf->mesh->raw)) {
		d->mesh->cfg = conf->mesh;
		mesh_reread(d->mesh);
		return;
	}
	mesh_free(d->mesh);
	d->mesh = NULL;
	if (!conf->mesh)
		return;
	if (mesh_new(&d->mesh, d->loop, conf->mesh)) {
		d->mesh = NULL;
		plog(PLOG_ERR, "mesh: out of memory, no mesh");
		return;
	}
	mesh_start(d->mesh);
}

/* Probes of conf: the running one kept where its configuration is
 * unchanged (its run in flight and counters go on), the rest new.  All
 * allocation comes first, so that a failure leaves the running set as it
 * was. */
static int apply(struct probed *d, struct pconf *conf)
{
	struct resp_plan rp;
	struct probe **np = NULL;
	size_t i, j, kept = 0, added = 0, removed = 0;
	char *reused = NULL, *isnew = NULL;
	int ret = -1;

	if (resp_prepare(d, conf, &rp))
		return -1;
	np = calloc(conf->nprobes + 1, sizeof(*np));
	reused = calloc(d->nprobes + 1, 1);
	isnew = calloc(conf->nprobes + 1, 1);
	if (!np || !reused || !isnew)
		goto out;
	for (i = 0; i < conf->nprobes; i++) {
		for (j = 0; j < d->nprobes; j++)
			if (!reused[j] &&
			    !strcmp(d->probes[j]->cfg->name,
				    conf->probes[i].name) &&
			    pconf_probe_equal(d->probes[j]->cfg,
					      &conf->probes[i]))
				break;
		if (j < d->nprobes) {
			reused[j] = 1;
			np[i] = d->probes[j];
			kept++;
			continue;
		}
		if (probe_new(&np[i], d->loop, &conf->probes[i])) {
			for (j = 0; j < i; j++)
				if (isnew[j])
					probe_free(np[j]);
			goto out;
		}
		isnew[i] = 1;
		added++;
	}
	/* commit */
	resp_commit(d, conf, &rp);
	rp.nr = NULL;
	for (i = 0; i < conf->nprobes; i++)
		np[i]->cfg = &conf->probes[i];
	for (j = 0; j < d->nprobes; j++) {
		if (reused[j])
			continue;
		plog(PLOG_INFO, "probe \"%s\": removed%s",
		     d->probes[j]->cfg->name,
		     d->probes[j]->running ? ", its run cancelled" : "");
		probe_free(d->probes[j]);
		removed++;
	}
	for (i = 0; i < conf->nprobes; i++) {
		if (!isnew[i])
			continue;
		plog(PLOG_INFO, "probe \"%s\": started (%s, every %g s)",
		     np[i]->cfg->name, np[i]->cfg->type == PROBE_RSTREAM ?
		     "rstream" : "mckey", np[i]->cfg->interval_s);
		probe_start(np[i]);
	}
	free(d->probes);
	d->probes = np;
	np = NULL;
	d->nprobes = conf->nprobes;
	apply_mesh(d, conf);
	pconf_free(d->conf);
	d->conf = conf;
	plog(PLOG_INFO, "configuration %s: %zu probes (%zu added, %zu "
	     "removed, %zu unchanged)", d->conf_file, d->nprobes, added,
	     removed, kept);
	if (rp.added || rp.removed || rp.kept)
		plog(PLOG_INFO, "configuration %s: %zu responders (%zu added, "
		     "%zu removed, %zu unchanged)", d->conf_file,
		     d->nresponders, rp.added, rp.removed, rp.kept);
	ret = 0;
out:
	if (rp.nr) { /* not committed: the new ones go, nothing changed */
		for (i = 0; i < conf->nresponders; i++)
			if (rp.isnew[i])
				responder_free(rp.nr[i]);
		free(rp.nr);
		free(rp.reused);
		free(rp.isnew);
	}
	free(np);
	free(reused);
	free(isnew);
	return ret;
}

static void reload(struct probed *d)
{
	struct pconf *conf;
	char err[512];

	if (pconf_load(&conf, d->conf_file, err, sizeof(err))) {
		d->md.reload_failures++;
		d->md.last_reload_ok = 0;
		plog(PLOG_ERR, "reload rejected, the running configuration "
		     "stays: %s", err);
		return;
	}
	if (strcmp(conf->listen_addr, d->conf->listen_addr) ||
	    conf->listen_port != d->conf->listen_port)
		plog(PLOG_WARN, "reload: a new listen address takes effect "
		     "at the next start only");
	if (apply(d, conf)) {
		pconf_free(conf);
		d->md.reload_failures++;
		d->md.last_reload_ok = 0;
		plog(PLOG_ERR, "reload failed: out of memory; the running "
		     "configuration stays");
		return;
	}
	d->md.reloads++;
	d->md.last_reload_ok = 1;
}

static void signal_cb(struct ev_loop *l, ev_signal *w, int revents)
{
	struct probed *d = w->data;

	if (w->signum == SIGHUP) {
		plog(PLOG_INFO, "SIGHUP: reloading %s", d->conf_file);
		reload(d);
		return;
	}
	plog(PLOG_INFO, "%s: stopping", w->signum == SIGTERM ? "SIGTERM" :
	     "SIGINT");
	ev_break(l, EVBREAK_ALL);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: evrdma-probed [-c FILE] [-f] [--syslog] [-v]\n"
		"       evrdma-probed --check-config [-c FILE]\n"
		"\n"
		"  -c, --config FILE   configuration (default %s)\n"
		"  -f, --foreground    stay in the foreground (the only mode: "
		"run it\n"
		"                      under systemd or another supervisor)\n"
		"      --syslog        log to syslog as well as to stderr\n"
		"  -v, --verbose       log every run, not only changes\n"
		"      --check-config  parse the configuration, exit 0 if good, "
		"1 if not\n"
		"  -h, --help          this text\n"
		"  -V, --version       the version\n"
		"\n"
		"SIGHUP reloads the configuration; SIGTERM and SIGINT stop.\n"
		"Exit status: 0 stopped cleanly, 1 usage or bad configuration,"
		"\n2 cannot listen on the HTTP address, 3 local failure.\n",
		DEFAULT_CONF);
}

static void shutdown_all(struct probed *d)
{
	sigset_t set;
	size_t i;

	/* A second SIGTERM (timeout(1) and friends send one to the process
	 * and one to its group) must not kill us half-way through the
	 * clean-up once the watchers are gone: block them to the end. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < d->nprobes; i++)
		probe_free(d->probes[i]);
	free(d->probes);
	d->probes = NULL;
	d->nprobes = 0;
	mesh_free(d->mesh);
	d->mesh = NULL;
	for (i = 0; i < d->nresponders; i++)
		responder_free(d->responders[i]);
	free(d->responders);
	d->responders = NULL;
	d->nresponders = 0;
	http_close(&d->http);
	if (d->evl) {
		ev_signal_stop(d->evl, &d->hup_w);
		ev_signal_stop(d->evl, &d->term_w);
		ev_signal_stop(d->evl, &d->int_w);
	}
	if (d->loop)
		evr_loop_free(d->loop);
	if (d->evl)
		ev_loop_destroy(d->evl);
	pconf_free(d->conf);
}

/* The command line: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct probed *d, int *check,
		      int *use_syslog)
{
	enum { OPT_SYSLOG = 256, OPT_CHECK };
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "syslog", no_argument, NULL, OPT_SYSLOG },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int op;

	opterr = 0;
	while ((op = getopt_long(argc, argv, ":c:fvhV", longopts, NULL)) != -1) {
		switch (op) {
		case 'c':
			d->conf_file = optarg;
			break;
		case 'f':
			break; /* always in the foreground */
		case 'v':
			plog_verbose(1);
			break;
		case OPT_SYSLOG:
			*use_syslog = 1;
			break;
		case OPT_CHECK:
			*check = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("evrdma-probed (evrdma) %s\n", PACKAGE_VERSION);
			return EXIT_OK;
		case ':':
			fprintf(stderr, "evrdma-probed: option %s needs a "
				"value (see --help)\n", argv[optind - 1]);
			return EXIT_CONFIG;
		default:
			fprintf(stderr, "evrdma-probed: unknown option %s "
				"(see --help)\n", argv[optind - 1]);
			return EXIT_CONFIG;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evrdma-probed: unexpected argument \"%s\" "
			"(see --help)\n", argv[optind]);
		return EXIT_CONFIG;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct probed d;
	struct pconf *conf;
	char err[512];
	int check = 0, use_syslog = 0, ret;
	struct timespec ts;

	memset(&d, 0, sizeof(d));
	d.conf_file = DEFAULT_CONF;
	ret = parse_args(argc, argv, &d, &check, &use_syslog);
	if (ret >= 0)
		return ret;
	if (pconf_load(&conf, d.conf_file, err, sizeof(err))) {
		fprintf(stderr, "evrdma-probed: %s\n", err);
		return EXIT_CONFIG;
	}
	if (check) {
		struct mesh_counts mc;

		/* the peers file too: a bad line, which the daemon skips
		 * with a warning, fails the check, so that config
		 * management notices it */
		if (conf->mesh &&
		    mesh_check(conf->mesh->peers_file, stderr, &mc)) {
			pconf_free(conf);
			return EXIT_CONFIG;
		}
		printf("evrdma-probed: %s: ok, %zu probes, HTTP on %s port %u",
		       d.conf_file, conf->nprobes, conf->listen_addr,
		       conf->listen_port);
		if (conf->nresponders)
			printf(", %zu responders", conf->nresponders);
		if (conf->mesh)
			printf(", a mesh of %zu peers (%zu of this host)",
			       mc.peers, mc.own);
		printf("\n");
		pconf_free(conf);
		return EXIT_OK;
	}
	plog_syslog(use_syslog);
	signal(SIGPIPE, SIG_IGN);
	clock_gettime(CLOCK_REALTIME, &ts);
	d.md.version = PACKAGE_VERSION;
	d.md.start_ts = ts.tv_sec + ts.tv_nsec / 1e9;
	d.md.last_reload_ok = 1;

	ret = EXIT_LOCAL;
	d.evl = ev_default_loop(EVFLAG_AUTO);
	if (!d.evl || evr_loop_new(&d.loop, d.evl)) {
		plog(PLOG_ERR, "cannot create the event loop");
		d.loop = NULL;
		goto out;
	}
	if (http_open(&d.http, d.evl, conf->listen_addr, conf->listen_port,
		      page, &d, err, sizeof(err))) {
		plog(PLOG_ERR, "%s", err);
		ret = EXIT_LISTEN;
		goto out;
	}
	/* d.conf is NULL: apply() starts every probe */
	d.conf = NULL;
	if (apply(&d, conf)) {
		plog(PLOG_ERR, "out of memory");
		goto out;
	}
	conf = NULL;
	ev_signal_init(&d.hup_w, signal_cb, SIGHUP);
	ev_signal_init(&d.term_w, signal_cb, SIGTERM);
	ev_signal_init(&d.int_w, signal_cb, SIGINT);
	d.hup_w.data = d.term_w.data = d.int_w.data = &d;
	ev_signal_start(d.evl, &d.hup_w);
	ev_signal_start(d.evl, &d.term_w);
	ev_signal_start(d.evl, &d.int_w);
	plog(PLOG_INFO, "serving /metrics on %s port %u, pid %ld",
	     d.conf->listen_addr, d.conf->listen_port, (long)getpid());
	ev_run(d.evl, 0);
	ret = EXIT_OK;
out:
	pconf_free(conf);
	shutdown_all(&d);
	if (ret == EXIT_OK)
		plog(PLOG_INFO, "stopped");
	plog_syslog(0);
	return ret;
}
