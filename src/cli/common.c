/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "evrdma/mcast.h"

static void trace_line(void *ud, const char *line)
{
	fprintf(stderr, "%s: trace: %s\n", (const char *)ud, line);
}

static void signal_cb(struct ev_loop *l, ev_signal *w, int revents)
{
	struct cli_loop *cl = w->data;

	if (!cl->signum)
		cl->signum = w->signum;
	if (cl->on_signal)
		cl->on_signal(cl->ud);
}

int cli_loop_open(struct cli_loop *cl, const char *prog, int trace)
{
	memset(cl, 0, sizeof(*cl));
	cl->prog = prog;
	/* The engines never raise SIGPIPE (MSG_NOSIGNAL), and nothing else
	 * here should kill the process for a closed peer either. */
	signal(SIGPIPE, SIG_IGN);
	cl->evl = ev_default_loop(EVFLAG_AUTO);
	if (!cl->evl || evr_loop_new(&cl->loop, cl->evl)) {
		fprintf(stderr, "%s: cannot create the event loop\n", prog);
		return -1;
	}
	if (trace)
		evr_loop_set_trace(cl->loop, trace_line, (void *)prog);
	ev_signal_init(&cl->sigint_w, signal_cb, SIGINT);
	ev_signal_init(&cl->sigterm_w, signal_cb, SIGTERM);
	cl->sigint_w.data = cl;
	cl->sigterm_w.data = cl;
	return 0;
}

void cli_loop_signals(struct cli_loop *cl, void (*on_signal)(void *ud),
		      void *ud)
{
	cl->on_signal = on_signal;
	cl->ud = ud;
	ev_signal_start(cl->evl, &cl->sigint_w);
	ev_signal_start(cl->evl, &cl->sigterm_w);
}

/* Once the program is on its way out, SIGINT and SIGTERM are ignored, not
 * back to their default action (what ev_signal_stop leaves): one kill to
 * the process group, as timeout(1), a shell or a service manager sends
 * next to the signal to the process itself, is two SIGTERMs, and the
 * second, arriving while the program frees, prints and exits (under ASan,
 * tens of milliseconds for the leak check), killed it with 143 instead
 * of its own exit status.  The signals are blocked across the switch, so
 * none falls in between; one pending then is discarded (ignored). */
static void signals_stop(struct cli_loop *cl)
{
	sigset_t ss, old;

	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, &old);
	ev_signal_stop(cl->evl, &cl->sigint_w);
	ev_signal_stop(cl->evl, &cl->sigterm_w);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void cli_loop_finish(struct cli_loop *cl)
{
	signals_stop(cl);
	evr_loop_break(cl->loop);
}

void cli_loop_close(struct cli_loop *cl)
{
	if (cl->evl)
		signals_stop(cl);
	if (cl->loop)
		evr_loop_free(cl->loop);
	cl->loop = NULL;
	if (cl->evl)
		ev_loop_destroy(cl->evl);
	cl->evl = NULL;
}

const char *cli_signame(const struct cli_loop *cl)
{
	return cl->signum == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* A closed one of descriptors 0, 1, 2: /dev/null, opened so that using
 * it fails (EBADF) as the closed descriptor did. */
static void std_fds_open(void)
{
	int fd, nfd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		nfd = open("/dev/null", fd ? O_RDONLY : O_WRONLY);
		if (nfd < 0 || nfd == fd)
			continue;
		dup2(nfd, fd);
		close(nfd);
	}
}

/* stdout's writes: all of len, or fewer and the errno kept (stdio then
 * marks the stream in error and forgets why). */
static ssize_t out_write(void *cookie, const char *buf, size_t len)
{
	struct cli_out *o = cookie;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(STDOUT_FILENO, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!o->werr)
				o->werr = n < 0 ? errno : EIO;
			break;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int out_close(void *cookie)
{
	struct cli_out *o = cookie;

	if (close(STDOUT_FILENO) && errno != EINTR) {
		if (!o->werr)
			o->werr = errno;
		return -1;
	}
	return 0;
}

int cli_out_init(struct cli_out *o)
{
	static const cookie_io_functions_t io = {
		.write = out_write,
		.close = out_close,
	};
	FILE *f;

	std_fds_open();
	signal(SIGPIPE, SIG_IGN);
	f = fopencookie(o, "w", io);
	if (!f)
		return -ENOMEM;
	/* line by line on a terminal, as stdio's own stdout */
	if (isatty(STDOUT_FILENO))
		setvbuf(f, NULL, _IOLBF, BUFSIZ);
	stdout = f;
	return 0;
}

static void out_failed(struct cli_out *o, int err)
{
	o->failed = 1;
	o->err = err ? err : EIO;
	fprintf(stderr, "%s: write error on standard output: %s\n", o->prog,
		strerror(o->err));
}

int cli_out_check(struct cli_out *o)
{
	/* the write's errno, kept by cli_out_init()'s stream; else the
	 * failed fflush's, if the caller checks right after it */
	if (!o->failed && ferror(stdout))
		out_failed(o, o->werr ? o->werr : errno);
	return o->failed;
}

int cli_out_close(struct cli_out *o, int status, int write_status)
{
	errno = 0;
	if (fflush(stdout) || ferror(stdout))
		cli_out_check(o);
	errno = 0;
	if (fclose(stdout) && !o->failed)
		out_failed(o, o->werr ? o->werr : errno);
	if (!o->failed || status)
		return status;
	if (write_status == CLI_WRITE_ERRNO)
		return -o->err & 0xff;
	return write_status;
}

FILE *cli_msg_open(struct cli_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->f = open_memstream(&m->buf, &m->len);
	return m->f ? m->f : stderr;
}

void cli_msg_close(struct cli_msg *m, char *first, size_t len,
		   const char *prog)
{
	size_t pl = prog ? strlen(prog) : 0;

	char *nl;

	if (len)
		first[0] = '\0';
	if (!m->f)
		return;
	fclose(m->f);
	if (m->buf && m->len) {
		fputs(m->buf, stderr);
		nl = strchr(m->buf, '\n');
		if (nl)
			*nl = '\0';
		/* the record's message is the line without the name */
		snprintf(first, len, "%s", pl && !strncmp(m->buf, prog, pl) &&
			 !strncmp(m->buf + pl, ": ", 2) ? m->buf + pl + 2 :
							  m->buf);
	}
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

int cli_argv_has(int argc, char **argv, const char *opt)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], opt))
			return 1;
	return 0;
}

void cli_mc_failure_str(const struct evr_mc_failure *f, char *buf,
			size_t len)
{
	if (f && f->code == -EVR_E_NOTSUP && len)
		snprintf(buf, len, "%s: -M (an AF_IB group) needs the RDMA "
			 "transport", f->msg ? f->msg : "");
	else
		evr_mc_failure_str(f, buf, len);
}
