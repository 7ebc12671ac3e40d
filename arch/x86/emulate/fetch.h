/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fetch and decode the guest instruction at a linear address: what an
 * exit handler without NRIP-save (or with an MMIO fault) calls to learn
 * the instruction's length and operands.
 */
#ifndef FERRY_ARCH_X86_EMULATE_FETCH_H
#define FERRY_ARCH_X86_EMULATE_FETCH_H

#include "arch/x86/emulate/decode.h"
#include "arch/x86/emulate/gwalk.h"

/*
 * Decode the instruction at la = CS.base + RIP (user: CPL == 3; mode and
 * flags as for x86_decode_ex()).  A fault on the second page counts only
 * if the instruction reaches it.  Returns the length, or
 *   -EFAULT  the guest takes #PF: res->error_code, res->fault_addr;
 *   -EIO     code or a paging structure is outside guest RAM: res->bad_gpa;
 *   -E2BIG   longer than 15 bytes (#GP);  -EILSEQ  undefined (#UD);
 *   -EINVAL  non-canonical la or a bad env.
 */
int x86_fetch_decode(const struct gwalk_env *env, uint64_t la, bool user,
		     enum cpu_mode mode, unsigned flags, struct x86_insn *insn,
		     struct gwalk_result *res);

/* Where the guest's next instruction is, as either back end reads it. */
struct x86_guest_rip {
	uint64_t rip, cs_base;
	bool cs_l, cs_db;	/* CS.L and CS.D/B */
	bool user;		/* CPL 3 */
};

/*
 * x86_fetch_decode() of the instruction at CS:RIP: the mode from g's
 * CR0.PE, RFLAGS.VM, EFER.LMA and CS.L/D; the linear address RIP in
 * 64-bit code, else CS.base + EIP.  Same results (fault details in *res);
 * -EINVAL without a g->read_gpa.
 */
int x86_fetch_at_rip(const struct gwalk_env *g, const struct x86_guest_rip *r,
		     unsigned flags, struct x86_insn *insn, struct gwalk_result *res);

/*
 * After a #UD: the length of the instruction at CS:RIP if it is either
 * vendor's hypercall (x86_insn_hypercall), which ferry then answers on both
 * back ends alike; 0 if it is another instruction or cannot be read back
 * (the #UD then goes to the guest unchanged).
 */
int x86_ud_hypercall(const struct gwalk_env *g, const struct x86_guest_rip *r,
		     unsigned flags);

#endif
