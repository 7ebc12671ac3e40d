/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cooperative tasks (task.h).  A task's stack starts with the frame that
 * task_switch() pops: six callee-saved registers, then the "return
 * address" task_first_entry, which calls task_main().  A canary at the
 * stack's far end catches a task that outgrew it (checked at every switch
 * back: a panic, not memory quietly overwritten).
 */
#include <stdlib.h>
#include <string.h>
#include "arch/x86/task.h"
#include "hv/lib/panic.h"
#include "hv/lib/wipe.h"

#define CANARY		0x6b7361747972726full	/* "ferrytask" */
#define STACK_MIN	(16u * 1024)

struct task {
	uint64_t sp;			/* saved while it is not running */
	void (*fn)(void *arg);
	void *arg;
	uint64_t *stack;		/* lowest address: the canary */
	size_t stack_size;
	enum task_want want;
	bool done;
	struct task *next;
};

void task_switch(uint64_t *save_sp, uint64_t load_sp);
void task_first_entry(void);
void task_main(void);

static struct task *tasks;		/* in spawn order */
static struct task *current;		/* NULL: the main context runs */
static uint64_t main_sp;
static unsigned int nr_tasks;
static bool any_busy;

struct task *task_spawn(void (*fn)(void *arg), void *arg, size_t stack)
{
	struct task *t, **tail;
	uint64_t *top;

	stack = stack < STACK_MIN ? STACK_MIN : (stack + 15) & ~(size_t)15;
	if (nr_tasks == TASK_MAX || !(t = calloc(1, sizeof(*t))))
		return NULL;
	if (!(t->stack = malloc(stack))) {
		free(t);
		return NULL;
	}
	t->stack_size = stack;
	t->stack[0] = CANARY;
	top = (uint64_t *)((uintptr_t)t->stack + stack);
	*--top = (uint64_t)(uintptr_t)task_first_entry;
	for (int i = 0; i < 6; i++)
		*--top = 0;			/* rbp rbx r12-r15 */
	t->sp = (uint64_t)(uintptr_t)top;
	t->fn = fn;
	t->arg = arg;
	t->want = TASK_BUSY;
	for (tail = &tasks; *tail; tail = &(*tail)->next)
		;
	*tail = t;
	nr_tasks++;
	return t;
}

void task_main(void)
{
	struct task *t = current;

	t->fn(t->arg);
	t->done = true;
	task_switch(&t->sp, main_sp);
	panic("task: a finished task was resumed");
}

void task_yield(enum task_want want)
{
	struct task *t = current;

	if (!t)
		return;
	t->want = want;
	task_switch(&t->sp, main_sp);
}

bool task_running(void)
{
	return current != NULL;
}

/* Run t to its next yield; true if it has ended (and is to be freed). */
static bool resume(struct task *t)
{
	current = t;
	task_switch(&main_sp, t->sp);
	current = NULL;
	if (t->stack[0] != CANARY)
		panic("task: a task overran its stack");
	return t->done;
}

enum task_poll task_run_all(void)
{
	bool busy = false, some = false;
	struct task **p = &tasks;

	if (current)
		return TASK_NONE;
	while (*p) {
		struct task *t = *p;

		if (resume(t)) {
			*p = t->next;
			nr_tasks--;
			/* zeroed before it goes: a migration's handshake and
			 * sealing leave key material in the library's locals */
			mem_wipe(t->stack, t->stack_size);
			free(t->stack);
			free(t);
			continue;
		}
		some = true;
		busy |= t->want == TASK_BUSY;
		p = &t->next;
	}
	any_busy = busy;
	return !some ? TASK_NONE : busy ? TASK_SOME_BUSY : TASK_ALL_WAIT;
}

bool task_busy(void)
{
	return any_busy;
}

unsigned int task_count(void)
{
	return nr_tasks;
}
