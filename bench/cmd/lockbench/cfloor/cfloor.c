/*
 * cfloor: lockbench's C floor (the floor-c contender, floor_c.go). The
 * Redlock Lock+Unlock of the Go floor (floor.go) done by a C program: the
 * lowest overhead a client can have, to tell the Go floor's own overhead
 * from the machine's.
 *
 * One non-blocking TCP socket per master with TCP_NODELAY, one epoll
 * instance over them, no threads. A Lock writes SET key token NX PX ttl to
 * every master (one write() each) and returns as soon as a majority
 * answered +OK, or can no longer; the Unlock then writes EVALSHA of the
 * release script (loaded once, with SCRIPT LOAD) and returns as soon as a
 * majority answered :1. The pair is timed with CLOCK_MONOTONIC from
 * before the SET is encoded to the Unlock's quorum. The replies still
 * owed are then read and discarded before the next pair starts, outside
 * its time. A Lock that gets no quorum (or gets it after the TTL) posts
 * the release to every master without waiting, and the pair counts as
 * failed: one attempt per pair, no retry.
 *
 * Tokens are 20 bytes from getrandom(2), read 204 tokens (4080 bytes) at a
 * time between pairs, each token used once.
 *
 * Usage: cfloor MASTER_TIMEOUT_MS DRAIN_TIMEOUT_MS SCRIPT HOST:PORT...
 *
 * SCRIPT is the release script's text. Once connected and the script
 * loaded on every master, cfloor writes "ready SHA\n" on stdout and reads
 * commands from stdin, one a line:
 *
 *   run PREFIX NKEYS OPS DURATION_US TTL_MS
 *
 * runs Lock+Unlock pairs one after another on keys PREFIX0, PREFIX1, ...
 * PREFIX(NKEYS-1), then PREFIX0 again (with NKEYS 0, on the key PREFIX
 * itself), each lock for TTL_MS, until OPS pairs ran (0: no limit) or
 * DURATION_US passed (0: no limit; a pair starts only before it passed),
 * and answers "done N FAILED\n" followed by N little-endian 64-bit
 * durations in nanoseconds, one per successful pair in order. FAILED
 * counts the others. At the end of stdin, cfloor exits 0.
 *
 * A master that waits MASTER_TIMEOUT_MS without answering counts as a
 * no; one that still owes replies DRAIN_TIMEOUT_MS after a pair ended,
 * refuses a connection, closes it, answers with an error reply (-ERR,
 * -NOSCRIPT...) or with bytes that are no reply, and any failed system
 * call, end cfloor with a message on stderr and exit status 1. It never
 * waits without a timeout, but for the next command on stdin.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum {
	MAX_MASTERS = 64,
	READ_BUF = 4096,    /* a socket's read buffer: room for the longest reply */
	MAX_LINE = 1024,    /* longest reply line, and longest bulk string, accepted */
	MAX_PREFIX = 512,   /* longest key prefix */
	TOKEN_LEN = 20,
	TOKEN_BATCH = 204,  /* tokens per getrandom call: 4080 bytes */
	CONNECT_MS = 5000,  /* to connect, and for SCRIPT LOAD's answers */
	SHA_LEN = 40,
};

/* What counts as a yes for the command of an exchange. */
enum want { WANT_OK, WANT_ONE, WANT_SHA };

struct conn {
	int fd;
	const char *addr;
	char buf[READ_BUF];
	size_t r, w;  /* buf[r:w]: read, not parsed yet */
	int stale;    /* replies owed to commands whose exchange has returned */
	int pending;  /* 1 while the current exchange waits for this master */
};

struct reply {
	char kind;        /* '+', '-', ':' or '$' */
	const char *data; /* the line after the kind byte, or the bulk string */
	size_t len;
	int null;         /* $-1 */
};

static struct conn conns[MAX_MASTERS];
static int nconns, quorum, ep = -1;
static uint64_t master_timeout_ns, drain_timeout_ns;
static char sha[SHA_LEN + 1];

static unsigned char tokens[TOKEN_LEN * TOKEN_BATCH];
static int tokens_left;

static char wbuf[2 * MAX_PREFIX + 256];
static char set_tail[64]; /* $2 NX $2 PX and the TTL: the end of every SET */
static size_t set_tail_len;
static char release_head[96]; /* EVALSHA sha 1: the start of every release */
static size_t release_head_len;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;
	fputs("cfloor: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ms_until is the time to deadline in whole milliseconds, rounded up (epoll
 * and poll count in milliseconds), or 0 once it has passed. */
