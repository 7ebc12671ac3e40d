/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for boot/mb2info.c: multiboot2 information blocks built here,
 * malformed and lying ones, a fixed-seed fuzz run, and ferry's command line.
 * Blocks are copied into exactly-sized heap buffers so ASan sees any read
 * past the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/mb2info.h"

static int warn_count;
static char last_log[256];

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level == LOG_WARN)
		warn_count++;
	va_start(ap, fmt);
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	va_end(ap);
}

/* ---- block builder ---- */

struct blk {
	uint8_t buf[16384];
	uint32_t len;
};

static void blk_init(struct blk *b)
{
	memset(b, 0, sizeof(*b));
	b->len = 8;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Append a tag with `plen` payload bytes; returns its offset. */
static uint32_t blk_tag(struct blk *b, uint32_t type, const void *payload, uint32_t plen)
{
	uint32_t off = b->len;

	put32(b->buf + off, type);
	put32(b->buf + off + 4, 8 + plen);
	if (plen)
		memcpy(b->buf + off + 8, payload, plen);
	b->len = (off + 8 + plen + 7) & ~7u;
	return off;
}

static void blk_string(struct blk *b, uint32_t type, const char *s)
{
	blk_tag(b, type, s, (uint32_t)strlen(s) + 1);
}

static void blk_module(struct blk *b, uint32_t start, uint32_t end, const char *s)
{
	uint8_t p[256];

	put32(p, start);
	put32(p + 4, end);
	strcpy((char *)p + 8, s);
	blk_tag(b, MB2_TAG_MODULE, p, 8 + (uint32_t)strlen(s) + 1);
}

static void blk_mmap(struct blk *b, uint32_t esize, uint32_t n,
		     const struct mb2_mmap_entry *e)
{
	uint8_t p[8192];
	uint32_t i;

	memset(p, 0, sizeof(p));
	put32(p, esize);
	put32(p + 4, 0);
	for (i = 0; i < n; i++) {
		put64(p + 8 + i * esize, e[i].base);
		put64(p + 8 + i * esize + 8, e[i].len);
		put32(p + 8 + i * esize + 16, e[i].type);
	}
	blk_tag(b, MB2_TAG_MMAP, p, 8 + n * esize);
}

static void blk_finish(struct blk *b)
{
	blk_tag(b, MB2_TAG_END, NULL, 0);
	put32(b->buf, b->len);
}

/*
 * Parse a copy of the first `len` bytes in an exactly-sized buffer.  The
 * copy lives until the next call, since the result points into it.
 */
static uint8_t *last_copy;

static int parse_copy(const void *data, size_t len, struct mb2_info *info)
{
	free(last_copy);
	last_copy = malloc(len ? len : 1);
	memcpy(last_copy, data, len);
	return mb2_parse(last_copy, len, info);
}

static struct mb2_info info;

static const struct mb2_mmap_entry sample_map[4] = {
	{ 0x0, 0x9fc00, MB2_MEM_USABLE },
	{ 0x9fc00, 0x400, MB2_MEM_RESERVED },
	{ 0x100000, 0x7ee0000, MB2_MEM_USABLE },
	{ 0x7fe0000, 0x20000, MB2_MEM_ACPI_RECLAIM },
};

static void build_good(struct blk *b)
{
	uint8_t rsdp1[20], rsdp2[36], fb[24] = { 0 };
	uint32_t mi[2] = { 639, 130048 };

	memset(rsdp1, 0x11, sizeof(rsdp1));
	memset(rsdp2, 0x22, sizeof(rsdp2));
	blk_init(b);
	blk_string(b, MB2_TAG_CMDLINE, "console=com1 loglevel=debug");
	blk_string(b, MB2_TAG_LOADER_NAME, "GRUB 2.06");
	blk_module(b, 0x200000, 0x201000, "script");
	blk_module(b, 0x300000, 0x300000, "");
	blk_tag(b, MB2_TAG_MEMINFO, mi, 8);
	blk_tag(b, 8, fb, sizeof(fb));	/* framebuffer: skipped */
	blk_tag(b, MB2_TAG_ACPI_NEW, rsdp2, sizeof(rsdp2));
	blk_tag(b, MB2_TAG_ACPI_OLD, rsdp1, sizeof(rsdp1));
	blk_mmap(b, 24, 4, sample_map);
	blk_finish(b);
}

static void test_well_formed(void **state)
{
	struct blk b;
	uint32_t i;

	(void)state;
	build_good(&b);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.total_size, b.len);
	assert_string_equal(info.cmdline, "console=com1 loglevel=debug");
	assert_string_equal(info.loader_name, "GRUB 2.06");
	assert_int_equal(info.nr_modules, 2);
	assert_int_equal(info.modules[0].start, 0x200000);
	assert_int_equal(info.modules[0].end, 0x201000);
	assert_string_equal(info.modules[0].cmdline, "script");
	assert_int_equal(info.modules[1].start, info.modules[1].end);
	assert_string_equal(info.modules[1].cmdline, "");
	assert_true(info.has_meminfo);
	assert_int_equal(info.mem_lower_kb, 639);
	assert_int_equal(info.mem_upper_kb, 130048);
	assert_true(info.has_mmap);
	assert_int_equal(info.nr_mmap, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(info.mmap[i].base, sample_map[i].base);
		assert_int_equal(info.mmap[i].len, sample_map[i].len);
		assert_int_equal(info.mmap[i].type, sample_map[i].type);
	}
	/* The new RSDP wins even though the old one comes later. */
	assert_int_equal(info.rsdp_version, 2);
	assert_int_equal(info.rsdp_len, 36);
	assert_int_equal(info.rsdp[0], 0x22);
	assert_int_equal(info.rsdp[35], 0x22);
	assert_int_equal(warn_count, 0);
}

