/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the few C library and libgcc routines a freestanding 32-bit
 * program needs (the compiler may emit calls to mem* and to the 64-bit
 * division helpers; there is no 32-bit libgcc without gcc-multilib),
 * number parsing and a small deterministic PRNG.
 */
#include "guest/testguest/tg.h"

void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;

	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;

	while (n--)
		*p++ = *q++;
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;

	for (; n; n--, p++, q++)
		if (*p != *q)
			return *p - *q;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

int strcmp(const char *a, const char *b)
{
	return strncmp(a, b, (size_t)-1);
}

/* Shift-and-subtract 64-bit division; division by zero yields all ones. */
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem)
{
	uint64_t q = 0, r = 0;
	int i;

	if (d == 0) {
		*rem = n;
		return ~0ull;
	}
	if ((n >> 32) == 0 && (d >> 32) == 0) {
		*rem = (uint32_t)n % (uint32_t)d;
		return (uint32_t)n / (uint32_t)d;
	}
	for (i = 63; i >= 0; i--) {
		r = (r << 1) | ((n >> i) & 1);
		if (r >= d) {
			r -= d;
			q |= 1ull << i;
		}
	}
	*rem = r;
	return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d)
{
	uint64_t r;

	return udivmod64(n, d, &r);
}

uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem)
{
	uint64_t r, q = udivmod64(n, d, &r);

	if (rem)
		*rem = r;
	return q;
}

uint64_t __umoddi3(uint64_t n, uint64_t d)
{
	uint64_t r;

	udivmod64(n, d, &r);
	return r;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/* Decimal or 0x-prefixed hexadecimal; false on junk, empty or overflow. */
bool tg_parse_u32(const char *s, uint32_t *out)
{
	uint32_t base = 10;
	uint64_t v = 0;
	int d;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		d = digit_value(*s);
		if ((uint32_t)d >= base)
			return false;
		v = v * base + (uint32_t)d;
		if (v > 0xFFFFFFFFull)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* Marsaglia's xorshift32; the state must not be zero. */
uint32_t tg_xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* A cheap integer hash (the murmur3 finalizer). */
uint32_t tg_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x85EBCA6Bu;
	x ^= x >> 13;
	x *= 0xC2B2AE35u;
	x ^= x >> 16;
	return x;
}