static int ms_until(uint64_t deadline)
{
	uint64_t now = now_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > 1000000000 ? 1000000000 : (int)ms;
}

/* parse_u64 parses all of s as a decimal number below 2^63. */
static int parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	if (*s == '\0')
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_C(1) << 62) / 5)
			return 0;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 1;
}

/* parse_int parses b[:n] as a decimal integer with an optional minus sign
 * and at most 18 digits, so that it cannot overflow. */
static int parse_int(const char *b, size_t n, long long *v)
{
	int neg = n > 0 && b[0] == '-';
	if (neg) {
		b++;
		n--;
	}
	if (n == 0 || n > 18)
		return 0;
	long long x = 0;
	for (size_t i = 0; i < n; i++) {
		if (b[i] < '0' || b[i] > '9')
			return 0;
		x = x * 10 + (b[i] - '0');
	}
	*v = neg ? -x : x;
	return 1;
}

/* parse_reply parses the reply at the start of b[:n]: its length in bytes,
 * 0 when b holds only a prefix of one, -1 when it is no reply. */
static long parse_reply(const char *b, size_t n, struct reply *rep)
{
	size_t limit = n < MAX_LINE + 3 ? n : MAX_LINE + 3;
	const char *nl = memchr(b, '\n', limit);
	if (nl == NULL)
		return n >= MAX_LINE + 3 ? -1 : 0;
	size_t i = (size_t)(nl - b);
	if (i < 2 || b[i - 1] != '\r')
		return -1;
	size_t used = i + 1;
	long long size;
	rep->kind = b[0];
	rep->data = b + 1;
	rep->len = i - 2;
	rep->null = 0;
	switch (b[0]) {
	case '+':
	case '-':
		return (long)used;
	case ':':
		return parse_int(rep->data, rep->len, &size) ? (long)used : -1;
	case '$':
		if (!parse_int(rep->data, rep->len, &size) || size < -1 || size > MAX_LINE)
			return -1;
		if (size == -1) {
			rep->len = 0;
			rep->null = 1;
			return (long)used;
		}
		if (n < used + (size_t)size + 2)
			return 0;
		if (b[used + (size_t)size] != '\r' || b[used + (size_t)size + 1] != '\n')
			return -1;
		rep->data = b + used;
		rep->len = (size_t)size;
		return (long)(used + (size_t)size + 2);
	}
	return -1;
}

/* matches reports whether rep is a yes for want. The first SHA answered is
 * the one every other master must answer too. */
static int matches(enum want want, const struct reply *rep)
{
	switch (want) {
	case WANT_OK:
		return rep->kind == '+' && rep->len == 2 && memcmp(rep->data, "OK", 2) == 0;
	case WANT_ONE:
		return rep->kind == ':' && rep->len == 1 && rep->data[0] == '1';
	case WANT_SHA:
		if (rep->kind != '$' || rep->null || rep->len != SHA_LEN)
			return 0;
		if (sha[0] == '\0')
			memcpy(sha, rep->data, SHA_LEN);
		return memcmp(sha, rep->data, SHA_LEN) == 0;
	}
	return 0;
}

static void dial(struct conn *c)
{
	char host[256];
	const char *colon = strrchr(c->addr, ':');
	if (colon == NULL || colon == c->addr || colon[1] == '\0')
		die("master %s: want HOST:PORT", c->addr);
	const char *h = c->addr;
	size_t hlen = (size_t)(colon - c->addr);
	if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof host)
		die("master %s: host name too long", c->addr);
	memcpy(host, h, hlen);
	host[hlen] = '\0';

	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai;
	int rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc != 0)
		die("master %s: %s", c->addr, gai_strerror(rc));
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		die("master %s: socket: %s", c->addr, strerror(errno));
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		die("master %s: TCP_NODELAY: %s", c->addr, strerror(errno));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)
		die("master %s: connect: %s", c->addr, strerror(errno));
	freeaddrinfo(ai);

	uint64_t deadline = now_ns() + (uint64_t)CONNECT_MS * 1000000;
	for (;;) {
		int ms = ms_until(deadline);
		if (ms == 0)
			die("master %s: connect: no answer within %d ms", c->addr, CONNECT_MS);
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int n = poll(&p, 1, ms);
		if (n < 0 && errno != EINTR)
			die("master %s: poll: %s", c->addr, strerror(errno));
		if (n > 0)
			break;
	}
	int soerr = 0;
	socklen_t len = sizeof soerr;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
		die("master %s: SO_ERROR: %s", c->addr, strerror(errno));
	if (soerr != 0)
		die("master %s: connect: %s", c->addr, strerror(soerr));
	c->fd = fd;
}

