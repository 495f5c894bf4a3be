/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kernel's RDMA netlink monitor (nlmon.h). */
#include "config.h"

#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nlmon.h"

/* The kernel's UAPI numbers (include/uapi/rdma/rdma_netlink.h, a stable
 * ABI); Debian 12's linux-libc-dev (6.1) has the group, the command and
 * the attributes only from 6.12 on. */
#define NL_GROUP_NOTIFY 4          /* RDMA_NL_GROUP_NOTIFY */
#define NLDEV_CMD_SYS_GET 6        /* RDMA_NLDEV_CMD_SYS_GET */
#define NLDEV_CMD_MONITOR 28       /* RDMA_NLDEV_CMD_MONITOR */
#define NLDEV_ATTR_DEV_NAME 2      /* RDMA_NLDEV_ATTR_DEV_NAME */
#define NLDEV_ATTR_NDEV_NAME 51    /* RDMA_NLDEV_ATTR_NDEV_NAME */
#define NLDEV_ATTR_EVENT_TYPE 102  /* RDMA_NLDEV_ATTR_EVENT_TYPE */
#define NLDEV_SYS_ATTR_MONITOR_MODE 103
#define NL_NLDEV 5                 /* RDMA_NL_NLDEV */
#define NL_TYPE(op) ((NL_NLDEV << 10) + (op))  /* RDMA_NL_GET_TYPE */

/* How long the support query waits for the kernel's reply: it answers
 * from the same system call on any kernel that has RDMA netlink. */
#define QUERY_MS 500

static const char *const kind_names[] = {
#define X(k) #k,
	EVR__NLMON_KINDS(X)
#undef X
};

const char *evr__nlmon_kind_name(enum evr__nlmon_kind k)
{
	return (unsigned)k <= EVR__NLMON_OTHER ? kind_names[k] : "?";
}

#define ALIGN4(n) (((n) + 3u) & ~3u)

/* A string attribute into OUT (OUTLEN bytes): 0, or -1 when it is not a
 * NUL-terminated string that fits. */
static int attr_str(const unsigned char *p, size_t n, char *out, size_t outlen)
{
	const unsigned char *nul = memchr(p, 0, n);

	if (!nul || (size_t)(nul - p) >= outlen)
		return -1;
	memcpy(out, p, (size_t)(nul - p) + 1);
	return 0;
}

/* The monitor message's attributes (P, N bytes) into E: 0, or -1 when one
 * of them is malformed or the event type is missing. */
static int monitor_attrs(const unsigned char *p, size_t n,
			 struct evr__nlmon_event *e)
{
	int have_type = 0;

	memset(e, 0, sizeof(*e));
	while (n >= sizeof(struct nlattr)) {
		struct nlattr a;
		size_t alen, step;

		memcpy(&a, p, sizeof(a));
		alen = a.nla_len;
		if (alen < sizeof(a) || alen > n)
			return -1;
		switch (a.nla_type & NLA_TYPE_MASK) {
		case NLDEV_ATTR_EVENT_TYPE:
			if (alen < sizeof(a) + 1)
				return -1;
			e->kind = p[sizeof(a)] < EVR__NLMON_OTHER ?
				  (enum evr__nlmon_kind)p[sizeof(a)] :
				  EVR__NLMON_OTHER;
			have_type = 1;
			break;
		case NLDEV_ATTR_DEV_NAME:
			if (attr_str(p + sizeof(a), alen - sizeof(a), e->dev,
				     sizeof(e->dev)))
				return -1;
			break;
		case NLDEV_ATTR_NDEV_NAME:
			if (attr_str(p + sizeof(a), alen - sizeof(a),
				     e->netdev, sizeof(e->netdev)))
				return -1;
			break;
		default:
			break;
		}
		step = ALIGN4(alen);
		if (step >= n)
			break;
		p += step;
		n -= step;
	}
	return have_type ? 0 : -1;
}

int evr__nlmon_parse(const void *buf, size_t len,
		     struct evr__nlmon_event *out, unsigned max)
{
	const unsigned char *p = buf;
	int k = 0;

