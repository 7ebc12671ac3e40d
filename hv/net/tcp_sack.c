/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SACK (RFC 2018) for the sender: a scoreboard of ranges the peer holds
 * above snd_una, and loss recovery driven by it in the manner of RFC 6675
 * (conservative, "pipe"-limited): holes with more than two segments SACKed
 * above them are presumed lost and sent again while the estimated bytes in
 * flight stay under cwnd.  After a retransmission timeout every unSACKed
 * byte counts as lost and SACKed ones are skipped; the left edge is always
 * sent again, so a peer that reneges (RFC 2018 8) still makes progress.
 * Also the sorted range set used by the receiver's reassembly; when it is
 * full the new range is refused, so a SACKed range is never forgotten.
 */
#include "hv/net/tcp_priv.h"

#include <string.h>

void tcp_range_del(struct tcp_rset *s, int i, int k)
{
	memmove(&s->r[i], &s->r[i + k], (size_t)(s->n - i - k) * sizeof(*s->r));
	s->n = (uint16_t)(s->n - k);
}

int tcp_range_add(struct tcp_rset *s, uint32_t start, uint32_t end)
{
	struct tcp_range *r = s->r;
	int i = 0, j;

	while (i < s->n && seq_lt(r[i].end, start))
		i++;
	for (j = i; j < s->n && seq_le(r[j].start, end); j++) {
		if (seq_lt(r[j].start, start))
			start = r[j].start;
		if (seq_gt(r[j].end, end))
			end = r[j].end;
	}
	if (j > i) {
		tcp_range_del(s, i + 1, j - i - 1);
	} else {
		if (s->n == s->max)
			return -1;	/* keep what was promised; drop the new */
		memmove(&r[i + 1], &r[i], (size_t)(s->n - i) * sizeof(*r));
		s->n++;
	}
	r[i].start = start;
	r[i].end = end;
	return i;
}

/* RFC 2883 4: the first block reports a duplicate if it lies below the
 * cumulative ACK or inside the second block. */
static bool is_dsack(const struct tcp_seg *g)
{
	const struct tcp_range *b = g->sack;

	if (!g->nsack || !seq_lt(b[0].start, b[0].end))
		return false;
	return seq_le(b[0].end, g->ack) ||
	       (g->nsack > 1 && seq_ge(b[0].start, b[1].start) &&
		seq_le(b[0].end, b[1].end));
}

/* Take the SACK blocks of an ACK; ignore any outside (snd_una, snd_max].
 * A D-SACK goes to the undo logic. */
void tcp_sack_update(struct tcp_conn *c, const struct tcp_seg *g)
{
	if (!c->sack_ok)
		return;
	if (is_dsack(g))
		tcp_cc_undo_check(c, g->sack[0].start, g->sack[0].end);
	for (int i = is_dsack(g); i < g->nsack; i++) {
		uint32_t s = g->sack[i].start, e = g->sack[i].end;

		if (!seq_lt(s, e) || seq_le(e, c->snd_una) ||
		    seq_gt(e, c->snd_max) || seq_lt(s, c->snd_una))
			continue;
		tcp_range_add(&c->sacked, s, e);
	}
}

/* Drop what the cumulative ACK now covers. */
void tcp_sack_prune(struct tcp_conn *c)
{
	struct tcp_rset *s = &c->sacked;

	while (s->n && seq_le(s->r[0].end, c->snd_una))
		tcp_range_del(s, 0, 1);
	if (s->n && seq_lt(s->r[0].start, c->snd_una))
		s->r[0].start = c->snd_una;
	if (seq_lt(c->high_rxt, c->snd_una))
		c->high_rxt = c->snd_una;
}

static uint32_t sacked_bytes(const struct tcp_conn *c)
{
	uint32_t n = 0;

	for (int i = 0; i < c->sacked.n; i++)
		n += c->sacked.r[i].end - c->sacked.r[i].start;
	return n;
}

bool tcp_sack_lost_enough(const struct tcp_conn *c)
{
	return sacked_bytes(c) > (tcp_dupthresh(c) - 1) * c->mss;
}

/* Receiver: report [start, end) as a duplicate in the next ACK. */
void tcp_dsack_note(struct tcp_conn *c, uint32_t start, uint32_t end)
{
	if (!c->sack_ok)
		return;
	c->dsack.start = start;
	c->dsack.end = end;
	c->dsack_pending = true;
	c->ack_now = true;
}

