/* SPDX-License-Identifier: BSD-2-Clause */
/* Tear a test's network stack down (net_free.h). */
#include <stdlib.h>
#include "hv/net/tcp_priv.h"
#include "tests/unit/net_free.h"

void net_free(struct netstack *s)
{
	struct tcp_table *t = &s->tcp;

	for (uint32_t i = 0; t->conns && i < t->p.max_conns; i++)
		if (t->conns[i].used)
			tcp_conn_free(&t->conns[i]);
	free(t->conns);
	t->conns = NULL;
}
