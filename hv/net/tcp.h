/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP (RFC 9293) as a non-blocking stream API for a thread-less caller that
 * polls.  A struct tcp_conn handle comes from tcp_connect, tcp_listen or
 * tcp_accept and stays valid until the caller gives it back with tcp_close or
 * tcp_abort; the stack finishes the FIN handshake in the background.
 * Failures (reset, timeout, refused) are reported once known by every call
 * on the handle as -ECONNRESET, -ETIMEDOUT, -ECONNREFUSED.
 */
#ifndef FERRY_HV_NET_TCP_H
#define FERRY_HV_NET_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netstack;
struct tcp_conn;

/* RFC 9293 3.3.2; order matters (synchronized states follow SYN_RCVD). */
enum tcp_state {
	TCP_CLOSED, TCP_LISTEN, TCP_SYN_SENT, TCP_SYN_RCVD, TCP_ESTABLISHED,
	TCP_FIN_WAIT_1, TCP_FIN_WAIT_2, TCP_CLOSE_WAIT, TCP_CLOSING,
	TCP_LAST_ACK, TCP_TIME_WAIT,
};

/* Tunables, filled from struct net_config; times in microseconds. */
struct tcp_params {
	uint32_t max_conns, sndbuf, rcvbuf, syn_backlog;
	uint64_t user_timeout_us, time_wait_us, min_rto_us, delack_us;
};

/* The connection table; owned by struct netstack. */
struct tcp_table {
	struct tcp_conn *conns;		/* max_conns slots */
	struct tcp_conn *last;		/* last input match: bulk fast path */
	struct tcp_params p;
	uint64_t secret[2];		/* ISN key (RFC 6528) */
	uint64_t serial;		/* creation order, for eviction */
	uint64_t chal_window_us;	/* challenge-ACK rate limit */
	uint32_t chal_count;
	uint16_t next_port;
};

/* A snapshot for `netstat`. */
struct tcp_info {
	enum tcp_state state;
	uint32_t lip, rip;		/* host order */
	uint16_t lport, rport;
	bool app_owned;			/* false: orphaned, finishing alone */
	uint32_t snd_queued;		/* bytes not yet acknowledged */
	uint32_t rcv_queued;		/* bytes not yet read */
	uint32_t snd_wnd, rcv_wnd, cwnd, ssthresh, mss;
	uint32_t srtt_us, rto_us;
	uint64_t bytes_in, bytes_out, segs_in, segs_out, retransmits;
	int err;			/* pending error, 0 if none */
};

typedef void (*tcp_visit_fn)(const struct tcp_info *info, void *arg);

const char *tcp_state_name(enum tcp_state st);

/* Active open to ip:port (host order) from an ephemeral port.  On 0, *out
 * is in SYN_SENT; poll tcp_connected.  -EADDRNOTAVAIL (no IPv4 config),
 * -ENOMEM (table full), -ENETUNREACH. */
int tcp_connect(struct netstack *s, uint32_t ip, uint16_t port,
		struct tcp_conn **out);
/* 1 when established (or later), 0 while the handshake runs, <0 error. */
int tcp_connected(struct tcp_conn *c);

/* Passive open on port with at most backlog half-open plus backlog
 * not-yet-accepted connections (0: default).  -EADDRINUSE, -ENOMEM. */
int tcp_listen(struct netstack *s, uint16_t port, unsigned backlog,
	       struct tcp_conn **out);
/* Take an established connection: 0 and *out, or -EAGAIN, -EINVAL. */
int tcp_accept(struct tcp_conn *listener, struct tcp_conn **out);

/* Copy up to len bytes into the send ring and transmit what the windows
 * allow (in SYN_SENT the data waits for the handshake).  Returns bytes
 * taken (>0), -EAGAIN (ring full), -EPIPE after shutdown, -EINVAL on a
 * listener, or the connection's error. */
long tcp_send(struct tcp_conn *c, const void *buf, size_t len);
/* Zero-copy variant of tcp_send: *buf and the length of the free space
 * that follows the queued data in the send ring without wrapping (0 when
 * tcp_send would not take data now).  Write there, then queue n of those
 * bytes with tcp_send_commit (returns n, or what tcp_send returns). */
size_t tcp_send_buffer(struct tcp_conn *c, uint8_t **buf);
long tcp_send_commit(struct tcp_conn *c, size_t n);
/* Copy up to len received bytes: >0, 0 at end of stream (peer's FIN),
 * -EAGAIN when nothing is there yet, or the connection's error (once the
 * bytes received before it have been read). */
long tcp_recv(struct tcp_conn *c, void *buf, size_t len);

/* Send FIN after the queued data; receiving continues. */
int tcp_shutdown(struct tcp_conn *c);
/* Give the handle back: graceful close (FIN after queued data), or RST if
 * received data was left unread.  c must not be used afterwards. */
void tcp_close(struct tcp_conn *c);
/* Give the handle back and reset the connection at once. */
void tcp_abort(struct tcp_conn *c);

/* Disable Nagle's algorithm: send small segments at once. */
void tcp_set_nodelay(struct tcp_conn *c, bool on);
/* Free bytes in the send ring. */
size_t tcp_send_space(const struct tcp_conn *c);
/* Bytes queued but not yet acknowledged by the peer (FIN excluded). */
size_t tcp_send_unacked(const struct tcp_conn *c);
/* Bytes ready for tcp_recv. */
size_t tcp_recv_avail(const struct tcp_conn *c);
enum tcp_state tcp_get_state(const struct tcp_conn *c);

void tcp_get_info(const struct tcp_conn *c, struct tcp_info *info);
/* Call fn for every connection slot in use (listeners included). */
void tcp_foreach(struct netstack *s, tcp_visit_fn fn, void *arg);

#endif
