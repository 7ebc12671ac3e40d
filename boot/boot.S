/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multiboot2 header and the 32-bit entry GRUB jumps to.  It checks that it
 * was loaded by a multiboot2 loader onto a 64-bit CPU, turns on long mode
 * with early page tables (the first 4 GiB identity-mapped, at the direct map
 * and under the kernel image's high address), and calls kmain() in C.
 * Everything here runs at its physical address; see boot/linker.ld.
 */
#include "boot/layout.h"

#define MB2_MAGIC	0xe85250d6
#define MB2_ARCH_I386	0
#define MB2_LOADER_EAX	0x36d76289

	.section .boot.header, "a"
	.balign 8
mb2_header:
	.long	MB2_MAGIC
	.long	MB2_ARCH_I386
	.long	mb2_header_end - mb2_header
	.long	-(MB2_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))
	/* end tag */
	.word	0, 0
	.long	8
mb2_header_end:

	.section .boot.text, "ax"
	.code32
	.globl	_start
_start:
	cli
	cld
	movl	$boot_stack_top, %esp
	movl	%eax, boot_magic
	movl	%ebx, boot_info

	cmpl	$MB2_LOADER_EAX, %eax
	jne	.Lno_mb2

	/* CPUID 0x80000001 EDX bit 29: long mode */
	movl	$0x80000000, %eax
	cpuid
	cmpl	$0x80000001, %eax
	jb	.Lno_lm
	movl	$0x80000001, %eax
	cpuid
	btl	$29, %edx
	jnc	.Lno_lm
	movl	%edx, %esi		/* bit 20: NX */

	/* PAE (+PGE) then CR3 */
	movl	%cr4, %eax
	orl	$((1 << 5) | (1 << 7)), %eax
	movl	%eax, %cr4
	movl	$early_pml4, %eax
	movl	%eax, %cr3

	/* EFER.LME, and NXE when the CPU has NX */
	movl	$0xc0000080, %ecx
	rdmsr
	orl	$(1 << 8), %eax
	btl	$20, %esi
	jnc	1f
	orl	$(1 << 11), %eax
1:	wrmsr

	/* PG | WP | PE */
	movl	%cr0, %eax
	orl	$((1 << 31) | (1 << 16) | 1), %eax
	movl	%eax, %cr0

	lgdt	early_gdt_ptr
	ljmp	$0x08, $long_entry

.Lno_mb2:
	movl	$msg_no_mb2, %esi
	jmp	early_fail
.Lno_lm:
	movl	$msg_no_lm, %esi
	jmp	early_fail

/* Print the NUL-terminated string at %esi on COM1 (and port 0xe9), then stop. */
early_fail:
	movw	$0x3fb, %dx		/* LCR: 8N1 */
	movb	$3, %al
	outb	%al, %dx
1:	lodsb
	testb	%al, %al
	jz	2f
	outb	%al, $0xe9
	movw	$0x3f8, %dx
	outb	%al, %dx
	jmp	1b
2:	cli
	hlt
	jmp	2b

	.code64
long_entry:
	xorl	%eax, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movl	%eax, %fs
	movl	%eax, %gs
	movabsq	$high_entry, %rax
	jmp	*%rax

/*
 * Application processors arrive here in 64-bit mode from the real-mode
 * trampoline (arch/x86/trampoline.S), still on the early page tables, with
 * %rdi = the CPU's stack top and %rsi = its index.
 */
	.globl	ap_long_entry
ap_long_entry:
	xorl	%eax, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movq	%rdi, %rsp
	movabsq	$ap_high_entry, %rax
	jmp	*%rax

	.section .boot.data, "aw"
msg_no_mb2:
	.asciz	"ferry: not loaded by a multiboot2 loader; boot ferry with GRUB's 'multiboot2' command\r\n"
msg_no_lm:
	.asciz	"ferry: this CPU has no 64-bit long mode; ferry needs an x86-64 CPU\r\n"

	.balign 8
	.globl	boot_magic, boot_info
boot_magic:	.long 0
boot_info:	.long 0

	.balign 16
early_gdt:
	.quad	0
	.quad	0x00209a0000000000	/* 0x08: 64-bit code */
	.quad	0x0000920000000000	/* 0x10: data */
early_gdt_end:
	.globl	early_gdt_ptr
early_gdt_ptr:
	.word	early_gdt_end - early_gdt - 1
	.quad	early_gdt

	.balign	4096
	.globl	early_pml4
early_pml4:
	.quad	early_pdpt + 3		/* 0: identity */
	.fill	255, 8, 0
	.quad	early_pdpt + 3		/* 256: direct map at DIRECT_MAP_BASE */
	.fill	254, 8, 0
	.quad	early_pdpt_high + 3	/* 511: kernel image */
early_pdpt:
	.quad	early_pd + 0x0000 + 3
	.quad	early_pd + 0x1000 + 3
	.quad	early_pd + 0x2000 + 3
	.quad	early_pd + 0x3000 + 3
	.fill	508, 8, 0
early_pdpt_high:
	.fill	510, 8, 0
	.quad	early_pd + 0x0000 + 3	/* 0xffffffff80000000 -> 0 */
	.quad	early_pd + 0x1000 + 3
early_pd:	/* 2048 2-MiB pages: the first 4 GiB */
	.set	i, 0
	.rept	2048
	.quad	(i << 21) | 0x83
	.set	i, i + 1
	.endr

	.section .boot.bss, "aw", @nobits
	.balign	16
	.space	4096
boot_stack_top:
