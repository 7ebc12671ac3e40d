/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Give back what net_init and a test's connections allocated, so that
 * ASan's leak check sees a clean exit.  The product never tears a stack
 * down, so this lives with the tests (net_free.c).
 */
#ifndef FERRY_TESTS_UNIT_NET_FREE_H
#define FERRY_TESTS_UNIT_NET_FREE_H

#include "hv/net/net.h"

void net_free(struct netstack *s);

#endif
