/* SPDX-License-Identifier: BSD-2-Clause */
/* Fetch (gwalk.c) + decode (decode.c) of one guest instruction. */
#include <errno.h>

#include "arch/x86/cpu.h"
#include "arch/x86/emulate/fetch.h"

#define RFLAGS_VM	(1ull << 17)

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

int x86_fetch_at_rip(const struct gwalk_env *g, const struct x86_guest_rip *r,
		     unsigned flags, struct x86_insn *insn, struct gwalk_result *res)
{
	enum cpu_mode mode = x86_cpu_mode(g->cr0 & CR0_PE, g->rflags & RFLAGS_VM,
					  g->efer & EFER_LMA, r->cs_l, r->cs_db);
	uint64_t la = mode == CPU_MODE_LONG64 ? r->rip : (uint32_t)(r->cs_base + r->rip);

	if (!g->read_gpa)
		return -EINVAL;
	return x86_fetch_decode(g, la, r->user, mode, flags, insn, res);
}

int x86_ud_hypercall(const struct gwalk_env *g, const struct x86_guest_rip *r,
		     unsigned flags)
{
	struct gwalk_result res;
	struct x86_insn insn;
	int len = x86_fetch_at_rip(g, r, flags, &insn, &res);

	if (len > 0 && x86_insn_hypercall(&insn) != X86_HC_NONE)
		return len;
	return 0;
}
