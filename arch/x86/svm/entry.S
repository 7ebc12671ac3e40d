/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SVM world switch (APM Vol. 2 15.5 "VMRUN", 15.5.2 "VMSAVE and
 * VMLOAD", 15.17 "Global Interrupt Flag").  See svm_vmrun() in svm.h.
 *
 * VMRUN saves and restores only the host's RAX, RSP, RIP, RFLAGS, CRs,
 * EFER, GDTR/IDTR and CS/DS/ES/SS (in the VM_HSAVE_PA area).  The host's
 * FS, GS (ferry's per-CPU pointer), TR, LDTR, KERNEL_GS_BASE, STAR/LSTAR/
 * CSTAR/SFMASK and SYSENTER MSRs are swapped with VMLOAD guest before and
 * VMSAVE guest, VMLOAD host after the run, and the other general
 * registers here.  The host's values never change once the CPU is up, so
 * svm_cpu_enable() saved them with VMSAVE once, not here at every run.  Between VMLOAD guest and VMLOAD host GS
 * is the guest's, so nothing here may touch per-CPU data; GIF = 0 keeps
 * interrupts and NMIs away meanwhile.
 */

#include "asm-offsets.h"	/* G_<reg>: offsets in uint64_t gpr[] */

/* Our frame after the pushes below. */
#define F_HOST	0	/* host VMCB physical address */
#define F_GUEST	8	/* guest VMCB physical address */
#define F_GPR	16	/* gpr[] */

	.text
	.globl	svm_vmrun
	.type	svm_vmrun, @function
/* void svm_vmrun(uint64_t guest_vmcb_pa (rdi), uint64_t host_vmcb_pa (rsi),
 *		  uint64_t *gpr (rdx)) */
svm_vmrun:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	pushq	%rdx
	pushq	%rdi
	pushq	%rsi

	clgi
	sti				/* held off by GIF = 0; VMRUN saves IF = 1 */
	movq	F_GUEST(%rsp), %rax
	vmload	%rax

	movq	F_GPR(%rsp), %rax
	movq	G_RCX(%rax), %rcx
	movq	G_RDX(%rax), %rdx
	movq	G_RBX(%rax), %rbx
	movq	G_RBP(%rax), %rbp
	movq	G_RSI(%rax), %rsi
	movq	G_RDI(%rax), %rdi
	movq	G_R8(%rax), %r8
	movq	G_R9(%rax), %r9
	movq	G_R10(%rax), %r10
	movq	G_R11(%rax), %r11
	movq	G_R12(%rax), %r12
	movq	G_R13(%rax), %r13
	movq	G_R14(%rax), %r14
	movq	G_R15(%rax), %r15
	movq	F_GUEST(%rsp), %rax

	vmrun	%rax

	/* #VMEXIT: RAX, RSP, RIP and RFLAGS are the host's again, GIF = 0. */
	movq	F_GPR(%rsp), %rax
	movq	%rcx, G_RCX(%rax)
	movq	%rdx, G_RDX(%rax)
	movq	%rbx, G_RBX(%rax)
	movq	%rbp, G_RBP(%rax)
	movq	%rsi, G_RSI(%rax)
	movq	%rdi, G_RDI(%rax)
	movq	%r8, G_R8(%rax)
	movq	%r9, G_R9(%rax)
	movq	%r10, G_R10(%rax)
	movq	%r11, G_R11(%rax)
	movq	%r12, G_R12(%rax)
	movq	%r13, G_R13(%rax)
	movq	%r14, G_R14(%rax)
	movq	%r15, G_R15(%rax)

	movq	F_GUEST(%rsp), %rax
	vmsave	%rax
	movq	F_HOST(%rsp), %rax
	vmload	%rax
	cli				/* what arrived stays pending for the caller */
	stgi

	addq	$24, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.size	svm_vmrun, . - svm_vmrun

	.section .note.GNU-stack, "", @progbits
