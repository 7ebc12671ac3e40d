/* SPDX-License-Identifier: BSD-2-Clause */
/* One migration connection, without blocking (chan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hv/migrate/chan.h"
#include "hv/netif.h"

int chan_init(struct mig_chan *ch, enum mig_role role, struct tcp_conn *conn, size_t tx_cap)
{
	memset(ch, 0, sizeof(*ch));
	mig_stream_init(&ch->st, role);
	ch->conn = conn;
	ch->tx = malloc(tx_cap);
	if (!ch->tx)
		return -ENOMEM;
	ch->tx_cap = tx_cap;
	ch->last_rx_us = netif_now_us();
	return 0;
}

void chan_close(struct mig_chan *ch, bool abort)
{
	if (ch->conn) {
		netif_lock();
		if (abort)
			tcp_abort(ch->conn);
		else
			tcp_close(ch->conn);
		netif_unlock();
		ch->conn = NULL;
	}
	mig_stream_fini(&ch->st);
	free(ch->tx);
	ch->tx = NULL;
}

int chan_queue(struct mig_chan *ch, const struct mig_rec *r)
{
	long n;

	if (ch->tx_off < ch->tx_len)
		return -EBUSY;
	n = mig_stream_encode(&ch->st, r, ch->tx, ch->tx_cap);
	if (n < 0)
		return (int)n;
	ch->tx_len = (size_t)n;
	ch->tx_off = 0;
	return 0;
}

bool chan_tx_idle(const struct mig_chan *ch)
{
	return ch->tx_off >= ch->tx_len;
}

int chan_push(struct mig_chan *ch, size_t limit)
{
	size_t want = ch->tx_len - ch->tx_off;
	long n;

	if (!want)
		return 1;
	if (want > limit)
		want = limit;
	if (!want)
		return 0;
	netif_lock();
	n = tcp_send(ch->conn, ch->tx + ch->tx_off, want);
	netif_unlock();
	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return (int)n;
	ch->tx_off += (size_t)n;
	ch->bytes_out += (uint64_t)n;
	return ch->tx_off == ch->tx_len;
}

/* More bytes from TCP into rx: > 0 bytes, 0 none now, < 0 error or -EPIPE. */
static long fill(struct mig_chan *ch)
{
	long n;

	if (ch->rx_eof)
		return -EPIPE;
	netif_lock();
	n = tcp_recv(ch->conn, ch->rx, sizeof(ch->rx));
	netif_unlock();
	if (n == -EAGAIN)
		return 0;
	if (n == 0) {
		ch->rx_eof = true;
		return -EPIPE;
	}
	if (n < 0)
		return n;
	ch->rx_len = (size_t)n;
	ch->rx_off = 0;
	ch->bytes_in += (uint64_t)n;
	ch->last_rx_us = netif_now_us();
	return n;
}

int chan_pull(struct mig_chan *ch, const struct mig_rec **out)
{
	for (;;) {
		if (ch->rx_off == ch->rx_len) {
			long n = fill(ch);
			if (n <= 0)
				return (int)n;
		}
		size_t used = 0;
		int rc = mig_stream_feed(&ch->st, ch->rx + ch->rx_off, ch->rx_len - ch->rx_off,
					 &used, out);
		ch->rx_off += used;
		if (rc)
			return rc;
	}
}

void chan_abort(struct mig_chan *ch, uint32_t code, const char *msg)
{
	struct mig_rec r = { .type = MIG_ABORT };
	uint8_t buf[MIG_HDR_SIZE + 8 + MIG_MSG_MAX];
	struct mig_error e;
	long n;

	/* behind a record not fully sent, the peer would misframe: skip it */
	if (!ch->conn || !chan_tx_idle(ch))
		return;
	mig_error_set(&e, code, "%s", msg);
	r.abort.code = code;
	memcpy(r.abort.msg, e.msg, sizeof(r.abort.msg));
	n = mig_stream_encode(&ch->st, &r, buf, sizeof(buf));
	if (n <= 0)
		return;
	netif_lock();
	tcp_send(ch->conn, buf, (size_t)n);
	netif_unlock();
}