/* write_all writes all of b to c by deadline, waiting for room when the
 * socket buffer is full, so that a command is never half sent. */
static void write_all(struct conn *c, const char *b, size_t n, uint64_t deadline)
{
	while (n > 0) {
		ssize_t k = write(c->fd, b, n);
		if (k >= 0) {
			b += k;
			n -= (size_t)k;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			die("master %s: write: %s", c->addr, strerror(errno));
		int ms = ms_until(deadline);
		if (ms == 0)
			die("master %s: write: no room in the socket buffer by the deadline", c->addr);
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			die("master %s: poll: %s", c->addr, strerror(errno));
	}
}

/* conn_read reads what the socket holds (one read) and parses every
 * complete reply: stale ones are dropped, the current exchange's counts in
 * *yes when it matches want. */
static void conn_read(struct conn *c, enum want want, int *yes)
{
	if (c->r > 0) {
		memmove(c->buf, c->buf + c->r, c->w - c->r);
		c->w -= c->r;
		c->r = 0;
	}
	if (c->w == sizeof c->buf)
		die("master %s: protocol error: a reply longer than %d bytes", c->addr, READ_BUF);
	ssize_t n = read(c->fd, c->buf + c->w, sizeof c->buf - c->w);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		die("master %s: read: %s", c->addr, strerror(errno));
	}
	if (n == 0)
		die("master %s: the server closed the connection", c->addr);
	c->w += (size_t)n;
	while (c->r < c->w) {
		struct reply rep;
		long used = parse_reply(c->buf + c->r, c->w - c->r, &rep);
		if (used == 0)
			return;
		if (used < 0)
			die("master %s: protocol error: not a reply: %.40s", c->addr, c->buf + c->r);
		c->r += (size_t)used;
		if (rep.kind == '-')
			die("master %s: error reply: %.*s", c->addr, (int)rep.len, rep.data);
		if (c->stale > 0) {
			c->stale--;
		} else if (c->pending) {
			c->pending = 0;
			if (matches(want, &rep))
				(*yes)++;
		} else {
			die("master %s: protocol error: a reply to no command", c->addr);
		}
	}
}

/* wait_replies waits for replies until deadline and reads every socket that
 * has some; it returns 0 once the deadline has passed. */
static int wait_replies(enum want want, int *yes, uint64_t deadline)
{
	struct epoll_event evs[MAX_MASTERS];
	int ms = ms_until(deadline);
	if (ms == 0)
		return 0;
	int n = epoll_wait(ep, evs, nconns, ms);
	if (n < 0) {
		if (errno == EINTR)
			return 1;
		die("epoll_wait: %s", strerror(errno));
	}
	for (int i = 0; i < n; i++)
		conn_read(&conns[evs[i].data.u32], want, yes);
	return 1;
}

/* exchange writes cmd to every master and reads replies until every master
 * answered, timeout passed or, with early, as soon as a quorum answered as
 * wanted or no longer can. The replies still owed are then stale. It
 * returns how many masters answered as wanted. */
static int exchange(const char *cmd, size_t n, enum want want, int early, uint64_t timeout)
{
	uint64_t deadline = now_ns() + timeout;
	for (int i = 0; i < nconns; i++) {
		write_all(&conns[i], cmd, n, deadline);
		conns[i].pending = 1;
	}
	int yes = 0;
	for (;;) {
		int pending = 0;
		for (int i = 0; i < nconns; i++)
			pending += conns[i].pending;
		if (pending == 0 || (early && (yes >= quorum || yes + pending < quorum)))
			break;
		if (!wait_replies(want, &yes, deadline))
			break;
	}
	for (int i = 0; i < nconns; i++) {
		conns[i].stale += conns[i].pending;
		conns[i].pending = 0;
	}
	return yes;
}

/* post writes cmd to every master without waiting: every reply is owed. */
static void post(const char *cmd, size_t n)
{
	uint64_t deadline = now_ns() + master_timeout_ns;
	for (int i = 0; i < nconns; i++) {
		write_all(&conns[i], cmd, n, deadline);
		conns[i].stale++;
	}
}

