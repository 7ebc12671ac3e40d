/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: multiboot1 header, 32-bit entry point, GDT reload, the
 * interrupt stubs (vectors 0-47) and tg_catch, the setjmp-like helper that
 * lets the hostile mode survive the exceptions it provokes.
 */

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003 /* bit 0: page-align modules, bit 1: mem info */

	.section .multiboot, "a"
	.balign 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .bss
	.balign 16
stack_bottom:
	.skip 16384
stack_top:

	.section .rodata
	.balign 8
/* Flat 4 GiB segments: 0x08 code, 0x10 data (SDM Vol. 3A 3.4.5), with
 * the accessed bit preset so the CPU never writes to this table. */
gdt:
	.quad 0
	.quad 0x00CF9B000000FFFF
	.quad 0x00CF93000000FFFF
gdt_end:
gdt_ptr:
	.word gdt_end - gdt - 1
	.long gdt

	.text
	.globl _start
	.type _start, @function
/* Multiboot: EAX = 0x2BADB002, EBX = info (physical), flat segments,
 * interrupts off, paging off; ESP and the GDT are ours to set. */
_start:
	cli
	cld
	mov %eax, %ebp
	mov %ebx, %esi
	/* Zero .bss ourselves: not every loader is known to do it. */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	shr $2, %ecx
	xor %eax, %eax
	rep stosl
	mov $stack_top, %esp
	lgdt gdt_ptr
	ljmp $0x08, $1f
1:	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %fs
	mov %ax, %gs
	mov %ax, %ss
	push %esi
	push %ebp
	call tg_main
2:	cli
	hlt
	jmp 2b
	.size _start, . - _start

/* Interrupt stubs: push a zero error code where the CPU pushes none
 * (SDM Vol. 3A 6.13: vectors 8, 10-14, 17 and 21 have one; AMD APM Vol. 2
 * 8.2: so do 29 and 30), then the vector. */
.macro STUB n
	.balign 8
isr\n:
	.if (\n == 8) || (\n >= 10 && \n <= 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	push $0
	.endif
	push $\n
	jmp isr_common
.endm

	.altmacro
.macro STUBS from, to
	STUB \from
	.if \to-\from
	STUBS %(\from+1), \to
	.endif
.endm
	STUBS 0, 47

isr_common:
	pusha
	push %esp
	call tg_trap
	add $4, %esp
	popa
	add $8, %esp
	iret

	.section .rodata
	.balign 4
	.globl tg_isr_table
.macro ENTRY n
	.long isr\n
.endm
.macro ENTRIES from, to
	ENTRY \from
	.if \to-\from
	ENTRIES %(\from+1), \to
	.endif
.endm
tg_isr_table:
	ENTRIES 0, 47
	.noaltmacro

	.section .bss
	.balign 4
	.globl tg_catch_esp
tg_catch_esp:
	.long 0

	.text
/* int tg_catch(void (*fn)(void *), void *arg): cdecl, keeps EBX ESI EDI
 * EBP and EFLAGS (the interrupt flag) across an exception. */
	.globl tg_catch
	.type tg_catch, @function
tg_catch:
	push %ebp
	push %ebx
	push %esi
	push %edi
	pushf
	mov %esp, tg_catch_esp
	mov 28(%esp), %eax	/* arg */
	mov 24(%esp), %ecx	/* fn */
	push %eax
	call *%ecx
	add $4, %esp
	movl $0, tg_catch_esp
	mov $-1, %eax
catch_out:
	popf
	pop %edi
	pop %esi
	pop %ebx
	pop %ebp
	ret
	.size tg_catch, . - tg_catch

/* void tg_catch_resume(int vector): drop the exception frame and return
 * vector from the armed tg_catch. */
	.globl tg_catch_resume
	.type tg_catch_resume, @function
tg_catch_resume:
	mov 4(%esp), %eax
	mov tg_catch_esp, %esp
	movl $0, tg_catch_esp
	jmp catch_out
	.size tg_catch_resume, . - tg_catch_resume

	.section .note.GNU-stack, "", @progbits