/* Buffer not 8-aligned on the host: reads must not rely on alignment. */
static void test_unaligned_pointer(void **state)
{
	struct blk b;
	uint8_t *raw;

	(void)state;
	build_good(&b);
	raw = malloc(b.len + 1);
	memcpy(raw + 1, b.buf, b.len);
	assert_int_equal(mb2_parse(raw + 1, b.len, &info), 0);
	assert_int_equal(info.nr_mmap, 4);
	free(raw);
}

static void test_old_rsdp_only_and_minimal(void **state)
{
	struct blk b;
	uint8_t rsdp1[24];

	(void)state;
	memset(rsdp1, 0x33, sizeof(rsdp1));
	blk_init(&b);
	blk_tag(&b, MB2_TAG_ACPI_OLD, rsdp1, sizeof(rsdp1));
	blk_finish(&b);
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.rsdp_version, 1);
	assert_int_equal(info.rsdp_len, 24);
	assert_null(info.cmdline);
	assert_null(info.loader_name);
	assert_false(info.has_mmap);
	assert_false(info.has_meminfo);

	blk_init(&b);		/* just the end tag */
	blk_finish(&b);
	assert_int_equal(b.len, 16);
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.rsdp_version, 0);
}

static void test_mmap_larger_entries(void **state)
{
	struct blk b;

	(void)state;
	blk_init(&b);
	blk_mmap(&b, 32, 4, sample_map);
	blk_finish(&b);
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.nr_mmap, 4);
	assert_int_equal(info.mmap[3].base, 0x7fe0000);
	assert_int_equal(info.mmap[3].type, MB2_MEM_ACPI_RECLAIM);
}

static void expect_fail(const struct blk *b, size_t mapped, int err, const char *msg)
{
	int ret = parse_copy(b->buf, mapped, &info);

	assert_int_equal(ret, err);
	if (!strstr(info.errmsg, msg))
		fail_msg("errmsg '%s' lacks '%s'", info.errmsg, msg);
}

static void test_truncated(void **state)
{
	struct blk b;
	size_t cut;

	(void)state;
	build_good(&b);
	expect_fail(&b, 4, -EINVAL, "4 bytes mapped, need at least 8");
	assert_int_equal(mb2_parse(NULL, 100, &info), -EINVAL);
	for (cut = 8; cut < b.len; cut++)
		expect_fail(&b, cut, -EINVAL, "exceeds the");
}

static void test_total_size_lies(void **state)
{
	struct blk b;

	(void)state;
	build_good(&b);
	put32(b.buf, 4);
	expect_fail(&b, b.len, -EINVAL, "total_size 4 is below 8");
	put32(b.buf, 0xfffffff8u);
	expect_fail(&b, b.len, -E2BIG, "above the");
	put32(b.buf, MB2_INFO_MAX_SIZE);
	expect_fail(&b, b.len, -EINVAL, "exceeds the");
	/* total_size shorter than the tags: the cmdline tag runs past it. */
	put32(b.buf, 20);
	expect_fail(&b, b.len, -EINVAL, "tag 1 at offset 0x8: size 36 runs past the end (total 20)");
}

static void test_tag_size_lies(void **state)
{
	struct blk b;
	uint32_t off;
	uint8_t pay[8] = { 0 };

	(void)state;
	blk_init(&b);
	blk_string(&b, MB2_TAG_CMDLINE, "abc");	/* offset 8, 16 bytes */
	off = blk_tag(&b, MB2_TAG_MMAP, pay, 8);
	blk_finish(&b);
	assert_int_equal(off, 0x18);
	put32(b.buf + off + 4, 0x1000);
	expect_fail(&b, b.len, -EINVAL, "tag 6 at offset 0x18: size 4096 runs past the end (total 48)");
	put32(b.buf + off + 4, 4);
	expect_fail(&b, b.len, -EINVAL, "tag 6 at offset 0x18: size 4 is below 8");
	put32(b.buf + off + 4, 0);
	expect_fail(&b, b.len, -EINVAL, "size 0 is below 8");
	put32(b.buf + off + 4, 0xffffffffu);
	expect_fail(&b, b.len, -EINVAL, "runs past the end");
}

/* A producer that does not pad to 8: the next tag is read at the wrong place. */
static void test_misaligned_tag(void **state)
{
	uint8_t raw[48] = { 0 };

	(void)state;
	put32(raw, sizeof(raw));
	put32(raw + 8, MB2_TAG_CMDLINE);
	put32(raw + 12, 13);		/* "abcd\0": next tag belongs at 24 */
	memcpy(raw + 16, "abcd", 5);
	put32(raw + 21, MB2_TAG_END);	/* misplaced end tag at 21 */
	put32(raw + 25, 8);
	/* At 0x18 the parser reads type 0x800, size 0 out of the misplaced tag. */
	assert_int_equal(parse_copy(raw, sizeof(raw), &info), -EINVAL);
	assert_string_equal(info.errmsg, "tag 2048 at offset 0x18: size 0 is below 8");
}

static void test_missing_end_tag(void **state)
{
	struct blk b;

	(void)state;
	blk_init(&b);
	blk_string(&b, MB2_TAG_CMDLINE, "abc");
	put32(b.buf, b.len);		/* no end tag */
	expect_fail(&b, b.len, -EINVAL, "offset 0x18: no end tag");
	/* A total_size that leaves 4 trailing bytes: no room for a header. */
	put32(b.buf, b.len + 4);
	expect_fail(&b, b.len + 4, -EINVAL, "no end tag");
}

static void test_mmap_bad_entry_size(void **state)
{
	static const uint32_t bad[] = { 0, 8, 16, 20, 28, 36 };
	struct blk b;
	uint32_t i, off;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		blk_init(&b);
		off = b.len;
		blk_mmap(&b, 24, 2, sample_map);
		put32(b.buf + off + 8, bad[i]);
		blk_finish(&b);
		expect_fail(&b, b.len, -EINVAL, "bad entry_size");
	}
	/* Tag size not 16 + n * entry_size (a partial entry). */
	blk_init(&b);
	off = b.len;
	blk_mmap(&b, 24, 2, sample_map);
	put32(b.buf + off + 4, 16 + 24 + 8);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "not 16 + a multiple of entry_size 24");
	/* Tag too small for its own header. */
	blk_init(&b);
	blk_tag(&b, MB2_TAG_MMAP, sample_map, 4);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "too small for a memory map");
}

static void test_mmap_overflow_and_limit(void **state)
{
	static struct mb2_mmap_entry many[MB2_MAX_MMAP + 5];
	struct mb2_mmap_entry ovf = { 0xfffffffffffff000ull, 0x2000, 1 };
	struct blk b;
	uint32_t i;

	(void)state;
	blk_init(&b);
	blk_mmap(&b, 24, 1, &ovf);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "entry 0 base 0xfffffffffffff000 + length 0x2000 overflows");

	for (i = 0; i < MB2_MAX_MMAP + 5; i++)
		many[i] = (struct mb2_mmap_entry){ i * 0x1000ull, 0x1000, 1 };
	blk_init(&b);
	blk_mmap(&b, 24, MB2_MAX_MMAP + 5, many);
	blk_finish(&b);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.nr_mmap, MB2_MAX_MMAP);
	assert_int_equal(info.mmap_dropped, 5);
	assert_int_equal(info.mmap[MB2_MAX_MMAP - 1].base, (MB2_MAX_MMAP - 1) * 0x1000ull);
	assert_int_equal(warn_count, 1);
}

static void test_modules(void **state)
{
	struct blk b;
	uint32_t i, off;

	(void)state;
	blk_init(&b);
	blk_module(&b, 0x5000, 0x4fff, "bad");
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 3 at offset 0x8: module start 0x5000 > end 0x4fff");

	blk_init(&b);
	off = b.len;
	blk_module(&b, 0x5000, 0x6000, "abc");
	memcpy(b.buf + off + 16, "abcdefgh", 8);	/* overwrite NUL and pad */
	put32(b.buf + off + 4, 24);
	b.len = off + 24;
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "module string not NUL-terminated");

	blk_init(&b);
	blk_tag(&b, MB2_TAG_MODULE, "\0\0\0\0\0\0\0\0", 8);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "too small for a module");

	blk_init(&b);
	for (i = 0; i < MB2_MAX_MODULES + 3; i++)
		blk_module(&b, i * 0x1000, i * 0x1000 + 0x800, "m");
	blk_finish(&b);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.nr_modules, MB2_MAX_MODULES);
	assert_int_equal(info.modules_dropped, 3);
	assert_int_equal(warn_count, 1);
	assert_non_null(strstr(last_log, "3 modules"));
}

static void test_strings_and_small_tags(void **state)
{
	struct blk b;
	uint32_t off;
	uint8_t rs[36] = { 0 };

	(void)state;
	blk_init(&b);
	off = b.len;
	blk_string(&b, MB2_TAG_CMDLINE, "1234567");	/* 8 bytes incl. NUL */
	b.buf[off + 15] = 'x';				/* drop the NUL */
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 1 at offset 0x8: string not NUL-terminated");

	blk_init(&b);
	blk_tag(&b, MB2_TAG_LOADER_NAME, NULL, 0);	/* empty payload */
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 2 at offset 0x8: string not NUL-terminated");

	blk_init(&b);
	blk_tag(&b, MB2_TAG_MEMINFO, rs, 4);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "too small for meminfo");

	blk_init(&b);
	blk_tag(&b, MB2_TAG_ACPI_NEW, rs, 20);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 15 at offset 0x8: RSDP of 20 bytes, need 36");

	blk_init(&b);
	blk_tag(&b, MB2_TAG_ACPI_OLD, rs, 19);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "need 20");

	/* Duplicate cmdline: the first one is kept, with a warning. */
	blk_init(&b);
	blk_string(&b, MB2_TAG_CMDLINE, "first");
	blk_string(&b, MB2_TAG_CMDLINE, "second");
	blk_finish(&b);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_string_equal(info.cmdline, "first");
	assert_int_equal(warn_count, 1);
}

/* ---- fuzz ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static void check_result(const uint8_t *buf, size_t len, int ret)
{
	uint32_t i;

	if (ret) {
		assert_true(ret == -EINVAL || ret == -E2BIG);
		assert_true(info.errmsg[0] != '\0');
		return;
	}
	assert_true(info.nr_modules <= MB2_MAX_MODULES);
	assert_true(info.nr_mmap <= MB2_MAX_MMAP);
	assert_true(info.rsdp_len <= MB2_RSDP_MAX);
	if (info.cmdline)
		assert_true((const uint8_t *)info.cmdline >= buf &&
			    (const uint8_t *)info.cmdline < buf + len);
	for (i = 0; i < info.nr_modules; i++)
		assert_true(info.modules[i].start <= info.modules[i].end);
}

/* Random tags with small sizes so that the walk gets somewhere. */
static void fill_random(uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)rnd();
	if (len >= 8 && rnd() % 4)
		put32(buf, (uint32_t)(len - rnd() % 8));
	for (i = 8; i + 8 <= len; i += 8 + (rnd() % 6) * 8) {
		if (rnd() % 3 == 0)
			continue;
		put32(buf + i, rnd() % 17);
		put32(buf + i + 4, rnd() % 80);
	}
}

static void test_fuzz_random(void **state)
{
	uint8_t *buf;
	size_t len;
	int iter, ret, ok = 0;

	(void)state;
	for (iter = 0; iter < 30000; iter++) {
		len = rnd() % 600;
		buf = malloc(len ? len : 1);
		fill_random(buf, len);
		ret = mb2_parse(buf, len, &info);
		check_result(buf, len, ret);
		ok += ret == 0;
		free(buf);
	}
	print_message("fuzz: %d of 30000 random blocks parsed\n", ok);
}

