/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Real-mode start-up code for application processors.  smp.c copies it to
 * TRAMPOLINE_PA (below 1 MiB) and fills in the data words at its end; each
 * AP starts here on the SIPI, goes through protected mode into long mode on
 * the early page tables, and jumps to ap_long_entry (boot/boot.S).
 */
#define TRAMPOLINE_PA	0x8000
#define T(sym)		((sym) - tramp_start + TRAMPOLINE_PA)

	.section .trampoline, "a"
	.code16
	.globl	tramp_start
tramp_start:
	cli
	cld
	xorw	%ax, %ax
	movw	%ax, %ds
	lgdtl	T(tgdt_ptr)
	movl	%cr0, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$0x08, $T(t32)

	.code32
t32:
	movw	$0x10, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	movl	%cr4, %eax
	orl	$((1 << 5) | (1 << 7)), %eax	/* PAE, PGE */
	movl	%eax, %cr4
	movl	T(t_cr3), %eax
	movl	%eax, %cr3
	movl	$0xc0000080, %ecx
	rdmsr
	orl	T(t_efer), %eax
	wrmsr
	movl	%cr0, %eax
	orl	$0x80010001, %eax		/* PG, WP, PE */
	movl	%eax, %cr0
	ljmpl	$0x18, $T(t64)

	.code64
t64:
	/* Whose data is this?  Only the CPU it names takes it, once: a CPU
	 * that answers late (after smp.c gave up on it) finds another's
	 * data, or none, and parks.  Our APIC id: CPUID 0Bh's x2APIC id
	 * where that leaf is valid, else CPUID 1's 8-bit one. */
	xorl	%eax, %eax
	cpuid
	movl	%eax, %r8d			/* highest basic leaf */
	movl	$1, %eax
	cpuid
	shrl	$24, %ebx
	movl	%ebx, %r9d
	cmpl	$0xb, %r8d
	jb	1f
	movl	$0xb, %eax
	xorl	%ecx, %ecx
	cpuid
	testl	%ebx, %ebx			/* no topology: the leaf says nothing */
	jz	1f
	movl	%edx, %r9d
1:	cmpl	T(t_apic), %r9d
	jne	park
	xorl	%eax, %eax			/* claim: 0 (posted) -> 1 (taken) */
	movl	$1, %ecx
	lock cmpxchgl %ecx, T(t_claim)
	jz	2f
	pause					/* another CPU looks at it: again */
	jmp	1b
2:	cmpl	T(t_apic), %r9d			/* reposted for another meanwhile */
	je	3f
	movl	$0, T(t_claim)			/* give it back */
	jmp	park
3:	movq	T(t_stack), %rdi
	movq	T(t_index), %rsi
	movq	T(t_entry), %rax
	movl	$2, T(t_claim)			/* read: smp.c may post the next */
	jmpq	*%rax
park:
	cli
	hlt
	jmp	park

	.balign	8
tgdt:
	.quad	0
	.quad	0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad	0x00cf92000000ffff	/* 0x10: data */
	.quad	0x00209a0000000000	/* 0x18: 64-bit code */
tgdt_ptr:
	.word	tgdt_ptr - tgdt - 1
	.long	T(tgdt)

	.balign	8
	.globl	tramp_data
tramp_data:	/* layout: struct tramp_data in smp.c */
t_cr3:		.long	0
t_efer:		.long	0
t_stack:	.quad	0
t_index:	.quad	0
t_entry:	.quad	0
t_apic:		.long	0xffffffff
t_claim:	.long	3			/* nothing posted */
	.globl	tramp_end
tramp_end:
