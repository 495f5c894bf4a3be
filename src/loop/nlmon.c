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

/* How long the support query waits for the kernel's reply: not at all.
 * Netlink requests are handled within the sender's send(), so the reply
 * is queued when it returns; the registry opens the monitor from the
 * loop, which must not block.  No reply: no monitor, the rescan. */
#define QUERY_MS 0

static const char *const kind_names[] = {
#define X(k) #k,
	EVR__NLMON_KINDS(X)
#undef X
};

const char *evr__nlmon_kind_name(enum evr__nlmon_kind k)
{
	return (unsigned)k <= EVR__NLMON_OTHER ? kind_names[k] : "?";
}

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

/* The next record of a run of N bytes at *P (a netlink message, HDR 16
 * bytes with a 32-bit length first; an attribute, HDR 4 bytes with a
 * 16-bit length first): its header into H, its payload into *PAY and
 * *PLEN, and *P and *N past it (and its padding to ALIGN).  1, 0 at the
 * end of the run, -1 when a length is out of range. */
static int next(const unsigned char **p, size_t *n, void *h, size_t hdr,
		size_t align, const unsigned char **pay, size_t *plen)
{
	size_t len, step;

	if (!*n)
		return 0;
	if (*n < hdr)
		return -1;
	memcpy(h, *p, hdr);
	if (hdr == sizeof(struct nlmsghdr))
		len = ((struct nlmsghdr *)h)->nlmsg_len;
	else
		len = ((struct nlattr *)h)->nla_len;
	if (len < hdr || len > *n)
		return -1;
	*pay = *p + hdr;
	*plen = len - hdr;
	step = (len + align - 1) & ~(align - 1);
	if (step >= *n) {
		*n = 0;
	} else {
		*p += step;
		*n -= step;
	}
	return 1;
}

#define NEXT_MSG(p, n, h, pay, plen) \
	next(p, n, h, NLMSG_HDRLEN, NLMSG_ALIGNTO, pay, plen)
/* an attribute run ends with padding of fewer bytes than a header */
#define NEXT_ATTR(p, n, a, pay, plen) \
	(*(n) < NLA_HDRLEN ? 0 : next(p, n, a, NLA_HDRLEN, NLA_ALIGNTO, pay, plen))

/* The monitor message's attributes (P, N bytes) into E: 0, or -1 when one
 * of them is malformed or the event type is missing. */
static int monitor_attrs(const unsigned char *p, size_t n,
			 struct evr__nlmon_event *e)
{
	const unsigned char *v;
	struct nlattr a;
	size_t vlen;
	int have_type = 0, r;

	memset(e, 0, sizeof(*e));
	while ((r = NEXT_ATTR(&p, &n, &a, &v, &vlen)) > 0) {
		switch (a.nla_type & NLA_TYPE_MASK) {
		case NLDEV_ATTR_EVENT_TYPE:
			if (!vlen)
				return -1;
			e->kind = v[0] < EVR__NLMON_OTHER ?
				  (enum evr__nlmon_kind)v[0] : EVR__NLMON_OTHER;
			have_type = 1;
			break;
		case NLDEV_ATTR_DEV_NAME:
			if (attr_str(v, vlen, e->dev, sizeof(e->dev)))
				return -1;
			break;
		case NLDEV_ATTR_NDEV_NAME:
			if (attr_str(v, vlen, e->netdev, sizeof(e->netdev)))
				return -1;
			break;
		default:
			break;
		}
	}
	return r < 0 || !have_type ? -1 : 0;
}

int evr__nlmon_parse(const void *buf, size_t len,
		     struct evr__nlmon_event *out, unsigned max)
{
	const unsigned char *p = buf, *v;
	struct nlmsghdr h;
	size_t vlen;
	int k = 0, r;

	/* the monitor's attributes follow the header (no family header in
	 * RDMA netlink) */
	while ((r = NEXT_MSG(&p, &len, &h, &v, &vlen)) > 0)
		if (h.nlmsg_type == NL_TYPE(NLDEV_CMD_MONITOR) &&
		    (unsigned)k < max) {
			if (monitor_attrs(v, vlen, &out[k]))
				return -1;
			k++;
		}
	return r < 0 ? -1 : k;
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
	const unsigned char *p, *m, *v;
	struct nlmsghdr h;
	struct nlattr a;
	size_t n, mlen, vlen;
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
	p = buf;
	n = (size_t)got;
	if (NEXT_MSG(&p, &n, &h, &m, &mlen) <= 0 ||
	    h.nlmsg_type != NL_TYPE(NLDEV_CMD_SYS_GET))
		return 0;
	while (NEXT_ATTR(&m, &mlen, &a, &v, &vlen) > 0)
		if ((a.nla_type & NLA_TYPE_MASK) == NLDEV_SYS_ATTR_MONITOR_MODE)
			return 1;
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
