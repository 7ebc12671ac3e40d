/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Give back what net_init and a test's connections allocated, so that
 * ASan's leak check sees a clean exit.  The product never tears a stack
 * down, so this lives with the tests (header only).
 */
#ifndef FERRY_TESTS_UNIT_NET_FREE_H
#define FERRY_TESTS_UNIT_NET_FREE_H

#include <stdlib.h>
#include "hv/net/net.h"
#include "hv/net/tcp_priv.h"

static inline void net_free(struct netstack *s)
{
	struct tcp_table *t = &s->tcp;

	for (uint32_t i = 0; t->conns && i < t->p.max_conns; i++)
		if (t->conns[i].used)
			tcp_conn_free(&t->conns[i]);
	free(t->conns);
	t->conns = NULL;
}

#endif
