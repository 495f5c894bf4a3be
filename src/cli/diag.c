/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "diag.h"
#include "jsonout.h"

void diag_line(char *buf, size_t len, const struct evr_hc_row *r)
{
	snprintf(buf, len, "%s: %s%s%s", evr_hostcheck_name(r->check),
		 r->fact, r->fix[0] ? "; " : "", r->fix);
}

void diag_memlock_raise(void)
{
	struct rlimit l;

	if (!getrlimit(RLIMIT_MEMLOCK, &l) && l.rlim_cur != l.rlim_max) {
		l.rlim_cur = l.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &l);
	}
}

/* Each failed check among those of mask: its line; the count. */
static int say(const char *prog, const struct evr_hc_report *rep,
	       unsigned mask, char *first, size_t len)
{
	char line[512];
	int i, n = 0;

	for (i = 0; i < EVR_HC_COUNT; i++) {
		if (!(mask & (1u << i)) ||
		    rep->rows[i].verdict != EVR_HC_FAIL)
			continue;
		diag_line(line, sizeof(line), &rep->rows[i]);
		fprintf(stderr, "%s: %s\n", prog, line);
		if (!n++ && first)
			snprintf(first, len, "%s", line);
	}
	return n;
}

int diag_preflight(const char *prog, const struct evr_hc_need *need,
		   int unowned_ok, char *first, size_t len)
{
	struct evr_hc_report rep;
	unsigned mask = ~0u;

	if (evr_hostcheck_run(NULL, need, &rep))
		return 0; /* the run will say what is wrong with the address */
	if (unowned_ok && need->addr && !rep.ifname[0])
		mask &= ~(1u << EVR_HC_ADDR_DEV);
	return say(prog, &rep, mask, first, len);
}

#define BIT(c) (1u << EVR_HC_##c)

/* Is where a call that locks memory: a verbs call, or a server's
 * accept, which makes the same? */
static int locks_memory(const char *where)
{
	return where && (!strncmp(where, "ibv_", 4) ||
			 !strncmp(where, "rdma_", 5) ||
			 !strcmp(where, "accept"));
}

/* ENOMEM from a call at where that locks memory: the memlock check's
 * line, or the kernel's word over the check's; 1 when a line was said. */
static int diag_memlock(const char *prog, const struct evr_hc_report *rep,
			const char *where, char *first, size_t len)
{
	const struct evr_hc_row *m = &rep->rows[EVR_HC_MEMLOCK];
	char line[512];

	if (say(prog, rep, BIT(MEMLOCK), first, len))
		return 1;
	/* the estimate fit, the kernel said otherwise: a limit there was,
	 * all the same (not with unlimited or CAP_IPC_LOCK: then it is the
	 * machine's memory) */
	if (strncmp(m->fact, "RLIMIT_MEMLOCK ", 15) ||
	    !strncmp(m->fact, "RLIMIT_MEMLOCK unlimited", 24))
		return 0;
	snprintf(line, sizeof(line), "memlock: %s: %s with %s; raise it: "
		 "ulimit -l unlimited, /etc/security/limits.conf \"USER - "
		 "memlock unlimited\", systemd LimitMEMLOCK=infinity%s", where,
		 strerror(ENOMEM), m->fact,
		 strstr(m->fact, "soft-iWARP") ? "" :
		 "; or grant CAP_IPC_LOCK");
	fprintf(stderr, "%s: %s\n", prog, line);
	if (first)
		snprintf(first, len, "%s", line);
	return 1;
}

int diag_failure(const char *prog, const struct evr_hc_need *need, int err,
		 const char *where, char *first, size_t len)
{
	struct evr_hc_report rep;

	/* out of descriptors: the failure's own words say so, and the
	 * checks, which open files, would misread the host */
	if (!err || err == -EMFILE || err == -ENFILE ||
	    evr_hostcheck_run(NULL, need, &rep))
		return 0;
	if (err == -ENOMEM && locks_memory(where))
		return diag_memlock(prog, &rep, where, first, len);
	if (err == -EPERM || err == -EACCES)
		return say(prog, &rep, BIT(VERBS_DEV) | BIT(RDMA_CM), first,
			   len) > 0;
	return say(prog, &rep, BIT(ADDR_DEV) | BIT(PORT) | BIT(GID) |
		   BIT(VERBS_DEV) | BIT(RDMA_CM), first, len) > 0;
}

