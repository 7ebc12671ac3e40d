/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nettest: reproducible stream generator and the polled send/receive state
 * machines behind the shell's `nettest send` and `nettest listen`.
 */
#include "hv/net/nettest.h"
#include "hv/lib/crc32.h"
#include "hv/lib/bytes.h"

#include <errno.h>
#include <string.h>

static uint64_t splitmix64(uint64_t k)
{
	uint64_t z = (k + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void nettest_fill(uint64_t offset, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len && (offset & 7)) {
		*p++ = (uint8_t)(splitmix64(offset / 8) >> (8 * (offset & 7)));
		offset++;
		len--;
	}
	for (; len >= 8; p += 8, len -= 8, offset += 8)
		put_le64(p, splitmix64(offset / 8));
	for (uint64_t w = splitmix64(offset / 8); len; len--, offset++)
		*p++ = (uint8_t)(w >> (8 * (offset & 7)));
}

uint32_t nettest_fill_crc(uint64_t offset, void *buf, size_t len, uint32_t crc)
{
	uint8_t *p = buf;
	size_t head = (8 - (offset & 7)) & 7, words;
	uint32_t raw;

	if (head > len)
		head = len;
	nettest_fill(offset, p, head);
	crc = crc32_update(crc, p, head);
	p += head;
	offset += head;
	len -= head;
	crc32_tables();
	raw = ~crc;
	for (words = len / 8; words; words--, p += 8, offset += 8) {
		uint64_t w = splitmix64(offset / 8);

		put_le64(p, w);
		raw = crc32_step64(raw, w);
	}
	nettest_fill(offset, p, len & 7);
	return crc32_update(~raw, p, len & 7);
}

uint64_t nettest_rate(uint64_t bytes, uint64_t us)
{
	if (!us)
		return 0;
	if (bytes > UINT64_MAX / 1000000)
		return bytes / us * 1000000;
	return bytes * 1000000 / us;
}

void nettest_rx_init(struct nettest_rx *r, struct tcp_conn *c, uint64_t now_us)
{
	memset(r, 0, offsetof(struct nettest_rx, buf));
	r->c = c;
	r->start_us = r->end_us = now_us;
}

int nettest_rx_poll(struct nettest_rx *r, uint64_t now_us)
{
	long n;

	if (r->done)
		return r->err ? r->err : 1;
	while ((n = tcp_recv(r->c, r->buf, sizeof(r->buf))) > 0) {
		r->crc = crc32_update(r->crc, r->buf, (size_t)n);
		r->bytes += (uint64_t)n;
	}
	r->end_us = now_us;
	if (n == -EAGAIN)
		return 0;
	r->done = true;
	r->err = (int)n;
	return n ? (int)n : 1;
}

void nettest_tx_init(struct nettest_tx *t, struct tcp_conn *c, uint64_t total,
		     uint64_t now_us)
{
	memset(t, 0, offsetof(struct nettest_tx, buf));
	t->c = c;
	t->total = total;
	t->start_us = t->end_us = now_us;
}

/* Queue one chunk of the stream, made in place in the send ring; false
 * when the ring is full. */
static bool tx_chunk(struct nettest_tx *t)
{
	uint64_t left = t->total - t->queued;
	uint8_t *p;
	size_t n = tcp_send_buffer(t->c, &p);
	long sent;

	if (n > NETTEST_CHUNK)
		n = NETTEST_CHUNK;
	if (n > left)
		n = (size_t)left;
	if (!n) {
		sent = tcp_send(t->c, NULL, 0);	/* the reason, if any */
		if (sent < 0 && sent != -EAGAIN)
			t->err = (int)sent;
		return false;
	}
	t->crc = nettest_fill_crc(t->queued, p, n, t->crc);
	sent = tcp_send_commit(t->c, n);
	if (sent <= 0) {
		t->err = sent ? (int)sent : -EIO;
		return false;
	}
	t->queued += (uint64_t)sent;
	return true;
}

static bool fin_acked(const struct tcp_conn *c)
{
	enum tcp_state st = tcp_get_state(c);

	return st == TCP_FIN_WAIT_2 || st == TCP_TIME_WAIT || st == TCP_CLOSED;
}

static int tx_finish(struct nettest_tx *t, uint64_t now_us)
{
	int rc = tcp_connected(t->c);

	if (rc < 0 && rc != -ENOTCONN)
		return t->err = rc;
	if (!fin_acked(t->c) || tcp_send_unacked(t->c))
		return 0;
	t->end_us = now_us;
	t->done = true;
	return 1;
}

int nettest_tx_poll(struct nettest_tx *t, uint64_t now_us)
{
	int rc;

	if (t->done || t->err)
		return t->err ? t->err : 1;
	if (t->shut)
		return tx_finish(t, now_us);
	rc = tcp_connected(t->c);
	if (rc <= 0)
		return t->err = rc;
	while (t->queued < t->total && tx_chunk(t))
		;
	if (t->err)
		return t->err;
	if (t->queued < t->total)
		return 0;
	rc = tcp_shutdown(t->c);
	if (rc)
		return t->err = rc;
	t->shut = true;
	return tx_finish(t, now_us);
}
