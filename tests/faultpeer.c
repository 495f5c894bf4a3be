/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A misbehaving rstream client for the fault campaigns (tests/e2e/faults.sh
 * over TCP, tests/rxe/guest-faults.sh over rsockets).  Built twice from
 * this file: faultpeer speaks kernel TCP, rsfaultpeer (FP_RSOCKETS) the
 * same calls through librdmacm's rsockets.  Not a test by itself.
 *
 *   faultpeer cycles    HOST PORT N     N connect/abort cycles, rotating
 *                                       through the abort points below
 *   faultpeer hold      HOST PORT N SECS  open N connections, send nothing,
 *                                       hold them SECS seconds
 *   faultpeer garbage   HOST PORT SECS  random bytes instead of the HELLO
 *   faultpeer badplan   HOST PORT SECS  HELLO, then random bytes as the plan
 *   faultpeer badverify HOST PORT SECS  upstream's -T v wire, 50 good
 *                                       64-byte round trips, then garbage
 *   faultpeer half      HOST PORT SECS  a negotiated run that stops in the
 *                                       middle of a message and hangs
 *   faultpeer slowread  HOST PORT SECS  a negotiated run of 1 MB messages
 *                                       whose replies it reads at 256 KB/s
 *   faultpeer bigplan   HOST PORT SECS SIZE  a plan of one SIZE-byte
 *                                       transfer, sent and read back through
 *                                       a 1 MB buffer (a hostile client that
 *                                       costs itself nothing); prints
 *                                       "echoed SIZE bytes" or "refused
 *                                       status S limit L"
 *
 * Each single-connection mode then waits (at most SECS) for the server to
 * close and prints one line: "server closed after MS ms" or "held SECS s
 * (server did not close)", plus what it saw.  cycles prints how many
 * cycles reached each abort point.  Exit 0 when the peer behaved as
 * scripted (every connect accepted, every reply as expected), 1 if not.
 * An alarm bounds every run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef FP_RSOCKETS
#include <rdma/rsocket.h>
#define P_socket rsocket
#define P_connect rconnect
#define P_send(f, b, l) rsend(f, b, l, 0)
#define P_recv rrecv
#define P_close rclose
#define P_shutdown rshutdown
#define P_setsockopt rsetsockopt
#define P_poll rpoll
#else
#define P_socket socket
#define P_connect connect
#define P_send(f, b, l) send(f, b, l, MSG_NOSIGNAL)
#define P_recv recv
#define P_close close
#define P_shutdown shutdown
#define P_setsockopt setsockopt
#define P_poll poll
#endif

static const char HELLO[16] = "evrdma:hello:v1\n";
static const char ACK[16] = "evrdma:ack---v1\n";
static struct sockaddr_in dst;
static unsigned rnd = 12345;

