/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VM entry and exit (Intel SDM Vol. 3C "VMLAUNCH/VMRESUME", "Loading Host
 * State"): save ferry's callee-saved registers, point HOST_RSP at this
 * frame, load the guest's general registers from the vCPU's array (RSP and
 * RIP travel in the VMCS), enter.  The exit lands at vmx_exit_point (the
 * VMCS HOST_RIP) with the stack as it was, stores the guest registers back
 * and returns 0.  A failed VMLAUNCH/VMRESUME falls through: 1 for
 * VMfailInvalid (CF), 2 for VMfailValid (ZF).
 *
 *   int vmx_enter(uint64_t *gpr, int launched);
 */
#include "arch/x86/vmx/vmcs.h"

#include "asm-offsets.h"	/* G_<reg>: offsets in uint64_t gpr[] */

	.text
	.globl	vmx_enter
	.type	vmx_enter, @function
vmx_enter:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	pushq	%rdi			/* gpr array: found at 8(%rsp) after the exit */
	movl	$VMCS_HOST_RSP, %eax
	vmwrite	%rsp, %rax
	jbe	.Lfailed		/* CF or ZF: the write failed */
	testl	%esi, %esi		/* ZF survives the loads below */
	movq	G_RAX(%rdi), %rax
	movq	G_RCX(%rdi), %rcx
	movq	G_RDX(%rdi), %rdx
	movq	G_RBX(%rdi), %rbx
	movq	G_RBP(%rdi), %rbp
	movq	G_RSI(%rdi), %rsi
	movq	G_R8(%rdi), %r8
	movq	G_R9(%rdi), %r9
	movq	G_R10(%rdi), %r10
	movq	G_R11(%rdi), %r11
	movq	G_R12(%rdi), %r12
	movq	G_R13(%rdi), %r13
	movq	G_R14(%rdi), %r14
	movq	G_R15(%rdi), %r15
	movq	G_RDI(%rdi), %rdi
	jnz	1f
	vmlaunch
	jmp	.Lfailed
1:	vmresume
.Lfailed:				/* flags of the failed instruction */
	movl	$2, %eax
	jnc	.Lout
	movl	$1, %eax
	jmp	.Lout

	.globl	vmx_exit_point
vmx_exit_point:
	pushq	%rdi			/* guest RDI; the gpr array is above it */
	movq	8(%rsp), %rdi
	movq	%rax, G_RAX(%rdi)
	movq	%rcx, G_RCX(%rdi)
	movq	%rdx, G_RDX(%rdi)
	movq	%rbx, G_RBX(%rdi)
	movq	%rbp, G_RBP(%rdi)
	movq	%rsi, G_RSI(%rdi)
	movq	%r8, G_R8(%rdi)
	movq	%r9, G_R9(%rdi)
	movq	%r10, G_R10(%rdi)
	movq	%r11, G_R11(%rdi)
	movq	%r12, G_R12(%rdi)
	movq	%r13, G_R13(%rdi)
	movq	%r14, G_R14(%rdi)
	movq	%r15, G_R15(%rdi)
	popq	G_RDI(%rdi)
	xorl	%eax, %eax
.Lout:
	addq	$8, %rsp		/* the gpr array pointer */
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.size	vmx_enter, . - vmx_enter

	.section .note.GNU-stack, "", @progbits
