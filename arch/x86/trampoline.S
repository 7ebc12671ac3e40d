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
	movq	T(t_stack), %rdi
	movq	T(t_index), %rsi
	movq	T(t_entry), %rax
	jmpq	*%rax

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
	.globl	tramp_end
tramp_end:
