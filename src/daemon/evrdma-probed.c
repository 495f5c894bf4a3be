/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * evrdma-probed: runs rstream and mckey probes periodically and serves
 * their outcome as Prometheus metrics, and answers its peers' probes with
 * rstream servers of its own (responders).  One libev loop carries all of
 * it: the engines (attached with evr_loop_new(&l, host)), libmicrohttpd
 * (see http.c) and the signals.  Only the public API, include/evrdma/, is used.
 *
 * Exit status: 0 stopped by SIGTERM/SIGINT, or --check-config found the
 * file good; 1 usage or a bad configuration or peers file (probed_load():
 * --check-config and the start refuse the same files); 2 cannot listen
 * on the HTTP address (its port taken, say; an address not on this
 * host yet is waited for); 3 another local failure (memory, the event
 * loop).
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
#include "load.h"
#include "log.h"
#include "mesh.h"
#include "metrics.h"
#include "pconf.h"
#include "probe.h"
#include "reconcile.h"
#include "responder.h"
#include "runlog.h"
#include "status.h"

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
	struct runring runs;        /* the status page's last runs */
	char host[256];             /* gethostname(), for the page */
};

/* "/" and /status.json: what the status page is given */
static int status_page(struct probed *d, int html, char **body,
		       size_t *len, const char **type)
{
	struct evr_dev_info devs[STATUS_DEVS_MAX];
	struct status_src s = {
		.host = d->host, .version = d->md.version,
		.start_ts = d->md.start_ts, .cfg = &d->conf->status,
		.probes = d->probes, .nprobes = d->nprobes,
		.responders = d->responders, .nresponders = d->nresponders,
		.mesh = d->mesh ? &d->mesh->stats : NULL,
		.peers_file = d->mesh ? d->mesh->cfg->peers_file : NULL,
		.devs = devs, .runs = &d->runs,
	};
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	s.now = ts.tv_sec + ts.tv_nsec / 1e9;
	s.peers = mesh_probes(d->mesh, &s.npeers);
	s.ndevs = evr_loop_devices(d->loop, devs, STATUS_DEVS_MAX);
	if (s.ndevs > STATUS_DEVS_MAX)
		s.ndevs = STATUS_DEVS_MAX;
	*type = html ? STATUS_HTML_TYPE : STATUS_JSON_TYPE;
	return (html ? status_html : status_json)(body, len, &s) ? -1 : 1;
}

static int page(void *ud, const char *url, char **body, size_t *len,
		const char **type)
{
	struct probed *d = ud;

	if (!strcmp(url, "/metrics")) {
		struct metrics_src s = {
			.probes = d->probes, .nprobes = d->nprobes,
			.responders = d->responders,
			.nresponders = d->nresponders,
			.mesh = d->mesh ? &d->mesh->stats : NULL,
		};

		s.peers = mesh_probes(d->mesh, &s.npeers);
		*type = METRICS_CONTENT_TYPE;
		return metrics_render(body, len, &s, &d->md) ? -1 : 1;
	}
	if (!d->conf) /* (not before the first apply()) */
		return 0;
	if (!strcmp(url, "/") || !strcmp(url, "/status.json"))
		return status_page(d, url[1] == '\0', body, len, type);
	if (!strcmp(url, "/favicon.ico")) {
		*type = STATUS_ICON_TYPE;
		return status_icon(body, len) ? -1 : 1;
	}
	*type = STATUS_TEXT_TYPE;
	return status_run(body, len, &d->runs, url);
}

/* apply()'s sets, as the reconciler sees them: the running probes and
 * responders (d), those conf wants (np, nr: kept or made). */
struct apply_rc {
	struct probed *d;
	struct pconf *conf;
	struct probe **np;
	struct responder **nr;
};

/* The probes: the same name and keys keep the running one (its run in
 * flight and counters go on). */
static const char *probe_key(void *ud, int old, size_t i)
{
	struct apply_rc *a = ud;

	return old ? a->d->probes[i]->cfg->name : a->conf->probes[i].name;
}

static int probe_same(void *ud, size_t j, size_t i)
{
	struct apply_rc *a = ud;

	return pconf_probe_equal(a->d->probes[j]->cfg, &a->conf->probes[i]);
}

static int probe_make(void *ud, size_t i)
{
	struct apply_rc *a = ud;

	return probe_new(&a->np[i], a->d->loop, &a->conf->probes[i]);
}

