/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stack switch under hv/task.c's cooperative tasks.  Only what the
 * System V AMD64 ABI makes a callee keep is saved: RBX, RBP, R12-R15 and
 * RSP (the caller of task_switch has already given up the rest).  ferry
 * never uses x87/SSE (tools/check-fpu.sh), so no other register moves.
 */

	.text
	.globl	task_switch
	.type	task_switch, @function
/* void task_switch(uint64_t *save_sp (rdi), uint64_t load_sp (rsi)) */
task_switch:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.size	task_switch, . - task_switch

	.globl	task_first_entry
	.type	task_first_entry, @function
/* A new task's first switch "returns" here: call task_main() on an
 * ABI-aligned stack.  It never returns. */
task_first_entry:
	andq	$-16, %rsp
	call	task_main
	ud2
	.size	task_first_entry, . - task_first_entry

	.section .note.GNU-stack, "", @progbits
