/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 64-bit entry points: the boot CPU's first high-half instructions, the
 * application processors' and the interrupt/exception stubs that build a
 * struct trap_frame (arch/x86/desc.h) and call trap_dispatch().
 */
#include "boot/layout.h"

	.section .text.entry, "ax"
	.globl	high_entry
high_entry:
	movabsq	$bsp_stack_top, %rsp
	/* zero .bss (GRUB does, but do not depend on it) except our stack */
	movabsq	$__bss_start, %rdi
	movabsq	$bsp_stack, %rcx
	subq	%rdi, %rcx
	xorl	%eax, %eax
	rep stosb
	movabsq	$bsp_stack_top, %rdi
	movabsq	$__bss_end, %rcx
	subq	%rdi, %rcx
	rep stosb
	xorl	%ebp, %ebp
	movl	boot_magic, %edi
	movl	boot_info, %esi
	call	kmain
1:	cli
	hlt
	jmp	1b

	.globl	ap_high_entry
ap_high_entry:
	xorl	%ebp, %ebp
	movq	%rsi, %rdi		/* CPU index */
	call	ap_main
1:	cli
	hlt
	jmp	1b

/*
 * 256 stubs, 16 bytes apart.  Vectors 8, 10-14, 17, 21, 29 and 30 push an
 * error code; for the others the stub pushes a 0 so the frame is uniform.
 */
	.text
	.balign	16
	.globl	trap_stubs
trap_stubs:
	.set	v, 0
	.rept	256
	.balign	16
	.if (v == 8) || (v >= 10 && v <= 14) || (v == 17) || (v == 21) || (v == 29) || (v == 30)
	.else
	pushq	$0
	.endif
	pushq	$v
	jmp	trap_common
	.set	v, v + 1
	.endr

trap_common:
	pushq	%rax
	pushq	%rbx
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%rbp
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	cld
	movq	%rsp, %rdi
	call	trap_dispatch
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rbp
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rbx
	popq	%rax
	addq	$16, %rsp
	iretq

	.bss
	.balign	4096
	.globl	bsp_stack, bsp_stack_top
bsp_stack:
	.space	BOOT_STACK_SIZE
bsp_stack_top:
