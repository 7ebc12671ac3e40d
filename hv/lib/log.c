/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log: a ring of the last LOG_RING_SIZE bytes of messages, each line
 * stamped with the time since boot, mirrored to the console by level.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include "hv/lib/log.h"
#include "hv/lib/spinlock.h"
#include "hv/lib/time.h"

#define LOG_RING_SIZE (64 * 1024)

static char ring[LOG_RING_SIZE];
static size_t ring_head;		/* total bytes ever written */
static spinlock_t ring_lock = SPINLOCK_INIT;
static void (*sink)(const char *buf, size_t len);
static enum log_level console_level = LOG_INFO;

/*
 * While the console is lent to a guest (the shell's `console`), lines meant
 * for it wait here so that they never split a line of the guest's output;
 * the console flushes them between guest lines.  Lines that do not fit are
 * only counted: the ring keeps them all.
 */
#define LOG_HELD_SIZE 4096
static char held[LOG_HELD_SIZE];
static size_t held_len, held_dropped;
static bool holding;

static const char *const level_tag[] = { "error: ", "warning: ", "", "debug: " };

void log_set_sink(void (*write)(const char *buf, size_t len))
{
	sink = write;
}

void log_set_level(enum log_level level)
{
	console_level = level;
}

static void ring_put(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ring[(ring_head + i) % LOG_RING_SIZE] = s[i];
	ring_head += n;
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	char line[512];
	uint64_t us = time_now_us();
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "[%5lu.%06lu] %s", (unsigned long)(us / 1000000),
		     (unsigned long)(us % 1000000), level_tag[level & 3]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	if (line[n - 1] != '\n')
		line[n++] = '\n';
	spin_lock(&ring_lock);
	ring_put(line, n);
	if (sink && level <= console_level) {
		if (!holding)
			sink(line, n);
		else if (held_len + n <= LOG_HELD_SIZE) {
			memcpy(held + held_len, line, n);
			held_len += n;
		} else
			held_dropped++;
	}
	spin_unlock(&ring_lock);
}

static void flush_held_locked(void)
{
	char note[96];
	int n;

	if (sink && held_len)
		sink(held, held_len);
	if (sink && held_dropped) {
		n = snprintf(note, sizeof(note), "(%zu more log lines; `log` has them)\n",
			     held_dropped);
		sink(note, (size_t)n);
	}
	held_len = 0;
	held_dropped = 0;
}

void log_console_hold(bool hold)
{
	spin_lock(&ring_lock);
	if (!hold)
		flush_held_locked();
	holding = hold;
	spin_unlock(&ring_lock);
}

bool log_console_pending(void)
{
	return __atomic_load_n(&held_len, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&held_dropped, __ATOMIC_RELAXED);
}

bool log_console_flush(void)
{
	bool any;

	spin_lock(&ring_lock);
	any = held_len || held_dropped;
	flush_held_locked();
	spin_unlock(&ring_lock);
	return any;
}

void log_dump(void (*fn)(const char *buf, size_t len, void *arg), void *arg)
{
	static char copy[LOG_RING_SIZE];
	size_t len, start;

	spin_lock(&ring_lock);
	len = ring_head < LOG_RING_SIZE ? ring_head : LOG_RING_SIZE;
	start = ring_head - len;
	for (size_t i = 0; i < len; i++)
		copy[i] = ring[(start + i) % LOG_RING_SIZE];
	spin_unlock(&ring_lock);
	/* a wrapped ring starts mid-line: skip to the first whole line */
	size_t skip = 0;
	if (ring_head > LOG_RING_SIZE)
		while (skip < len && copy[skip++] != '\n')
			;
	fn(copy + skip, len - skip, arg);
}