static void test_fuzz_mutate(void **state)
{
	struct blk b;
	uint8_t *buf;
	int iter, n, ret, ok = 0;

	(void)state;
	build_good(&b);
	buf = malloc(b.len);
	for (iter = 0; iter < 30000; iter++) {
		memcpy(buf, b.buf, b.len);
		for (n = 1 + rnd() % 6; n > 0; n--)
			buf[rnd() % b.len] = (uint8_t)rnd();
		ret = mb2_parse(buf, b.len, &info);
		check_result(buf, b.len, ret);
		ok += ret == 0;
	}
	free(buf);
	assert_true(ok > 0);	/* some mutations only hit payload bytes */
	print_message("fuzz: %d of 30000 mutated blocks parsed\n", ok);
}

/* ---- command line ---- */

static struct mb2_cmdline cl;

static void test_cmdline_defaults(void **state)
{
	(void)state;
	assert_int_equal(mb2_parse_cmdline(NULL, &cl), 0);
	assert_int_equal(cl.console_port, 0x3f8);
	assert_int_equal(cl.console_baud, 115200);
	assert_int_equal(cl.loglevel, LOG_INFO);
	assert_string_equal(cl.ip, "");
	assert_string_equal(cl.gw, "");
	assert_int_equal(mb2_parse_cmdline("   \t ", &cl), 0);
}

/* line parses without a warning into these settings. */
static void expect_options(const char *line, uint16_t port, uint32_t baud, enum log_level level)
{
	assert_int_equal(mb2_parse_cmdline(line, &cl), 0);
	assert_int_equal(cl.console_port, port);
	assert_int_equal(cl.console_baud, baud);
	assert_int_equal(cl.loglevel, level);
}

static void test_cmdline_options(void **state)
{
	(void)state;
	expect_options("/boot/ferry.elf  console=com2,9600\tloglevel=debug "
		       "ip=10.0.0.2/24 gw=10.0.0.1 ", 0x2f8, 9600, LOG_DEBUG);
	assert_string_equal(cl.ip, "10.0.0.2/24");
	assert_string_equal(cl.gw, "10.0.0.1");
	expect_options("console=0x3e8,57600 loglevel=0", 0x3e8, 57600, LOG_ERR);
	expect_options("console=com4 loglevel=warn", 0x2e8, 115200, LOG_WARN);
	expect_options("console=com3 loglevel=3 ip=0.0.0.0/0", 0x3e8, 115200, LOG_DEBUG);
	assert_string_equal(cl.ip, "0.0.0.0/0");
	/* Edges: uppercase hex, leading zeros, the largest values. */
	expect_options("console=0X2F8,0115200 loglevel=03 ip=255.255.255.255/032 gw=010.0.0.1",
		       0x2f8, 115200, LOG_DEBUG);
	assert_string_equal(cl.ip, "255.255.255.255/032");
	assert_string_equal(cl.gw, "010.0.0.1");
	expect_options("console=0xffff", 0xffff, 115200, LOG_INFO);
}

static void expect_warn(const char *line, const char *msg)
{
	assert_int_equal(mb2_parse_cmdline(line, &cl), 1);
	if (!strstr(cl.warn[0], msg))
		fail_msg("warning '%s' lacks '%s'", cl.warn[0], msg);
	/* Nothing was changed by the bad option. */
	assert_int_equal(cl.console_port, 0x3f8);
	assert_int_equal(cl.console_baud, 115200);
	assert_int_equal(cl.loglevel, LOG_INFO);
	assert_string_equal(cl.ip, "");
	assert_string_equal(cl.gw, "");
}

static void test_cmdline_bad_options(void **state)
{
	(void)state;
	expect_warn("quiet", "unknown option 'quiet'");
	expect_warn("foo=bar", "unknown option 'foo'");
	expect_warn("ferry.elf", "unknown option 'ferry.elf'");
	expect_warn("console=com5", "unknown port");
	expect_warn("console=ttyS0,115200", "unknown port");
	expect_warn("console=0x10000", "unknown port");
	expect_warn("console=0", "unknown port");
	expect_warn("console=com1,1234", "bad baud");
	expect_warn("console=com1,0", "bad baud");
	expect_warn("console=com1,230400", "bad baud");
	expect_warn("console=com1,", "bad baud");
	expect_warn("console=com2,99999999999999999999", "bad baud");
	expect_warn("loglevel=4", "loglevel=4");
	expect_warn("loglevel=", "loglevel=");
	expect_warn("loglevel=verbose", "loglevel=verbose");
	expect_warn("ip=10.0.0.256/24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1/33", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0/24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.0001/24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1/24x", "want A.B.C.D/LEN");
	expect_warn("gw=1.2.3", "want A.B.C.D");
	expect_warn("gw=1.2.3.4x", "want A.B.C.D");
	expect_warn("gw=", "want A.B.C.D");
}

/* What strtoul alone would take, or would wrap around to a valid value. */
static void test_cmdline_junk_and_overflow(void **state)
{
	(void)state;
	expect_warn("loglevel=+1", "loglevel=+1");
	expect_warn("loglevel=-0", "loglevel=-0");
	expect_warn("loglevel=\v1", "loglevel=");
	expect_warn("loglevel=1x", "loglevel=1x");
	expect_warn("loglevel=0x1", "loglevel=0x1");
	expect_warn("loglevel=18446744073709551619", "loglevel=1844");	/* 2^64 + 3 */
	expect_warn("console=0x", "unknown port");
	expect_warn("console=0xg", "unknown port");
	expect_warn("console=0x0x3f8", "unknown port");
	expect_warn("console=0x-3f8", "unknown port");
	expect_warn("console=0x+3f8", "unknown port");
	expect_warn("console=0x3f8z", "unknown port");
	expect_warn("console=+1016", "unknown port");
	expect_warn("console=0x100000000000003f8", "unknown port");	/* wraps to 0x3f8 */
	expect_warn("console=0x10000000000000003f8", "unknown port");	/* past 2^64 */
	expect_warn("console=com1,+9600", "bad baud");
	expect_warn("console=com1,9600baud", "bad baud");
	expect_warn("console=com1,0x4b0", "bad baud");		/* baud is decimal only */
	expect_warn("console=com1,18446744073709666816", "bad baud");	/* 2^64 + 115200 */
	expect_warn("ip=10.0.0.+1/24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.-0.1/24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1/+24", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1/", "want A.B.C.D/LEN");
	expect_warn("ip=10.0.0.1/18446744073709551640", "want A.B.C.D/LEN");	/* 2^64 + 24 */
	expect_warn("ip=18446744073709551626.0.0.1/24", "want A.B.C.D/LEN");
	expect_warn("ip=10..0.1/24", "want A.B.C.D/LEN");
	expect_warn("gw=1.2.3.4.", "want A.B.C.D");
	expect_warn("gw=1.2.3.0x4", "want A.B.C.D");
	expect_warn("gw=1.2.3.\v4", "want A.B.C.D");
}

static void test_cmdline_many_warnings(void **state)
{
	char line[1024], longtok[300];

	(void)state;
	assert_int_equal(mb2_parse_cmdline("a b c d e f g h i j console=com2", &cl), 10);
	assert_int_equal(cl.nr_warn, MB2_MAX_WARN);
	assert_int_equal(cl.warn_dropped, 2);
	assert_int_equal(cl.console_port, 0x2f8);	/* good options still apply */

	memset(longtok, 'x', sizeof(longtok) - 1);
	longtok[sizeof(longtok) - 1] = '\0';
	snprintf(line, sizeof(line), "%s loglevel=err", longtok);
	assert_int_equal(mb2_parse_cmdline(line, &cl), 1);
	assert_non_null(strstr(cl.warn[0], "option too long"));
	assert_int_equal(cl.loglevel, LOG_ERR);
}

/* ---- UEFI tags 12, 17, 18 ---- */

/* Tag 17 with `n` descriptors of `dsize` bytes plus `extra` stray bytes. */
static void blk_efi_mmap(struct blk *b, uint32_t dsize, uint32_t n, uint32_t extra)
{
	uint8_t p[4096];
	uint32_t i;

	memset(p, 0xee, sizeof(p));
	put32(p, dsize);
	put32(p + 4, 1);
	for (i = 0; i < n; i++) {
		put32(p + 8 + i * dsize, 7);	/* EfiConventionalMemory */
		put64(p + 8 + i * dsize + 8, 0x100000ull * (i + 1));
	}
	blk_tag(b, MB2_TAG_EFI_MMAP, p, 8 + n * dsize + extra);
}

static void build_efi(struct blk *b, uint32_t dsize, uint32_t n, uint32_t extra)
{
	uint8_t systab[8];

	put64(systab, 0x7fe8f018ull);
	blk_init(b);
	blk_string(b, MB2_TAG_CMDLINE, "console=com1");
	blk_tag(b, MB2_TAG_EFI64, systab, sizeof(systab));
	blk_efi_mmap(b, dsize, n, extra);
	blk_mmap(b, 24, 4, sample_map);
	blk_finish(b);
}

static void test_efi_tags(void **state)
{
	struct blk b;

	(void)state;
	build_efi(&b, 48, 3, 0);
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.efi_systab, 0x7fe8f018ull);
	assert_true(info.has_efi_mmap);
	assert_int_equal(info.efi_desc_size, 48);
	assert_int_equal(info.efi_desc_version, 1);
	assert_int_equal(info.nr_efi_desc, 3);
	assert_int_equal(info.efi_mmap[2 * 48], 7);
	assert_int_equal(info.efi_mmap[2 * 48 + 8 + 2], 0x30);	/* base 0x300000 */
	assert_false(info.efi_bs_active);
	assert_int_equal(info.nr_mmap, 4);		/* tag 6 still read */
	assert_string_equal(info.cmdline, "console=com1");

	/* Tag 18 (boot services left running) is noted. */
	b.len -= 8;
	blk_tag(&b, MB2_TAG_EFI_BS, NULL, 0);
	blk_finish(&b);
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_true(info.efi_bs_active);
}

static void test_efi_hostile_lengths(void **state)
{
	struct blk b;
	uint8_t p[8] = { 0 };

	(void)state;
	/* A stray partial descriptor is dropped with a warning, not fatal. */
	build_efi(&b, 40, 2, 24);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.nr_efi_desc, 2);
	assert_int_equal(warn_count, 1);
	assert_non_null(strstr(last_log, "24 trailing bytes"));

	build_efi(&b, 32, 2, 0);
	expect_fail(&b, b.len, -EINVAL, "bad descriptor_size 32");
	build_efi(&b, 44, 2, 0);
	expect_fail(&b, b.len, -EINVAL, "bad descriptor_size 44");
	build_efi(&b, 0, 0, 0);
	expect_fail(&b, b.len, -EINVAL, "bad descriptor_size 0");
	build_efi(&b, 0xfffffffcu, 0, 0);
	expect_fail(&b, b.len, -EINVAL, "bad descriptor_size");

	/* Headers too short to hold their fields. */
	blk_init(&b);
	blk_tag(&b, MB2_TAG_EFI64, p, 4);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 12 at offset 0x8: size 12 too small");
	blk_init(&b);
	blk_tag(&b, MB2_TAG_EFI_MMAP, p, 4);
	blk_finish(&b);
	expect_fail(&b, b.len, -EINVAL, "tag 17 at offset 0x8: size 12 too small");

	/* A second map is ignored; the first one stands. */
	build_efi(&b, 40, 2, 0);
	b.len -= 8;
	blk_efi_mmap(&b, 48, 5, 0);
	blk_finish(&b);
	warn_count = 0;
	assert_int_equal(parse_copy(b.buf, b.len, &info), 0);
	assert_int_equal(info.nr_efi_desc, 2);
	assert_int_equal(info.efi_desc_size, 40);
	assert_int_equal(warn_count, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_unaligned_pointer),
		cmocka_unit_test(test_old_rsdp_only_and_minimal),
		cmocka_unit_test(test_mmap_larger_entries),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_total_size_lies),
		cmocka_unit_test(test_tag_size_lies),
		cmocka_unit_test(test_misaligned_tag),
		cmocka_unit_test(test_missing_end_tag),
		cmocka_unit_test(test_mmap_bad_entry_size),
		cmocka_unit_test(test_mmap_overflow_and_limit),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_strings_and_small_tags),
		cmocka_unit_test(test_efi_tags),
		cmocka_unit_test(test_efi_hostile_lengths),
		cmocka_unit_test(test_fuzz_random),
		cmocka_unit_test(test_fuzz_mutate),
		cmocka_unit_test(test_cmdline_defaults),
		cmocka_unit_test(test_cmdline_options),
		cmocka_unit_test(test_cmdline_bad_options),
		cmocka_unit_test(test_cmdline_junk_and_overflow),
		cmocka_unit_test(test_cmdline_many_warnings),
	};

	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	free(last_copy);
	return ret;
}