static uint8_t rbyte(void)
{
	rnd = rnd * 1103515245u + 12345u;
	return (uint8_t)(rnd >> 16);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int dial(void)
{
	int fd = P_socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (P_connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		P_close(fd);
		return -1;
	}
#ifndef FP_RSOCKETS
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
#else
	(void)one;
#endif
	return fd;
}

/* An abortive close: RST over TCP (linger 0); rsockets has no such
 * thing, its close tears the queue pair down at once anyway. */
static void rst(int fd)
{
#ifndef FP_RSOCKETS
	struct linger l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
#endif
	if (getenv("FAULTPEER_TRACE"))
		fprintf(stderr, "abort: close\n");
	P_close(fd);
	if (getenv("FAULTPEER_TRACE"))
		fprintf(stderr, "abort: closed\n");
}

static int xsend(int fd, const void *b, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = P_send(fd, (const char *)b + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static int xrecv(int fd, void *b, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = P_recv(fd, (char *)b + off, len - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static void put16(uint8_t *p, unsigned v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

/* HELLO, ACK, a one-test plan, its reply (accepted), then the sync. */
static int negotiate(int fd, uint32_t size, uint32_t count, uint32_t iters)
{
	uint8_t m[32], r[16];

	memset(m, 0, sizeof(m));
	memcpy(m, "EVPL", 4);
	put16(m + 4, 1);        /* version */
	put16(m + 8, 1);        /* ntests */
	put16(m + 12, 1);       /* conn_total */
	put32(m + 16, size);
	put32(m + 20, count);
	put32(m + 24, iters);   /* kind 0: custom */
	if (xsend(fd, HELLO, 16) || xrecv(fd, r, 16) || memcmp(r, ACK, 16))
		return -1;
	if (xsend(fd, m, 32) || xrecv(fd, r, 16) || memcmp(r, "EVPR", 4) ||
	    r[4] | r[5] | r[6] | r[7])
		return -1;
	memset(m, 0, 16);
	return xsend(fd, m, 16) || xrecv(fd, r, 16) ? -1 : 0;
}

/* Read and drop until the peer closes (1), SECS pass (0) or an error. */
static int wait_close(int fd, double secs, long *ms)
{
	long t0 = now_ms(), end = t0 + (long)(secs * 1000);
	static char sink[65536];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (now_ms() < end) {
		p.revents = 0;
		if (P_poll(&p, 1, 100) <= 0)
			continue;
		n = P_recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			*ms = now_ms() - t0;
			return 1;
		}
	}
	*ms = now_ms() - t0;
	return 0;
}

static int report(int fd, double secs)
{
	long ms;

	if (wait_close(fd, secs, &ms))
		printf("server closed after %ld ms\n", ms);
	else
		printf("held %.0f s (server did not close)\n", secs);
	P_close(fd);
	return 0;
}

/* ---- cycles: connect, then abort at one of these points ---- */

static const char *const point_name[] = {
	"close before any byte", "RST before any byte", "RST mid-HELLO",
	"RST after the ACK", "close mid-plan", "RST mid-message",
	"close mid-message after an iteration", "RST mid-upstream-sync",
	"RST mid-upstream 64_lat", "half-close after HELLO, server closes",
};
#define NPOINTS (sizeof(point_name) / sizeof(point_name[0]))

static int cycle(int k, uint8_t *buf)
{
	int fd = dial();
	long ms;

	if (fd < 0)
		return -1;
	switch (k) {
	case 0:
		P_close(fd);
		return 0;
	case 1:
		rst(fd);
		return 0;
	case 2:
		if (xsend(fd, HELLO, 7))
			goto bad;
		rst(fd);
		return 0;
	case 3:
		if (xsend(fd, HELLO, 16) || xrecv(fd, buf, 16) ||
		    memcmp(buf, ACK, 16))
			goto bad;
		rst(fd);
		return 0;
	case 4:
		if (xsend(fd, HELLO, 16) || xrecv(fd, buf, 16) ||
		    xsend(fd, "EVPL\0\1", 6))
			goto bad;
		P_close(fd);
		return 0;
	case 5:
		if (negotiate(fd, 4096, 4, 100) || xsend(fd, buf, 6000))
			goto bad;
		rst(fd);
		return 0;
	case 6:
		if (negotiate(fd, 4096, 4, 100) || xsend(fd, buf, 16384) ||
		    xrecv(fd, buf, 16384) || xsend(fd, buf, 2048))
			goto bad;
		P_close(fd);
		return 0;
	case 7: /* an upstream client: the sync, cut short */
		if (xsend(fd, buf, 9))
			goto bad;
		rst(fd);
		return 0;
	case 8: /* an upstream default run, cut inside its first test */
		memset(buf, 0, 16);
		if (xsend(fd, buf, 16) || xrecv(fd, buf, 16) ||
		    xsend(fd, buf, 64) || xrecv(fd, buf, 64) ||
		    xsend(fd, buf, 30))
			goto bad;
		rst(fd);
		return 0;
	case 9: /* the server must notice the EOF and close by itself */
		if (xsend(fd, HELLO, 16) || xrecv(fd, buf, 16))
			goto bad;
		P_shutdown(fd, SHUT_WR);
		if (!wait_close(fd, 30, &ms))
			goto bad;
		P_close(fd);
		return 0;
	}
bad:
	rst(fd);
	return -1;
}

struct tally {
	long done[NPOINTS], failed, hung;
	long cur; /* the cycle under way, for the hang report */
};

static void run_cycles(struct tally *t, long from, long to, uint8_t *buf)
{
	long i;
	unsigned k;

	for (i = from; i < to; i++) {
		k = (unsigned)(i % NPOINTS);
		if (getenv("FAULTPEER_POINT")) /* one abort point only */
			k = (unsigned)atoi(getenv("FAULTPEER_POINT")) % NPOINTS;
		t->cur = i;
		if (getenv("FAULTPEER_TRACE"))
			fprintf(stderr, "cycle %ld: %s\n", i, point_name[k]);
		if (cycle((int)k, buf)) {
			if (t->failed++ < 5)
				fprintf(stderr, "faultpeer: cycle %ld (%s) "
					"failed: %s\n", i, point_name[k],
					strerror(errno));
		} else {
			t->done[k]++;
		}
	}
}

#ifdef FP_RSOCKETS
/* Wait for a child at most ms (forever if ms < 0): 1 if it was reaped. */
static int reap(pid_t pid, long ms, int *st)
{
	long t0 = now_ms();
	pid_t r;

	for (;;) {
		r = waitpid(pid, st, ms < 0 ? 0 : WNOHANG);
		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
		if (ms >= 0 && now_ms() - t0 >= ms)
			return 0;
		if (ms >= 0)
			usleep(20000);
	}
}

static void cat_file(const char *path, const char *label)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		fprintf(stderr, "  %s: %s%s", label, line,
			strchr(line, '\n') ? "" : "\n");
		label = "   ";
	}
	fclose(f);
}

/* Where a hung child waits: each thread's system call, its wait channel,
 * kernel stack and the files its fds are, then every QP's state.  Seen
 * from outside, so the child stays exactly where it hung. */
static void hang_report(pid_t pid, long cycle)
{
	char p[96], q[128], l[256];
	long tid, fdn;
	ssize_t n;

	fprintf(stderr, "faultpeer: hang at cycle %ld (%s), pid %d:\n",
		cycle, point_name[cycle % NPOINTS], (int)pid);
	/* every line below is indented: the per-point table is not */
	for (tid = pid; tid < pid + 8; tid++) {
		snprintf(p, sizeof(p), "/proc/%d/task/%ld", (int)pid, tid);
		if (access(p, F_OK))
			continue;
		fprintf(stderr, " thread %ld\n", tid);
		snprintf(q, sizeof(q), "%s/syscall", p);
		cat_file(q, "syscall");
		snprintf(q, sizeof(q), "%s/wchan", p);
		cat_file(q, "wchan");
		snprintf(q, sizeof(q), "%s/stack", p);
		cat_file(q, "stack");
	}
	for (fdn = 0; fdn < 32; fdn++) {
		snprintf(p, sizeof(p), "/proc/%d/fd/%ld", (int)pid, fdn);
		n = readlink(p, l, sizeof(l) - 1);
		if (n > 0) {
			l[n] = 0;
			fprintf(stderr, "  fd %ld -> %s\n", fdn, l);
		}
	}
	fflush(stderr);
	if (system("(rdma resource show qp; rdma resource show cm_id) 2>&1 | "
		   "sed 's/^/  /' 1>&2"))
		fprintf(stderr, "  (rdma resource: not available)\n");
}
#endif

static int do_cycles(long n)
{
	struct tally *t;
	long t0 = now_ms(), total = 0;
	uint8_t *buf = calloc(1, 1 << 16);
	unsigned k;

	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!buf || t == MAP_FAILED)
		return 1;
	memset(t, 0, sizeof(*t));
#ifdef FP_RSOCKETS
	/* rsockets' rclose() waits for its DISCONNECT to complete, which
	 * can take very long (see tests/rxe/guest-faults.sh): run the
	 * cycles in children of 10, each bounded by an alarm, and count
	 * the ones that had to be killed rather than hang here. */
	{
		long from;
		int st;
		pid_t pid;

		for (from = 0; from < n; from += 10) {
			pid = fork();
			if (pid < 0)
				return 1;
			if (!pid) {
				alarm(60); /* the parent's 30 s comes first */
				run_cycles(t, from, from + 10 < n ? from + 10 : n,
					   buf);
				_exit(0);
			}
			if (!reap(pid, 30000, &st)) {
				hang_report(pid, t->cur);
				kill(pid, SIGKILL);
				reap(pid, -1, &st);
			}
			if (!WIFEXITED(st)) {
				t->hung++;
				fprintf(stderr, "faultpeer: cycles %ld to %ld: "
					"killed by signal %d (hung in a close "
					"at cycle %ld, %s)\n", from, from + 9,
					WIFSIGNALED(st) ? WTERMSIG(st) : 0,
					t->cur, point_name[t->cur % NPOINTS]);
			}
		}
	}
#else
	run_cycles(t, 0, n, buf);
#endif
	for (k = 0; k < NPOINTS; k++) {
		printf("%-40s %ld\n", point_name[k], t->done[k]);
		total += t->done[k];
	}
	if (t->hung)
		printf("batches of 10 killed after hanging 30 s: %ld\n", t->hung);
	printf("cycles %ld failed %ld in %ld ms\n", n, t->failed,
	       now_ms() - t0);
	free(buf);
	/* (a batch killed while it hung is counted apart, not failed) */
	return t->failed ? 1 : 0;
}

static int do_hold(long n, double secs)
{
	int *fds = calloc((size_t)n, sizeof(int));
	long i, k = 0;

	if (!fds)
		return 1;
	for (i = 0; i < n; i++) {
		fds[i] = dial();
		if (fds[i] >= 0)
			k++;
	}
	printf("connected %ld of %ld\n", k, n);
	fflush(stdout);
	usleep((useconds_t)(secs * 1e6));
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			P_close(fds[i]);
	free(fds);
	return k == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	const char *mode;
	double secs;
	long i, n;
	int fd;

	if (argc < 5) {
		fprintf(stderr, "usage: faultpeer MODE HOST PORT ARGS...\n");
		return 2;
	}
	mode = argv[1];
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons((unsigned short)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1)
		return 2;
	rnd ^= (unsigned)getpid();
	if (!strcmp(mode, "cycles")) {
		n = atol(argv[4]);
		/* as the caller's bound: 10 minutes plus a second a cycle
		 * (a 10,000-cycle rsockets run takes 10-35 minutes) */
		alarm(600 + (unsigned)(n > 0 ? n : 0));
		return do_cycles(n);
	}
	if (!strcmp(mode, "hold")) {
		if (argc < 6)
			return 2;
		secs = atof(argv[5]);
		alarm((unsigned)secs + 120);
		return do_hold(atol(argv[4]), secs);
	}
	secs = atof(argv[4]);
	alarm((unsigned)secs + 60);
	fd = dial();
	if (fd < 0) {
		perror("faultpeer: connect");
		return 1;
	}
	for (i = 0; i < (long)sizeof(buf); i++)
		buf[i] = rbyte();
	if (!strcmp(mode, "garbage")) {
		/* not a HELLO, and not upstream's pattern either */
		if (xsend(fd, buf, 100000))
			printf("send failed: %s\n", strerror(errno));
	} else if (!strcmp(mode, "badplan")) {
		uint8_t r[16];

		if (xsend(fd, HELLO, 16) || xrecv(fd, r, 16) ||
		    memcmp(r, ACK, 16)) {
			printf("no ACK\n");
			P_close(fd);
			return 1;
		}
		if (xsend(fd, buf, 16 * 40))
			printf("send failed: %s\n", strerror(errno));
		else if (!xrecv(fd, r, 16))
			printf("reply %.4s status %u\n", (char *)r,
			       (unsigned)r[7]);
	} else if (!strcmp(mode, "badverify")) {
		/* upstream -T v: its byte pattern from 0, sync included */
		uint8_t m[64], c = 0;
		int j;

		for (j = 0; j < 16; j++)
			m[j] = c++;
		if (xsend(fd, m, 16) || xrecv(fd, m, 16))
			goto broken;
		for (n = 0; n < 50; n++) {
			for (j = 0; j < 64; j++)
				m[j] = c++;
			if (xsend(fd, m, 64) || xrecv(fd, m, 64))
				goto broken;
		}
		printf("50 good round trips\n");
		/* the garbage is seeded by the pid: make its first byte
		 * differ from the pattern's, or 1 run in 256 would fail one
		 * byte later than the test expects */
		buf[0] = (uint8_t)~c;
		if (xsend(fd, buf, 64))
			goto broken;
	} else if (!strcmp(mode, "half")) {
		if (negotiate(fd, 100000, 1, 1000) || xsend(fd, buf, 50000))
			goto broken;
		printf("sent half a message\n");
	} else if (!strcmp(mode, "bigplan")) {
		uint32_t size = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 0) : 0;
		uint8_t m[32], r[16];
		uint32_t st, lim;
		size_t k;

		memset(m, 0, sizeof(m));
		memcpy(m, "EVPL", 4);
		put16(m + 4, 1);
		put16(m + 8, 1);
		put16(m + 12, 1);
		put32(m + 16, size);
		put32(m + 20, 1);
		put32(m + 24, 1);
		if (xsend(fd, HELLO, 16) || xrecv(fd, r, 16) ||
		    memcmp(r, ACK, 16) || xsend(fd, m, 32) || xrecv(fd, r, 16) ||
		    memcmp(r, "EVPR", 4))
			goto broken;
		st = (uint32_t)r[4] << 24 | r[5] << 16 | r[6] << 8 | r[7];
		lim = (uint32_t)r[8] << 24 | r[9] << 16 | r[10] << 8 | r[11];
		if (st) {
			printf("refused status %u limit %u\n", st, lim);
			fflush(stdout);
			return report(fd, secs);
		}
		memset(m, 0, 16);
		if (xsend(fd, m, 16) || xrecv(fd, r, 16))
			goto broken;
		for (k = 0; k < size; k += sizeof(buf))
			if (xsend(fd, buf, size - k < sizeof(buf) ?
				  size - k : sizeof(buf)))
				goto broken;
		for (k = 0; k < size; k += sizeof(buf))
			if (xrecv(fd, buf, size - k < sizeof(buf) ?
				  size - k : sizeof(buf)))
				goto broken;
		printf("echoed %u bytes\n", size);
		P_shutdown(fd, SHUT_RDWR);
	} else if (!strcmp(mode, "slowread")) {
		int rb = 65536;
		long got = 0, t0;
		ssize_t r;

		P_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
		if (negotiate(fd, 1 << 20, 8, 4) ||
		    xsend(fd, buf, 1 << 20))
			goto broken;
		for (n = 1; n < 8; n++)
			if (xsend(fd, buf, 1 << 20))
				goto broken;
		printf("sent 8 MB\n");
		fflush(stdout);
		/* 16 KB every 62.5 ms, for SECS */
		t0 = now_ms();
		while (now_ms() - t0 < (long)(secs * 1000)) {
			r = P_recv(fd, buf, 16384, MSG_DONTWAIT);
			if (r == 0)
				break;
			if (r > 0)
				got += r;
			usleep(62500);
		}
		printf("read %ld bytes in %ld ms\n", got, now_ms() - t0);
		rst(fd);
		return 0;
	} else {
		fprintf(stderr, "faultpeer: unknown mode %s\n", mode);
		return 2;
	}
	fflush(stdout);
	return report(fd, secs);
broken:
	printf("the server broke the exchange: %s\n", strerror(errno));
	fflush(stdout);
	return report(fd, secs);
}
