/* SPDX-License-Identifier: BSD-2-Clause */
/* Fetch (gwalk.c) + decode (decode.c) of one guest instruction. */
#include <errno.h>

#include "arch/x86/emulate/fetch.h"

int x86_fetch_decode(const struct gwalk_env *env, uint64_t la, bool user,
		     enum cpu_mode mode, unsigned flags, struct x86_insn *insn,
		     struct gwalk_result *res)
{
	uint8_t buf[X86_MAX_INSN_LEN];
	int n = guest_fetch_insn(env, la, user, buf, sizeof(buf), res);
	int r;

	if (n < 0)
		return n;
	r = x86_decode(buf, (size_t)n, mode, flags, insn);
	if (r == -EAGAIN)	/* it runs into the page that could not be fetched */
		return res->err ? res->err : -EIO;
	return r;
}
