/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cooperative tasks on the shell CPU: a long job (a migration sent in the
 * background) keeps its own stack and runs, a step at a time, whenever the
 * shell CPU does its background work; the shell stays at the prompt
 * meanwhile.  A task runs until it calls task_yield(), which only ever
 * returns to the main context (the shell's own stack), and the main
 * context resumes each task in turn from task_run_all().  No preemption,
 * no other CPU: a task may use anything the shell CPU may, and nothing
 * changes under it between two of its yields but what the main context
 * did.  (The switch itself: task_switch.S.)
 */
#ifndef FERRY_ARCH_X86_TASK_H
#define FERRY_ARCH_X86_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TASK_STACK_DEFAULT	(64u * 1024)
#define TASK_MAX		8

/* Why a task gave the CPU back. */
enum task_want {
	TASK_BUSY,	/* it has more to do at once */
	TASK_WAIT,	/* it waits for the network or time: the CPU may sleep */
};

/* What the tasks want after a task_run_all(). */
enum task_poll {
	TASK_NONE,	/* there are none */
	TASK_SOME_BUSY,	/* one or more want to run again at once */
	TASK_ALL_WAIT,	/* all wait */
};

/* A task that runs fn(arg) on a stack of its own (stack bytes, at least
 * 16 KiB), from the next task_run_all() on.  NULL: no memory, or already
 * TASK_MAX tasks. */
struct task *task_spawn(void (*fn)(void *arg), void *arg, size_t stack);

/* From a task: give the CPU back to the main context until its next
 * task_run_all().  From the main context: nothing. */
void task_yield(enum task_want want);

/* Whether a task (not the main context) is running now. */
bool task_running(void);

/* From the main context: run each task up to its next yield (or its end:
 * then it is freed).  From inside a task: TASK_NONE, nothing runs. */
enum task_poll task_run_all(void);

/* What the last task_run_all() left: whether some task wants the CPU at
 * once (so the main context should not sleep). */
bool task_busy(void);

unsigned int task_count(void);

#endif
