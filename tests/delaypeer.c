/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A test peer for --percentiles: an rstream -T s server for one custom
 * test, speaking upstream's wire (16-byte sync from the client, 16 bytes
 * back, then per iteration: receive count transfers, send count back),
 * that sleeps a known delay before each reply.  A client's round trips
 * are then at least that long.
 *
 *   delaypeer PORT SIZE COUNT ITERS DELAY_US
 *
 * Serves one connection on 127.0.0.1 and exits 0, or 1 on any error;
 * gives up after 60 s whatever happens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int xfer(int fd, unsigned char *b, size_t len, int send_it)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send_it ? send(fd, b + off, len - off, MSG_NOSIGNAL) :
			      recv(fd, b + off, len - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static void sleep_us(unsigned long us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;
	unsigned long size, count, iters, delay, i = 0, k;
	unsigned char *buf, sync[16];
	int lfd, fd, one = 1;

	if (argc != 6) {
		fprintf(stderr, "usage: delaypeer PORT SIZE COUNT ITERS "
			"DELAY_US\n");
		return 1;
	}
	size = strtoul(argv[2], NULL, 10);
	count = strtoul(argv[3], NULL, 10);
	iters = strtoul(argv[4], NULL, 10);
	delay = strtoul(argv[5], NULL, 10);
	if (!size || size > (1u << 24) || !count || !iters)
		return 1;
	alarm(60);
	buf = malloc(size);
	if (!buf)
		return 1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1)) {
		perror("delaypeer: bind/listen");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return 1;
	close(lfd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (xfer(fd, sync, sizeof(sync), 0) || xfer(fd, sync, sizeof(sync), 1))
		goto bad;
	for (i = 0; i < iters; i++) {
		for (k = 0; k < count; k++)
			if (xfer(fd, buf, size, 0))
				goto bad;
		sleep_us(delay);
		for (k = 0; k < count; k++)
			if (xfer(fd, buf, size, 1))
				goto bad;
	}
	/* wait for the client's close */
	while (recv(fd, buf, size, 0) > 0)
		;
	close(fd);
	free(buf);
	return 0;
bad:
	fprintf(stderr, "delaypeer: connection failed at iteration %lu\n", i);
	close(fd);
	free(buf);
	return 1;
}
