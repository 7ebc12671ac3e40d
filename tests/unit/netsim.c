/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Simulated link between two struct netstack (see netsim.h).
 */
#include "tests/unit/netsim.h"
#include "hv/net/net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void netsim_init(struct netsim *n, const struct netsim_cfg *cfg)
{
	memset(n, 0, sizeof(*n));
	n->cfg = *cfg;
	n->rng = cfg->seed * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < 2; i++) {
		n->port[i].sim = n;
		n->port[i].side = i;
	}
}

void netsim_attach(struct netsim *n, int side, struct netstack *s)
{
	n->ep[side] = s;
}

static uint64_t sim_rand(struct netsim *n)
{
	uint64_t x = n->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	n->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static bool chance(struct netsim *n, uint32_t ppm)
{
	return ppm && sim_rand(n) % 1000000 < ppm;
}

static void enqueue(struct netsim *n, int to, const void *data, size_t len,
		    uint64_t at)
{
	struct netsim_frame *f = malloc(sizeof(*f) + len), **pp = &n->q;

	if (!f)
		return;
	f->at_us = at;
	f->to = to;
	f->len = len;
	memcpy(f->data, data, len);
	f->next = NULL;
	if (!n->q || n->tail->at_us <= at) {	/* the usual case: append */
		if (n->q)
			n->tail->next = f;
		else
			n->q = f;
		n->tail = f;
		return;
	}
	while (*pp && (*pp)->at_us <= at)
		pp = &(*pp)->next;
	f->next = *pp;
	*pp = f;
}

/* When the frame is fully on the wire; 0 for a drop-tail drop. */
static uint64_t serialize(struct netsim *n, int from, size_t len)
{
	uint64_t start = n->busy_until[from] > n->now_us ? n->busy_until[from] : n->now_us;
	uint64_t backlog;

	if (!n->cfg.rate_Bps)
		return n->now_us;
	backlog = (start - n->now_us) * n->cfg.rate_Bps / 1000000;
	if (n->cfg.queue_bytes && backlog + len > n->cfg.queue_bytes)
		return 0;
	n->busy_until[from] = start + (len * 1000000 + n->cfg.rate_Bps - 1) / n->cfg.rate_Bps;
	return n->busy_until[from];
}

int netsim_xmit(void *ctx, const void *frame, size_t len)
{
	struct netsim_port *p = ctx;
	struct netsim *n = p->sim;
	uint64_t at;

	n->st.sent++;
	if (n->cut) {
		n->st.cut_drops++;
		return 0;
	}
	at = serialize(n, p->side, len);
	if (!at && n->cfg.rate_Bps) {
		n->st.queue_drops++;
		return 0;
	}
	if (chance(n, n->cfg.loss_ppm)) {
		n->st.lost++;
		return 0;
	}
	at += n->cfg.delay_us;
	if (chance(n, n->cfg.reorder_ppm)) {
		n->st.reordered++;
		at += 1 + sim_rand(n) % (n->cfg.reorder_us ? n->cfg.reorder_us : 1000);
	}
	enqueue(n, !p->side, frame, len, at);
	if (chance(n, n->cfg.dup_ppm)) {
		n->st.duplicated++;
		enqueue(n, !p->side, frame, len, at + 1 + sim_rand(n) % 500);
	}
	return 0;
}

uint64_t netsim_next(const struct netsim *n)
{
	uint64_t p = n->cfg.poll_us;

	if (!n->q)
		return UINT64_MAX;
	return p ? (n->q->at_us + p - 1) / p * p : n->q->at_us;
}

static void corrupt(struct netsim *n, struct netsim_frame *f)
{
	size_t at = (size_t)(sim_rand(n) % f->len);

	f->data[at] ^= (uint8_t)(1u << (sim_rand(n) % 8));
	n->st.corrupted++;
}

void netsim_deliver(struct netsim *n, uint64_t now_us)
{
	bool batch = n->cfg.poll_us != 0;

	n->now_us = now_us;
	if (batch && now_us % n->cfg.poll_us)
		return;			/* frames wait for the next poll */
	for (int i = 0; i < 2; i++)
		if (n->ep[i])
			net_rx_batch(n->ep[i], batch);
	while (n->q && n->q->at_us <= now_us) {
		struct netsim_frame *f = n->q;

		n->q = f->next;
		if (!n->q)
			n->tail = NULL;
		if (chance(n, n->cfg.corrupt_ppm))
			corrupt(n, f);
		n->st.delivered++;
		if (n->ep[f->to]) {
			net_set_time(n->ep[f->to], now_us);
			net_input(n->ep[f->to], f->data, f->len);
		}
		free(f);
	}
	for (int i = 0; i < 2; i++)	/* netsim_step's net_poll ends it */
		if (n->ep[i])
			net_rx_batch(n->ep[i], false);
}

uint64_t netsim_step(struct netsim *n, uint64_t limit)
{
	uint64_t t = netsim_next(n);

	for (int i = 0; i < 2; i++) {
		uint64_t d = n->ep[i] ? net_poll(n->ep[i], n->now_us) : UINT64_MAX;

		if (d < t)
			t = d;
	}
	if (t > limit)
		t = limit;
	if (t < n->now_us)
		t = n->now_us;
	netsim_deliver(n, t);
	for (int i = 0; i < 2; i++)	/* timers due at t fire at t */
		if (n->ep[i])
			net_poll(n->ep[i], t);
	return t;
}

void netsim_fini(struct netsim *n)
{
	while (n->q) {
		struct netsim_frame *f = n->q;

		n->q = f->next;
		free(f);
	}
	n->tail = NULL;
}