static void probe_unmake(void *ud, size_t i)
{
	struct apply_rc *a = ud;

	probe_free(a->np[i]);
}

static void probe_keep(void *ud, size_t j, size_t i)
{
	struct apply_rc *a = ud;

	a->np[i] = a->d->probes[j];
	a->np[i]->cfg = &a->conf->probes[i];
}

static void probe_drop(void *ud, size_t j)
{
	struct probe *p = ((struct apply_rc *)ud)->d->probes[j];

	plog(PLOG_INFO, "probe \"%s\": removed%s", p->cfg->name,
	     probe_running(p) ? ", its run cancelled" : "");
	probe_free(p);
}

/* The listed rstream probes' first runs are spread over their interval,
 * so that N probes of one interval do not all run at once, every
 * interval: the k-th rstream probe of the list starts at the fractional
 * part of k x 0.618... of it (the golden ratio's Weyl sequence: any n
 * consecutive probes lie about 1/n of the interval apart, none by chance
 * on another; the first starts at once).  mckey probes start at once: a
 * sender and its receivers on one agent run together by design. */
static double probe_phase(const struct apply_rc *a, size_t i)
{
	const struct probe_cfg *c = &a->conf->probes[i];
	size_t j, k = 0;
	double f;

	if (c->type != PROBE_RSTREAM)
		return 0;
	for (j = 0; j < i; j++)
		k += a->conf->probes[j].type == PROBE_RSTREAM;
	f = (double)k * 0.6180339887498949;
	return (f - (double)(uint64_t)f) * c->interval_s;
}

static void probe_go(void *ud, size_t i)
{
	struct probe *p = ((struct apply_rc *)ud)->np[i];
	double phase = probe_phase(ud, i);

	plog(PLOG_INFO, "probe \"%s\": started (%s, every %g s, first run "
	     "in %.3f s)", p->cfg->name, p->cfg->type == PROBE_RSTREAM ?
	     "rstream" : "mckey", p->cfg->interval_s, phase);
	probe_start_in(p, phase);
}

static const struct reconcile_ops probe_ops = {
	.key = probe_key,
	.same = probe_same,
	.make = probe_make,
	.unmake = probe_unmake,
	.keep = probe_keep,
	.drop = probe_drop,
	.start = probe_go,
};

/* The responders: an unchanged one keeps listening and its counters. */
static int resp_same(void *ud, size_t j, size_t i)
{
	struct apply_rc *a = ud;

	return pconf_responder_equal(a->d->responders[j]->cfg,
				     &a->conf->responders[i]);
}

static int resp_make(void *ud, size_t i)
{
	struct apply_rc *a = ud;

	return responder_new(&a->nr[i], a->d->loop, &a->conf->responders[i]);
}

static void resp_unmake(void *ud, size_t i)
{
	struct apply_rc *a = ud;

	responder_free(a->nr[i]);
}

static void resp_keep(void *ud, size_t j, size_t i)
{
	struct apply_rc *a = ud;

	a->nr[i] = a->d->responders[j];
	a->nr[i]->cfg = &a->conf->responders[i];
}

static void resp_drop(void *ud, size_t j)
{
	struct responder *r = ((struct apply_rc *)ud)->d->responders[j];

	plog(PLOG_INFO, "responder %s: removed", r->cfg->label);
	responder_free(r);
}

static void resp_go(void *ud, size_t i)
{
	struct responder *r = ((struct apply_rc *)ud)->nr[i];

	plog(PLOG_INFO, "responder %s: started", r->cfg->label);
	responder_start(r);
}

static const struct reconcile_ops resp_ops = {
	.key = NULL, /* unnamed: the first equal one */
	.same = resp_same,
	.make = resp_make,
	.unmake = resp_unmake,
	.keep = resp_keep,
	.drop = resp_drop,
	.start = resp_go,
};

/* The mesh of conf, with the peers its file had (probed_load()): the
 * same keys keep the running one (its peers' probes and counters); other
 * keys start it afresh. */
