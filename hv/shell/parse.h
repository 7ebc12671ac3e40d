/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing for shell commands: splitting a line into arguments, and checking
 * the arguments commands take (key=value lists, numbers, sizes, IPv4
 * addresses and prefixes, HOST[:PORT], guest names).  Pure functions; all
 * return 0 or a negative errno and write their result only on success.
 */
#ifndef FERRY_HV_SHELL_PARSE_H
#define FERRY_HV_SHELL_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#define PARSE_MAX_ARGS	32	/* most arguments a line may have */
#define PARSE_NAME_MAX	31	/* longest guest name */

/*
 * Split line in place into at most max_args arguments, separated by spaces
 * or tabs.  Double quotes group ("a b" is one argument, and so is
 * key="a b", giving key=a b); inside quotes \" and \\ stand for " and \,
 * any other backslash is kept.  Outside quotes a backslash is literal.
 * Returns argc, -EINVAL for an unterminated quote, -E2BIG for too many
 * arguments.  argv points into line, which is overwritten.
 */
int parse_split(char *line, char **argv, int max_args);

/*
 * key=value arguments.  keys is a NULL-terminated list of accepted keys;
 * vals[i] receives the value of keys[i] (the text after '=', maybe empty)
 * or NULL if absent.  Every argument must be key=value with a known key,
 * each at most once.  On error returns -EINVAL (not key=value), -ENOENT
 * (unknown key) or -EEXIST (duplicate) and sets *bad to the argument's
 * index; vals is then incomplete.  kv_strerror() names the error.
 */
int kv_parse(int argc, char *const *argv, const char *const *keys,
	     const char **vals, int *bad);
const char *kv_strerror(int err);

/*
 * Unsigned decimal, or hexadecimal with 0x, in [min, max]; no sign, no
 * spaces, no trailing characters.  -EINVAL if not a number, -ERANGE if it
 * overflows or is outside [min, max].
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* As parse_u64 with an optional K, M, G or T suffix (powers of 1024). */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Dotted-quad IPv4 address, four decimal parts 0..255 without leading
 * zeros.  *ip is in host order: "10.0.0.1" gives 0x0a000001.  -EINVAL.
 */
int parse_ipv4(const char *s, uint32_t *ip);

/* ADDR/LEN prefix, LEN in 0..32 ("10.0.0.2/24").  -EINVAL. */
int parse_ipv4_prefix(const char *s, uint32_t *ip, unsigned int *len);

/*
 * HOST[:PORT]: HOST an IPv4 address, PORT 1..65535; without ":PORT",
 * *port is default_port.  -EINVAL.
 */
int parse_host_port(const char *s, uint16_t default_port,
		    uint32_t *ip, uint16_t *port);

/*
 * A comma-separated list has no empty element: it is not empty and has no
 * leading, trailing or doubled comma.  strtok_r passes over empty elements,
 * so "1,,3", ",1" and "1," would read as typos that worked, and "" or ","
 * as no list at all.
 */
bool list_valid(const char *s);

/* Guest name: 1..PARSE_NAME_MAX of [A-Za-z0-9_.-], first a letter/digit. */
bool name_valid(const char *s);

#endif
