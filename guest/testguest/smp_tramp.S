/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: where an application processor starts.  mode_smp.c copies
 * tg_tramp_start..tg_tramp_end to a 4 KiB-aligned page P below 1 MiB and
 * sends the AP a SIPI with vector P >> 12: the AP then runs it in real
 * mode with CS = P >> 4, IP = 0 (Intel SDM Vol. 3A 8.4.4.1, "Typical AP
 * Initialization Sequence").  The copy loads the guest's GDT (its base and
 * limit were stored by SGDT at tg_tramp_gdt), sets CR0.PE and far-jumps to
 * the flat 32-bit code selector at ap_pm32, which is not copied: it runs
 * where it was linked.  There the AP takes the stack the BSP put in
 * tg_smp_ap_stack (the BSP starts one AP at a time) and calls
 * tg_smp_ap_main, which never returns.
 */

#define KERNEL_CS 0x08
#define KERNEL_DS 0x10

	.text
	.code16
	.globl tg_tramp_start
tg_tramp_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	/* 0x66: a 32-bit operand size, so all 32 bits of the base load */
	lgdtl tg_tramp_gdt - tg_tramp_start
	mov %cr0, %eax
	or $1, %eax		/* CR0.PE */
	mov %eax, %cr0
	ljmpl $KERNEL_CS, $ap_pm32

	.balign 4
	.globl tg_tramp_gdt
tg_tramp_gdt:
	.word 0			/* limit */
	.long 0			/* base */
	.globl tg_tramp_end
tg_tramp_end:

	.code32
ap_pm32:
	mov $KERNEL_DS, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %fs
	mov %ax, %gs
	mov %ax, %ss
	mov tg_smp_ap_stack, %esp
	call tg_smp_ap_main
1:	cli
	hlt
	jmp 1b

	.section .bss
	.balign 4
	.globl tg_smp_ap_stack
tg_smp_ap_stack:
	.long 0

	.section .note.GNU-stack, "", @progbits