/* One check's row of the hostcheck record, or NULL if out of memory. */
static json_t *hc_row_json(const struct evr_hc_row *r)
{
	json_t *c = json_object();

	if (!c)
		return NULL;
	json_object_set_new(c, "check",
			    json_string(evr_hostcheck_name(r->check)));
	json_object_set_new(c, "result", json_string(
		r->verdict == EVR_HC_OK ? "ok" :
		r->verdict == EVR_HC_FAIL ? "fail" : "skip"));
	json_object_set_new(c, "fact", json_string(r->fact));
	json_object_set_new(c, "fix", r->fix[0] ?
			    json_string(r->fix) : json_null());
	return c;
}

json_t *jo_hostcheck(const char *prog, const char *version,
		     const struct evr_hc_need *need,
		     const struct evr_hc_report *rep, int exit_status)
{
	json_t *o = jo_record("hostcheck"), *a = json_array(), *c;
	int i;

	if (!o || !a) {
		json_decref(o);
		json_decref(a);
		return NULL;
	}
	json_object_set_new(o, "tool", json_string(prog));
	json_object_set_new(o, "version", json_string(version));
	json_object_set_new(o, "address", need->addr ?
			    json_string(need->addr) : json_null());
	json_object_set_new(o, "rdma", json_boolean(need->rdma));
	json_object_set_new(o, "memlock_need_bytes",
			    json_integer((json_int_t)need->memlock));
	json_object_set_new(o, "device", rep->device[0] ?
			    json_string(rep->device) : json_null());
	json_object_set_new(o, "interface", rep->ifname[0] ?
			    json_string(rep->ifname) : json_null());
	for (i = 0; i < EVR_HC_COUNT; i++) {
		c = hc_row_json(&rep->rows[i]);
		if (c)
			json_array_append_new(a, c);
	}
	json_object_set_new(o, "checks", a);
	json_object_set_new(o, "failed", json_integer(rep->nfail));
	json_object_set_new(o, "exit_status", json_integer(exit_status));
	return o;
}

int diag_check_mode(FILE *out, const char *prog, const char *version,
		    const struct evr_hc_need *need, int json)
{
	struct evr_hc_report rep;
	int i, status;
	unsigned ok = 0, skip = 0;

	if (evr_hostcheck_run(NULL, need, &rep)) {
		fprintf(stderr, "%s: --check: %s: not an address, nor a name "
			"that resolves\n", prog,
			need->addr);
		if (json)
			jo_emit(out, jo_error("--check: not an address", 1));
		return 1;
	}
	status = rep.nfail ? DIAG_EXIT : 0;
	if (json) {
		jo_emit(out, jo_hostcheck(prog, version, need, &rep, status));
		return status;
	}
	fprintf(out, "%-15s %-6s %s\n", "check", "result", "fact / fix");
	for (i = 0; i < EVR_HC_COUNT; i++) {
		const struct evr_hc_row *r = &rep.rows[i];

		ok += r->verdict == EVR_HC_OK;
		skip += r->verdict == EVR_HC_SKIP;
		fprintf(out, "%-15s %-6s %s\n", evr_hostcheck_name(r->check),
			evr_hostcheck_verdict_str(r->verdict), r->fact);
		if (r->fix[0])
			fprintf(out, "%-15s %-6s fix: %s\n", "", "", r->fix);
	}
	fprintf(out, "%s: %u ok, %u failed, %u skipped%s%s\n", prog, ok,
		rep.nfail, skip, rep.nfail ? "" : ": this host can run it",
		rep.nfail ? ": this host cannot run it as it is" : "");
	fflush(out);
	return status;
}