	while (len >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		size_t mlen, step;

		memcpy(&h, p, sizeof(h));
		mlen = h.nlmsg_len;
		if (mlen < sizeof(h) || mlen > len)
			return -1;
		/* the monitor's attributes follow the header (no family
		 * header in RDMA netlink) */
		if (h.nlmsg_type == NL_TYPE(NLDEV_CMD_MONITOR) &&
		    (unsigned)k < max) {
			if (monitor_attrs(p + NLMSG_HDRLEN, mlen - NLMSG_HDRLEN,
					  &out[k]))
				return -1;
			k++;
		}
		step = NLMSG_ALIGN(mlen);
		if (step >= len)
			return k;
		p += step;
		len -= step;
	}
	/* bytes left that are no whole header */
	return len ? -1 : k;
}

long evr__nlmon_recv(int fd, void *buf, size_t len)
{
	struct sockaddr_nl from;
	socklen_t flen = sizeof(from);
	ssize_t n;

	memset(&from, 0, sizeof(from));
	n = recvfrom(fd, buf, len, MSG_DONTWAIT | MSG_TRUNC,
		     (struct sockaddr *)&from, &flen);
	if (n < 0)
		return -1;
	if (!n) {
		/* the kernel sends no empty datagram: the socket's end */
		errno = ECONNRESET;
		return -1;
	}
	/* a datagram larger than the buffer lost its end; one from user
	 * space (port other than the kernel's 0) is not the kernel's word */
	if ((size_t)n > len || (flen >= sizeof(from) &&
				(from.nl_family != AF_NETLINK || from.nl_pid)))
		return 0;
	return (long)n;
}

/* Whether the kernel's RDMA_NLDEV_CMD_SYS_GET reply names a monitor
 * mode: 1, 0, or -1 (errno). */
static int has_monitor(int fd)
{
	struct nlmsghdr req;
	unsigned char buf[4096];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	const unsigned char *p;
	size_t n, alen;
	long got;

	memset(&req, 0, sizeof(req));
	req.nlmsg_len = sizeof(req);
	req.nlmsg_type = NL_TYPE(NLDEV_CMD_SYS_GET);
	req.nlmsg_flags = NLM_F_REQUEST;
	req.nlmsg_seq = 1;
	if (send(fd, &req, sizeof(req), 0) < 0)
		return -1;
	for (;;) {
		int r = poll(&pfd, 1, QUERY_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!r)
				errno = ETIMEDOUT;
			return -1;
		}
		break;
	}
	got = evr__nlmon_recv(fd, buf, sizeof(buf));
	if (got < 0)
		return -1;
	if ((size_t)got < NLMSG_HDRLEN)
		return 0;
	{
		struct nlmsghdr h;

		memcpy(&h, buf, sizeof(h));
		if (h.nlmsg_type != NL_TYPE(NLDEV_CMD_SYS_GET) ||
		    h.nlmsg_len > (size_t)got || h.nlmsg_len < NLMSG_HDRLEN)
			return 0;
		p = buf + NLMSG_HDRLEN;
		n = h.nlmsg_len - NLMSG_HDRLEN;
	}
	while (n >= sizeof(struct nlattr)) {
		struct nlattr a;

		memcpy(&a, p, sizeof(a));
		alen = a.nla_len;
		if (alen < sizeof(a) || alen > n)
			return 0;
		if ((a.nla_type & NLA_TYPE_MASK) == NLDEV_SYS_ATTR_MONITOR_MODE)
			return 1;
		if (ALIGN4(alen) >= n)
			break;
		p += ALIGN4(alen);
		n -= ALIGN4(alen);
	}
	return 0;
}

int evr__nlmon_open(void)
{
	struct sockaddr_nl sa;
	int fd, grp = NL_GROUP_NOTIFY, r, e;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	r = has_monitor(fd);
	if (r <= 0) {
		if (!r)
			errno = ENOTSUP;
		goto fail;
	}
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
		       sizeof(grp)))
		goto fail;
	return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}
