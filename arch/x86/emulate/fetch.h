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

#endif
