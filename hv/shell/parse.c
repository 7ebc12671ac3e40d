/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing for shell commands: argument splitting and argument checkers
 * (see parse.h).  Number conversion is left to strtoul/strtoull; the code
 * here only decides which strings may be handed to them.
 */
#include "hv/shell/parse.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ---- splitting ---- */

/*
 * Unquote the argument starting at s in place (the output never outruns
 * the input) and NUL-terminate it.  Returns where the next argument may
 * start, or NULL if a quote is left open.
 */
static char *unquote(char *s)
{
	char *d = s;
	char *next;
	bool quoted = false;

	for (; *s && (quoted || !is_space(*s)); s++) {
		if (*s == '"') {
			quoted = !quoted;
			continue;
		}
		if (quoted && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		*d++ = *s;
	}
	if (quoted)
		return NULL;
	next = *s ? s + 1 : s;
	*d = '\0';
	return next;
}

int parse_split(char *line, char **argv, int max_args)
{
	char *s = line;
	int argc = 0;

	for (;;) {
		while (is_space(*s))
			s++;
		if (*s == '\0')
			return argc;
		if (argc >= max_args)
			return -E2BIG;
		argv[argc++] = s;
		s = unquote(s);
		if (!s)
			return -EINVAL;
	}
}

/* ---- key=value ---- */

static int key_index(const char *arg, size_t klen, const char *const *keys)
{
	int i;

	for (i = 0; keys[i]; i++)
		if (strlen(keys[i]) == klen && memcmp(keys[i], arg, klen) == 0)
			return i;
	return -1;
}

static int kv_one(const char *arg, const char *const *keys, const char **vals)
{
	const char *eq = strchr(arg, '=');
	int k;

	if (!eq || eq == arg)
		return -EINVAL;
	k = key_index(arg, (size_t)(eq - arg), keys);
	if (k < 0)
		return -ENOENT;
	if (vals[k])
		return -EEXIST;
	vals[k] = eq + 1;
	return 0;
}

int kv_parse(int argc, char *const *argv, const char *const *keys,
	     const char **vals, int *bad)
{
	int i, r;

	for (i = 0; keys[i]; i++)
		vals[i] = NULL;
	for (i = 0; i < argc; i++) {
		r = kv_one(argv[i], keys, vals);
		if (r < 0) {
			if (bad)
				*bad = i;
			return r;
		}
	}
	return 0;
}

const char *kv_strerror(int err)
{
	switch (err) {
	case -EINVAL:
		return "expected key=value";
	case -ENOENT:
		return "unknown key";
	case -EEXIST:
		return "duplicate key";
	default:
		return "bad argument";
	}
}

/* ---- numbers ---- */

/* Convert the number at the start of s; *end is where it stops. */
static int scan_u64(const char *s, uint64_t *v, char **end)
{
	int base = 10;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!is_xdigit(s[2]))
			return -EINVAL;
		base = 16;
	} else if (!is_digit(s[0])) {
		return -EINVAL;		/* also rejects sign and spaces */
	}
	errno = 0;
	*v = strtoull(s, end, base);
	return errno == ERANGE ? -ERANGE : 0;
}

static int check_range(uint64_t v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	char *end;
	int r = scan_u64(s, &v, &end);

	if (r)
		return r;
	if (*end)
		return -EINVAL;
	return check_range(v, min, max, out);
}

/* Shift for an optional K/M/G/T suffix (either case); -1 if invalid. */
static int suffix_shift(const char *sfx)
{
	static const char units[4] = { 'K', 'M', 'G', 'T' };
	const char *u;
	char c = sfx[0];

	if (c == '\0')
		return 0;
	if (c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	u = memchr(units, c, sizeof(units));
	if (!u || sfx[1] != '\0')
		return -1;
	return 10 * (int)(u - units + 1);
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	char *end;
	int shift, r = scan_u64(s, &v, &end);

	if (r)
		return r;
	shift = suffix_shift(end);
	if (shift < 0)
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	return check_range(v << shift, min, max, out);
}

/*
 * A small decimal at the start of s: at least one digit, no leading zero
 * (so "08" is not read as octal by anyone), at most max.
 */
static int scan_dec(const char *s, unsigned long max, unsigned long *v,
		    const char **end)
{
	char *e;

	if (!is_digit(s[0]) || (s[0] == '0' && is_digit(s[1])))
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &e, 10);
	if (errno == ERANGE || *v > max)
		return -EINVAL;
	*end = e;
	return 0;
}

/* ---- addresses ---- */

/* Dotted quad at the start of s (RFC 791 address in host order). */
static int scan_ipv4(const char *s, uint32_t *ip, const char **end)
{
	uint32_t a = 0;
	unsigned long part;
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (i > 0 && *s++ != '.')
			return -EINVAL;
		if (scan_dec(s, 255, &part, &s))
			return -EINVAL;
		a = (a << 8) | (uint32_t)part;
	}
	*ip = a;
	*end = s;
	return 0;
}

int parse_ipv4(const char *s, uint32_t *ip)
{
	const char *end;
	uint32_t a;

	if (scan_ipv4(s, &a, &end) || *end)
		return -EINVAL;
	*ip = a;
	return 0;
}

int parse_ipv4_prefix(const char *s, uint32_t *ip, unsigned int *len)
{
	const char *end;
	unsigned long n;
	uint32_t a;

	if (scan_ipv4(s, &a, &end) || *end != '/')
		return -EINVAL;
	if (scan_dec(end + 1, 32, &n, &end) || *end)
		return -EINVAL;
	*ip = a;
	*len = (unsigned int)n;
	return 0;
}

int parse_host_port(const char *s, uint16_t default_port,
		    uint32_t *ip, uint16_t *port)
{
	const char *end;
	unsigned long p = default_port;
	uint32_t a;

	if (scan_ipv4(s, &a, &end))
		return -EINVAL;
	if (*end == ':') {
		if (scan_dec(end + 1, 65535, &p, &end) || p == 0)
			return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*ip = a;
	*port = (uint16_t)p;
	return 0;
}

/* ---- names ---- */

static bool is_name_char(char c)
{
	return is_alnum(c) || c == '_' || c == '.' || c == '-';
}

bool list_valid(const char *s)
{
	size_t n = strlen(s);

	return n && s[0] != ',' && s[n - 1] != ',' && !strstr(s, ",,");
}

bool name_valid(const char *s)
{
	size_t n;

	if (!s || !is_alnum(s[0]))
		return false;
	for (n = 0; s[n]; n++)
		if (n >= PARSE_NAME_MAX || !is_name_char(s[n]))
			return false;
	return true;
}