static void apply_mesh(struct probed *d, struct pconf *conf,
		       struct mesh_list *peers)
{
	if (d->mesh && conf->mesh &&
	    json_equal(d->mesh->cfg->raw, conf->mesh->raw)) {
		d->mesh->cfg = conf->mesh;
		mesh_set_peers(d->mesh, peers);
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
	mesh_start(d->mesh, peers);
}

/* conf in place of the running configuration: its responders and probes
 * (reconcile.h), all made before any is changed, so that a failure
 * leaves the running set as it was; then its mesh. */
static int apply(struct probed *d, struct pconf *conf,
		 struct mesh_list *peers)
{
	struct apply_rc a = { d, conf, NULL, NULL };
	struct reconcile rr, pr;

	a.nr = calloc(conf->nresponders + 1, sizeof(*a.nr));
	a.np = calloc(conf->nprobes + 1, sizeof(*a.np));
	if (!a.nr || !a.np ||
	    reconcile_plan(&rr, d->nresponders, conf->nresponders, &resp_ops,
			   &a))
		goto fail;
	/* (range-checked: only out of memory fails; it forgets the names
	 * kept, which a reload looks up again) */
	if (evr_loop_set_lookups(d->loop, &conf->dns) ||
	    reconcile_plan(&pr, d->nprobes, conf->nprobes, &probe_ops, &a)) {
		reconcile_abort(&rr);
		goto fail;
	}
	/* the removed responders first: a changed one's port is free for
	 * its successor */
	reconcile_commit(&rr);
	free(d->responders);
	d->responders = a.nr;
	d->nresponders = conf->nresponders;
	reconcile_commit(&pr);
	free(d->probes);
	d->probes = a.np;
	d->nprobes = conf->nprobes;
	apply_mesh(d, conf, peers);
	if (runring_resize(&d->runs, conf->status.runs))
		plog(PLOG_WARN, "status: out of memory, the last %u runs "
		     "kept", d->runs.cap);
	pconf_free(d->conf);
	d->conf = conf;
	plog(PLOG_INFO, "configuration %s: %zu probe%s (%zu added, %zu "
	     "removed, %zu unchanged)", d->conf_file, d->nprobes,
	     PLOG_S(d->nprobes), pr.added, pr.removed, pr.kept_n);
	if (rr.added || rr.removed || rr.kept_n)
		plog(PLOG_INFO, "configuration %s: %zu responder%s (%zu "
		     "added, %zu removed, %zu unchanged)", d->conf_file,
		     d->nresponders, PLOG_S(d->nresponders), rr.added,
		     rr.removed, rr.kept_n);
	return 0;
fail:
	free(a.nr);
	free(a.np);
	return -1;
}

static void say_log(void *ud, const char *msg)
{
	(void)ud;
	plog(PLOG_ERR, "%s", msg);
}

static void say_stderr(void *ud, const char *msg)
{
	(void)ud;
	fprintf(stderr, "evrdma-probed: %s\n", msg);
}

static void reload(struct probed *d)
{
	struct mesh_list peers;
	struct pconf *conf;
	char err[512];
	int r;

	r = probed_load(d->conf_file, &conf, &peers, say_log, NULL, err,
			sizeof(err));
	if (r) {
		/* the running mesh's own file: its read counted as failed */
		if (r == LOAD_PEERS && d->mesh &&
		    !strcmp(conf->mesh->peers_file, d->mesh->cfg->peers_file))
			mesh_file_failed(d->mesh, &peers);
		if (r == LOAD_PEERS)
			pconf_free(conf);
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
	if (memcmp(&conf->http, &d->conf->http, sizeof(conf->http)))
		plog(PLOG_WARN, "reload: new \"http\" limits take effect at "
		     "the next start only");
	if (apply(d, conf, &peers)) {
		mesh_list_free(&peers);
		pconf_free(conf);
		d->md.reload_failures++;
		d->md.last_reload_ok = 0;
		plog(PLOG_ERR, "reload failed: out of memory; the running "
		     "configuration stays");
		return;
	}
	mesh_list_free(&peers); /* taken by the mesh, unless it has none */
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
	probe_set_runs(NULL);
	runring_fini(&d->runs);
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

/* The configuration could not be loaded (ret, err saying why): said on
 * stderr, before a start or as --check-config's verdict. */
static int load_failed(int ret, struct pconf *conf, const char *err)
{
	if (ret == LOAD_PEERS)
		pconf_free(conf);
	fprintf(stderr, "evrdma-probed: %s\n", err);
	return EXIT_CONFIG;
}

/* --check-config's verdict on a configuration that loaded: what the
 * daemon would run, then conf and peers freed. */
static int config_ok(const char *file, struct pconf *conf,
		     struct mesh_list *peers)
{
	printf("evrdma-probed: %s: ok, %zu probe%s, HTTP on %s port "
	       "%u", file, conf->nprobes, PLOG_S(conf->nprobes),
	       conf->listen_addr, conf->listen_port);
	if (conf->nresponders)
		printf(", %zu responder%s", conf->nresponders,
		       PLOG_S(conf->nresponders));
	if (conf->mesh)
		printf(", a mesh of %zu peer%s (%zu of this host)",
		       peers->n, PLOG_S(peers->n), peers->own);
	if (conf->mesh && conf->mesh->group_by)
		printf(", selected of %zu by \"%s\" (%zu groups%s)",
		       peers->listed, conf->mesh->group_by,
		       peers->groups, peers->self_labels ? "" :
		       "; this host not in the file");
	printf("\n");
	mesh_list_free(peers);
	pconf_free(conf);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct probed d;
	struct mesh_list peers;
	struct pconf *conf;
	char err[512];
	int check = 0, use_syslog = 0, ret, listening;
	struct timespec ts;

	memset(&d, 0, sizeof(d));
	d.conf_file = DEFAULT_CONF;
	ret = parse_args(argc, argv, &d, &check, &use_syslog);
	if (ret >= 0)
		return ret;
	/* --check-config and the start: the same check, the same verdict */
	ret = probed_load(d.conf_file, &conf, &peers, say_stderr, NULL, err,
			  sizeof(err));
	if (ret)
		return load_failed(ret, conf, err);
	if (check)
		return config_ok(d.conf_file, conf, &peers);
	plog_syslog(use_syslog);
	signal(SIGPIPE, SIG_IGN);
	clock_gettime(CLOCK_REALTIME, &ts);
	d.md.version = PACKAGE_VERSION;
	d.md.start_ts = ts.tv_sec + ts.tv_nsec / 1e9;
	d.md.last_reload_ok = 1;
	if (gethostname(d.host, sizeof(d.host) - 1))
		snprintf(d.host, sizeof(d.host), "localhost");
	runring_init(&d.runs, 0); /* apply() sizes it */
	probe_set_runs(&d.runs);

	ret = EXIT_LOCAL;
	d.evl = ev_default_loop(EVFLAG_AUTO);
	if (!d.evl || evr_loop_new(&d.loop, d.evl)) {
		plog(PLOG_ERR, "cannot create the event loop");
		d.loop = NULL;
		goto out;
	}
	d.md.loop = d.loop;
	/* The signals are ours before the port listens: a supervisor (or a
	 * test) that sees the port and sends SIGTERM at once gets a clean
	 * stop, not the default action half-way through the start.  A
	 * signal that comes before ev_run() waits in libev until it runs. */
	ev_signal_init(&d.hup_w, signal_cb, SIGHUP);
	ev_signal_init(&d.term_w, signal_cb, SIGTERM);
	ev_signal_init(&d.int_w, signal_cb, SIGINT);
	d.hup_w.data = d.term_w.data = d.int_w.data = &d;
	ev_signal_start(d.evl, &d.hup_w);
	ev_signal_start(d.evl, &d.term_w);
	ev_signal_start(d.evl, &d.int_w);
	/* 1: its address is not on this host yet, tried again (logged) */
	listening = http_open(&d.http, d.evl, conf->listen_addr,
			      conf->listen_port, &conf->http, page, &d, err,
			      sizeof(err));
	if (listening < 0) {
		plog(PLOG_ERR, "%s", err);
		ret = EXIT_LISTEN;
		goto out;
	}
	d.md.http = &d.http.st;
	/* d.conf is NULL: apply() starts every probe */
	d.conf = NULL;
	if (apply(&d, conf, &peers)) {
		plog(PLOG_ERR, "out of memory");
		goto out;
	}
	conf = NULL;
	if (!listening)
		plog(PLOG_INFO, "serving /metrics on %s port %u, pid %ld",
		     d.conf->listen_addr, d.conf->listen_port, (long)getpid());
	ev_run(d.evl, 0);
	ret = EXIT_OK;
out:
	mesh_list_free(&peers);
	pconf_free(conf);
	shutdown_all(&d);
	if (ret == EXIT_OK)
		plog(PLOG_INFO, "stopped");
	plog_syslog(0);
	return ret;
}
