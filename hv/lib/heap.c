/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * System-call glue for newlib: the heap (a region carved from RAM at boot,
 * grown by _sbrk), stdout/stderr through the output set at boot, and the
 * malloc lock, which is recursive per CPU so that malloc is safe on every
 * CPU at once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "hv/lib/cpu.h"
#include "hv/lib/heap.h"
#include "hv/lib/panic.h"
#include "arch/x86/cpu.h"

static char *heap_base, *heap_brk, *heap_end;
static void (*output)(const char *s, size_t n);
unsigned int (*cpu_index_hook)(void);

void libc_set_output(void (*write_fn)(const char *s, size_t n))
{
	output = write_fn;
}

void heap_init(void *base, size_t size)
{
	heap_base = heap_brk = base;
	heap_end = heap_base + size;
}

size_t heap_used(void) { return heap_brk - heap_base; }
size_t heap_size(void) { return heap_end - heap_base; }

/* Declarations for the functions newlib calls; not part of any header. */
void *sbrk(ptrdiff_t incr);
int write(int fd, const void *buf, size_t n);
int read(int fd, void *buf, size_t n);
int close(int fd);
int fstat(int fd, struct stat *st);
int isatty(int fd);
off_t lseek(int fd, off_t off, int whence);
int getpid(void);
int kill(int pid, int sig);
void _exit(int code);
struct _reent;
void __malloc_lock(struct _reent *r);
void __malloc_unlock(struct _reent *r);

void *sbrk(ptrdiff_t incr)
{
	char *old = heap_brk;

	if (!heap_base || incr > heap_end - heap_brk || incr < heap_base - heap_brk) {
		errno = ENOMEM;
		return (void *)-1;
	}
	heap_brk += incr;
	return old;
}

int write(int fd, const void *buf, size_t n)
{
	if (fd != 1 && fd != 2) {
		errno = EBADF;
		return -1;
	}
	if (output)
		output(buf, n);
	return n;
}

int read(int fd, void *buf, size_t n)
{
	(void)fd; (void)buf; (void)n;
	errno = EBADF;
	return -1;
}

int close(int fd) { (void)fd; return -1; }
int isatty(int fd) { return fd <= 2; }
off_t lseek(int fd, off_t off, int whence) { (void)fd; (void)off; (void)whence; return -1; }
int getpid(void) { return 1; }
int kill(int pid, int sig) { (void)pid; (void)sig; errno = EINVAL; return -1; }

int fstat(int fd, struct stat *st)
{
	(void)fd;
	st->st_mode = S_IFCHR;
	return 0;
}

void _exit(int code)
{
	panic("_exit(%d) called", code);
}

/* Recursive lock: newlib's malloc may re-enter it on the same CPU. */
static volatile int malloc_owner = -1;
static int malloc_depth;
static uint64_t malloc_flags;

void __malloc_lock(struct _reent *r)
{
	int me = (int)lib_cpu_index();
	uint64_t f;

	(void)r;
	if (malloc_owner == me) {
		malloc_depth++;
		return;
	}
	f = irq_save();
	while (!__atomic_compare_exchange_n(&malloc_owner, &(int){ -1 }, me, false,
					    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		cpu_relax();
	malloc_flags = f;
	malloc_depth = 1;
}

void __malloc_unlock(struct _reent *r)
{
	(void)r;
	if (--malloc_depth)
		return;
	uint64_t f = malloc_flags;
	__atomic_store_n(&malloc_owner, -1, __ATOMIC_RELEASE);
	irq_restore(f);
}