/* Unsent-again bytes below this are presumed lost (RFC 6675 IsLost with
 * DupThresh 3; after a timeout, all of them). */
static uint32_t lost_line(const struct tcp_conn *c)
{
	uint32_t acc = 0;

	if (c->rto_recovery)
		return c->recover;	/* snd_max at the timeout */
	for (int i = c->sacked.n - 1; i >= 0; i--) {
		acc += c->sacked.r[i].end - c->sacked.r[i].start;
		if (acc > (tcp_dupthresh(c) - 1) * c->mss)
			return c->sacked.r[i].start;
	}
	return c->snd_una;
}

/* Bytes in [a, b) that the peer has not SACKed. */
static uint32_t unsacked(const struct tcp_conn *c, uint32_t a, uint32_t b)
{
	uint32_t n = b - a;

	for (int i = 0; i < c->sacked.n; i++) {
		uint32_t s = c->sacked.r[i].start, e = c->sacked.r[i].end;

		if (seq_lt(s, a))
			s = a;
		if (seq_gt(e, b))
			e = b;
		if (seq_lt(s, e))
			n -= e - s;
	}
	return n;
}

/* RFC 6675 SetPipe: unSACKed bytes in flight, lost ones not counted
 * until sent again. */
uint32_t tcp_sack_pipe(const struct tcp_conn *c)
{
	uint32_t line = lost_line(c), from = c->high_rxt;
	uint32_t pipe = unsacked(c, c->snd_una, c->snd_max);

	if (seq_lt(from, c->snd_una))
		from = c->snd_una;
	if (seq_lt(from, line))
		pipe -= unsacked(c, from, line);
	return pipe;
}

/* First unSACKed sequence at or after seq, and how far it runs until the
 * next SACKed range (*room). */
uint32_t tcp_sack_skip(const struct tcp_conn *c, uint32_t seq, uint32_t *room)
{
	*room = UINT32_MAX;
	for (int i = 0; i < c->sacked.n; i++) {
		if (seq_le(c->sacked.r[i].end, seq))
			continue;
		if (seq_le(c->sacked.r[i].start, seq)) {
			seq = c->sacked.r[i].end;
			continue;
		}
		*room = c->sacked.r[i].start - seq;
		break;
	}
	return seq;
}

/* RFC 6675 NextSeg (1): the next lost hole above high_rxt. */
static bool next_hole(const struct tcp_conn *c, uint32_t *seq, uint32_t *len)
{
	uint32_t s = seq_lt(c->high_rxt, c->snd_una) ? c->snd_una : c->high_rxt;
	uint32_t room, line = lost_line(c);

	s = tcp_sack_skip(c, s, &room);
	if (!seq_lt(s, line))
		return false;
	*seq = s;
	*len = min_u32(room, line - s);
	return true;
}

/* SACKed bytes above seq. */
static uint32_t sacked_above(const struct tcp_conn *c, uint32_t seq)
{
	uint32_t n = 0;

	for (int i = c->sacked.n - 1; i >= 0 && seq_gt(c->sacked.r[i].end, seq); i--)
		n += c->sacked.r[i].end -
		     (seq_gt(c->sacked.r[i].start, seq) ? c->sacked.r[i].start : seq);
	return n;
}

/* When data sent after the last resent hole is SACKed (three segments'
 * worth), the holes still open were lost again: start another pass over
 * them (the idea of RACK, RFC 8985, without per-segment times). */
void tcp_sack_lost_rexmit(struct tcp_conn *c)
{
	if (!c->sack_ok || !seq_gt(c->rxt_fence, c->snd_una) ||
	    sacked_above(c, c->rxt_fence) <= (tcp_dupthresh(c) - 1) * c->mss)
		return;
	c->high_rxt = c->snd_una;
	c->rxt_fence = c->snd_max;
	c->s->stats.tcp.lost_retransmits++;
	if (c->rto_recovery)
		c->snd_nxt = c->snd_una;	/* another go-back pass */
}

/* Resend lost holes while the pipe leaves room in cwnd. */
void tcp_sack_retransmit(struct tcp_conn *c)
{
	uint32_t seq, len;

	while (tcp_sack_pipe(c) + c->mss <= c->cwnd && next_hole(c, &seq, &len)) {
		uint32_t n = tcp_send_at(c, seq, len);

		if (!n)
			break;
		if (seq_gt(seq + n, c->high_rxt))
			c->high_rxt = seq + n;
		c->rxt_fence = c->snd_max;
	}
}
