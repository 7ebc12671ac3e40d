/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Levelled logging: every message goes to the in-memory log ring (shown by
 * the shell's `log` command) and, when its level is at or below the console
 * log level, to the console.  Safe to call from any CPU.
 */
#ifndef FERRY_HV_LOG_H
#define FERRY_HV_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_printf(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pr_err(...)   log_printf(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)  log_printf(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log_printf(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_printf(LOG_DEBUG, __VA_ARGS__)

/* Where console output goes; set once at boot (the UART), NULL drops it. */
void log_set_sink(void (*write)(const char *buf, size_t len));
void log_set_level(enum log_level console_level);

/*
 * Hold console lines back (they still reach the ring) while the console
 * shows a guest or the operator types at the prompt, so a host message
 * never lands inside a guest's line or a half-typed command;
 * log_console_flush() writes what is held at a point the caller chooses and
 * says whether there was anything.  Releasing the hold flushes too.
 */
void log_console_hold(bool hold);
bool log_console_flush(void);
bool log_console_pending(void);		/* lines held (no lock: a hint) */

/* Copy the ring's oldest-to-newest contents through fn, in chunks. */
void log_dump(void (*fn)(const char *buf, size_t len, void *arg), void *arg);

#endif