/* drain reads and drops every owed reply. */
static void drain(void)
{
	uint64_t deadline = now_ns() + drain_timeout_ns;
	for (;;) {
		int owed = 0;
		for (int i = 0; i < nconns; i++)
			owed += conns[i].stale;
		if (owed == 0)
			return;
		if (!wait_replies(WANT_OK, NULL, deadline)) {
			for (int i = 0; i < nconns; i++)
				if (conns[i].stale > 0)
					die("master %s: %d replies still owed %llu ms after the operation", conns[i].addr,
					    conns[i].stale, (unsigned long long)(drain_timeout_ns / 1000000));
			die("replies owed past the deadline");
		}
	}
}

static void refill_tokens(void)
{
	size_t got = 0;
	while (got < sizeof tokens) {
		ssize_t n = getrandom(tokens + got, sizeof tokens - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("getrandom: %s", strerror(errno));
		}
		got += (size_t)n;
	}
	tokens_left = TOKEN_BATCH;
}

/* put_u64 appends v in decimal. */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		*p++ = tmp[--n];
	return p;
}

static char *put(char *p, const void *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* put_bulk appends s[:n] as a RESP bulk string. */
static char *put_bulk(char *p, const void *s, size_t n)
{
	*p++ = '$';
	p = put_u64(p, n);
	p = put(p, "\r\n", 2);
	p = put(p, s, n);
	return put(p, "\r\n", 2);
}

/* encode_set encodes SET key token NX PX ttl (set_tail). */
static size_t encode_set(const char *key, size_t klen, const unsigned char *tok)
{
	char *p = put(wbuf, "*6\r\n$3\r\nSET\r\n", 13);
	p = put_bulk(p, key, klen);
	p = put_bulk(p, tok, TOKEN_LEN);
	p = put(p, set_tail, set_tail_len);
	return (size_t)(p - wbuf);
}

/* encode_release encodes EVALSHA sha 1 key token (release_head). */
static size_t encode_release(const char *key, size_t klen, const unsigned char *tok)
{
	char *p = put(wbuf, release_head, release_head_len);
	p = put_bulk(p, key, klen);
	p = put_bulk(p, tok, TOKEN_LEN);
	return (size_t)(p - wbuf);
}

static void load_script(const char *script)
{
	size_t n = strlen(script);
	char *cmd = malloc(n + 64);
	if (cmd == NULL)
		die("out of memory");
	char *p = put(cmd, "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n", 26);
	p = put_bulk(p, script, n);
	int yes = exchange(cmd, (size_t)(p - cmd), WANT_SHA, 0, (uint64_t)CONNECT_MS * 1000000);
	free(cmd);
	if (yes < nconns)
		die("SCRIPT LOAD answered with SHA %s by %d of %d masters", sha, yes, nconns);
	p = put(release_head, "*5\r\n$7\r\nEVALSHA\r\n", 17);
	p = put_bulk(p, sha, SHA_LEN);
	p = put(p, "$1\r\n1\r\n", 7);
	release_head_len = (size_t)(p - release_head);
}

/* write_out writes b[:n] to stdout. */
static void write_out(const void *b, size_t n)
{
	if (fwrite(b, 1, n, stdout) != n)
		die("stdout: %s", strerror(errno));
}

static uint64_t *samples;
static size_t samples_cap;

/* run serves one run command (see the top of the file). */
static void run(const char *prefix, uint64_t nkeys, uint64_t ops, uint64_t duration_us, uint64_t ttl_ms)
{
	if (ops == 0 && duration_us == 0)
		die("run: needs OPS or DURATION_US");
	if (ttl_ms == 0 || ttl_ms > UINT64_C(1) << 32)
		die("run: TTL_MS out of range: %llu", (unsigned long long)ttl_ms);
	if (duration_us > UINT64_C(1) << 42)
		die("run: DURATION_US out of range: %llu", (unsigned long long)duration_us);
	char *p = put(set_tail, "$2\r\nNX\r\n$2\r\nPX\r\n", 16);
	char ttl[20];
	p = put_bulk(p, ttl, (size_t)(put_u64(ttl, ttl_ms) - ttl));
	set_tail_len = (size_t)(p - set_tail);
	uint64_t ttl_ns = ttl_ms * 1000000;

	char key[MAX_PREFIX + 24];
	size_t plen = strlen(prefix);
	memcpy(key, prefix, plen);

	uint64_t n = 0, failed = 0;
	uint64_t end = now_ns() + duration_us * 1000;
	for (uint64_t i = 0; ops == 0 || i < ops; i++) {
		if (tokens_left == 0)
			refill_tokens();
		size_t klen = plen;
		if (nkeys > 0)
			klen = (size_t)(put_u64(key + plen, i % nkeys) - key);
		if (n == samples_cap) {
			samples_cap = samples_cap ? 2 * samples_cap : 4096;
			samples = realloc(samples, samples_cap * sizeof *samples);
			if (samples == NULL)
				die("out of memory for %zu samples", samples_cap);
		}

		uint64_t t0 = now_ns();
		if (duration_us > 0 && t0 >= end)
			break;
		const unsigned char *tok = tokens + TOKEN_LEN * --tokens_left;
		int ok = 0;
		int yes = exchange(wbuf, encode_set(key, klen, tok), WANT_OK, 1, master_timeout_ns);
		size_t len = encode_release(key, klen, tok);
		if (yes >= quorum && now_ns() - t0 < ttl_ns)
			ok = exchange(wbuf, len, WANT_ONE, 1, master_timeout_ns) >= quorum;
		else
			post(wbuf, len);
		uint64_t el = now_ns() - t0;

		if (ok)
			samples[n++] = el;
		else
			failed++;
		drain();
	}

	char head[64];
	int hl = snprintf(head, sizeof head, "done %llu %llu\n", (unsigned long long)n, (unsigned long long)failed);
	write_out(head, (size_t)hl);
	unsigned char le[8 * 512];
	for (uint64_t i = 0; i < n;) {
		size_t k = 0;
		for (; i < n && k < sizeof le; i++)
			for (int b = 0; b < 8; b++)
				le[k++] = (unsigned char)(samples[i] >> (8 * b));
		write_out(le, k);
	}
	if (fflush(stdout) != 0)
		die("stdout: %s", strerror(errno));
}

/* field returns the next space-separated field of *s, or NULL. */
static char *field(char **s)
{
	return strtok_r(NULL, " ", s);
}

int main(int argc, char **argv)
{
	uint64_t mt, dt;
	if (argc < 5 || !parse_u64(argv[1], &mt) || !parse_u64(argv[2], &dt) || mt == 0 || dt == 0) {
		fprintf(stderr, "usage: cfloor MASTER_TIMEOUT_MS DRAIN_TIMEOUT_MS SCRIPT HOST:PORT...\n");
		return 2;
	}
	if (argc - 4 > MAX_MASTERS)
		die("at most %d masters", MAX_MASTERS);
	if (mt > 3600000 || dt > 3600000)
		die("timeouts above an hour");
	master_timeout_ns = mt * 1000000;
	drain_timeout_ns = dt * 1000000;
	/* A master that closed its socket fails a write with EPIPE, reported
	 * as such, rather than killing the process; so does a closed stdout. */
	signal(SIGPIPE, SIG_IGN);

	nconns = argc - 4;
	quorum = nconns / 2 + 1;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	for (int i = 0; i < nconns; i++) {
		conns[i].addr = argv[4 + i];
		dial(&conns[i]);
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0)
			die("epoll_ctl: %s", strerror(errno));
	}
	load_script(argv[3]);
	printf("ready %s\n", sha);
	if (fflush(stdout) != 0)
		die("stdout: %s", strerror(errno));

	char line[MAX_PREFIX + 128];
	while (fgets(line, sizeof line, stdin) != NULL) {
		char *nl = strchr(line, '\n');
		if (nl == NULL)
			die("command too long or not ended by a newline");
		*nl = '\0';
		char *rest;
		char *cmd = strtok_r(line, " ", &rest);
		if (cmd == NULL || strcmp(cmd, "run") != 0)
			die("unknown command %.40s", cmd ? cmd : "(empty)");
		char *prefix = field(&rest), *f[4];
		uint64_t v[4];
		for (int i = 0; i < 4; i++)
			f[i] = field(&rest);
		if (prefix == NULL || strlen(prefix) > MAX_PREFIX || f[3] == NULL || field(&rest) != NULL)
			die("want: run PREFIX NKEYS OPS DURATION_US TTL_MS");
		for (int i = 0; i < 4; i++)
			if (!parse_u64(f[i], &v[i]))
				die("run: not a number: %.40s", f[i]);
		run(prefix, v[0], v[1], v[2], v[3]);
	}
	if (ferror(stdin))
		die("stdin: %s", strerror(errno));
	return 0;
}
