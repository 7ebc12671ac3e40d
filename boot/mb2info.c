/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multiboot2 boot information parser (multiboot2 spec section 3.6) and
 * ferry's command-line option parser.  See boot/mb2info.h.
 *
 * The block is treated as hostile input: every read is preceded by a bound
 * check against total_size, which itself is checked against the mapped size.
 * Reads go through memcpy so the block needs no alignment on the host.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>	/* vsnprintf only */
#include <stdlib.h>
#include <string.h>

#include "boot/mb2info.h"
#include "hv/lib/log.h"

#define TAG_HDR		8u	/* u32 type, u32 size */
#define MMAP_HDR	16u	/* tag header + u32 entry_size + u32 entry_version */
#define MMAP_ENTRY_MIN	24u	/* u64 base, u64 len, u32 type, u32 reserved */
#define MODULE_HDR	16u	/* tag header + u32 mod_start + u32 mod_end */
#define RSDP_V1_LEN	20u

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

__attribute__((format(printf, 2, 3)))
static int fail(struct mb2_info *info, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(info->errmsg, sizeof(info->errmsg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The string at s if it is NUL-terminated within len bytes, else NULL. */
static const char *bounded_string(const uint8_t *s, uint32_t len)
{
	return memchr(s, '\0', len) ? (const char *)s : NULL;
}

/* Tags 1 and 2: a NUL-terminated string filling the payload. */
static int tag_string(struct mb2_info *info, const uint8_t *tag,
		      uint32_t size, uint32_t off, const char **dst)
{
	const char *s = bounded_string(tag + TAG_HDR, size - TAG_HDR);

	if (!s)
		return fail(info, "tag %u at offset 0x%x: string not NUL-terminated within size %u",
			    rd32(tag), off, size);
	if (*dst)
		pr_warn("mb2: duplicate tag %u at offset 0x%x ignored", rd32(tag), off);
	else
		*dst = s;
	return 0;
}

/* Tag 3 (spec 3.6.6): u32 mod_start, u32 mod_end, NUL-terminated string. */
static int tag_module(struct mb2_info *info, const uint8_t *tag,
		      uint32_t size, uint32_t off)
{
	struct mb2_module *m;
	uint32_t start, end;
	const char *s;

	if (size < MODULE_HDR + 1)
		return fail(info, "tag 3 at offset 0x%x: size %u too small for a module", off, size);
	start = rd32(tag + 8);
	end = rd32(tag + 12);
	if (start > end)
		return fail(info, "tag 3 at offset 0x%x: module start 0x%x > end 0x%x",
			    off, start, end);
	s = bounded_string(tag + MODULE_HDR, size - MODULE_HDR);
	if (!s)
		return fail(info, "tag 3 at offset 0x%x: module string not NUL-terminated", off);
	if (info->nr_modules == MB2_MAX_MODULES) {
		info->modules_dropped++;
		return 0;
	}
	m = &info->modules[info->nr_modules++];
	m->start = start;
	m->end = end;
	m->cmdline = s;
	return 0;
}

/* Tag 4 (spec 3.6.3): u32 mem_lower, u32 mem_upper, in KiB. */
static int tag_meminfo(struct mb2_info *info, const uint8_t *tag,
		       uint32_t size, uint32_t off)
{
	if (size < 16)
		return fail(info, "tag 4 at offset 0x%x: size %u too small for meminfo", off, size);
	info->has_meminfo = true;
	info->mem_lower_kb = rd32(tag + 8);
	info->mem_upper_kb = rd32(tag + 12);
	return 0;
}

static int mmap_entry(struct mb2_info *info, const uint8_t *e,
		      uint32_t off, uint32_t idx)
{
	uint64_t base = rd64(e), len = rd64(e + 8);
	struct mb2_mmap_entry *m;

	if (len > UINT64_MAX - base)
		return fail(info, "tag 6 at offset 0x%x: entry %u base 0x%llx + length 0x%llx overflows",
			    off, idx, (unsigned long long)base, (unsigned long long)len);
	if (info->nr_mmap == MB2_MAX_MMAP) {
		info->mmap_dropped++;
		return 0;
	}
	m = &info->mmap[info->nr_mmap++];
	m->base = base;
	m->len = len;
	m->type = rd32(e + 16);
	return 0;
}

/* Tag 6 (spec 3.6.8): entry_size, entry_version, then entries. */
static int tag_mmap(struct mb2_info *info, const uint8_t *tag,
		    uint32_t size, uint32_t off)
{
	uint32_t esize, i, n;
	int ret;

	if (size < MMAP_HDR)
		return fail(info, "tag 6 at offset 0x%x: size %u too small for a memory map", off, size);
	esize = rd32(tag + 8);
	if (esize < MMAP_ENTRY_MIN || esize % 8)
		return fail(info, "tag 6 at offset 0x%x: bad entry_size %u (need >= 24, multiple of 8)",
			    off, esize);
	if ((size - MMAP_HDR) % esize)
		return fail(info, "tag 6 at offset 0x%x: size %u is not 16 + a multiple of entry_size %u",
			    off, size, esize);
	if (info->has_mmap) {
		pr_warn("mb2: duplicate memory map at offset 0x%x ignored", off);
		return 0;
	}
	info->has_mmap = true;
	n = (size - MMAP_HDR) / esize;
	for (i = 0; i < n; i++) {
		ret = mmap_entry(info, tag + MMAP_HDR + i * esize, off, i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Tags 14/15 (spec 3.6.12/13): a copy of the RSDP; the newer one wins. */
static int tag_acpi(struct mb2_info *info, const uint8_t *tag,
		    uint32_t size, uint32_t off, uint32_t version)
{
	uint32_t need = version == 2 ? MB2_RSDP_MAX : RSDP_V1_LEN;
	uint32_t len = size - TAG_HDR;

	if (len < need)
		return fail(info, "tag %u at offset 0x%x: RSDP of %u bytes, need %u",
			    rd32(tag), off, len, need);
	if (info->rsdp_version >= version)
		return 0;
	if (len > MB2_RSDP_MAX)
		len = MB2_RSDP_MAX;
	memcpy(info->rsdp, tag + TAG_HDR, len);
	info->rsdp_len = len;
	info->rsdp_version = version;
	return 0;
}

/* Tag 12 (spec 3.6.16): the 64-bit EFI system table's physical address. */
static int tag_efi64(struct mb2_info *info, const uint8_t *tag,
		     uint32_t size, uint32_t off)
{
	if (size < TAG_HDR + 8)
		return fail(info, "tag 12 at offset 0x%x: size %u too small for a pointer", off, size);
	if (!info->efi_systab)
		info->efi_systab = rd64(tag + 8);
	return 0;
}

/*
 * Tag 17 (spec 3.6.18): u32 descriptor_size, u32 descriptor_version, then
 * the EFI memory descriptors (UEFI 2.10 7.2, GetMemoryMap()).  Descriptors
 * may be larger than the 40 bytes UEFI defines; a trailing partial one is
 * dropped with a warning rather than refusing to boot.
 */
static int tag_efi_mmap(struct mb2_info *info, const uint8_t *tag,
			uint32_t size, uint32_t off)
{
	uint32_t dsize, body;

	if (size < MMAP_HDR)
		return fail(info, "tag 17 at offset 0x%x: size %u too small for an EFI memory map", off, size);
	dsize = rd32(tag + 8);
	if (dsize < MB2_EFI_DESC_MIN || dsize % 8)
		return fail(info, "tag 17 at offset 0x%x: bad descriptor_size %u (need >= 40, multiple of 8)",
			    off, dsize);
	if (info->has_efi_mmap) {
		pr_warn("mb2: duplicate EFI memory map at offset 0x%x ignored", off);
		return 0;
	}
	body = size - MMAP_HDR;
	if (body % dsize)
		pr_warn("mb2: EFI memory map at offset 0x%x: %u trailing bytes ignored", off, body % dsize);
	info->has_efi_mmap = true;
	info->efi_desc_size = dsize;
	info->efi_desc_version = rd32(tag + 12);
	info->nr_efi_desc = body / dsize;
	info->efi_mmap = tag + MMAP_HDR;
	return 0;
}

/* Precondition: 8 <= size and the whole tag lies inside the block. */
static int handle_tag(struct mb2_info *info, const uint8_t *tag,
		      uint32_t size, uint32_t off)
{
	switch (rd32(tag)) {
	case MB2_TAG_CMDLINE:
		return tag_string(info, tag, size, off, &info->cmdline);
	case MB2_TAG_LOADER_NAME:
		return tag_string(info, tag, size, off, &info->loader_name);
	case MB2_TAG_MODULE:
		return tag_module(info, tag, size, off);
	case MB2_TAG_MEMINFO:
		return tag_meminfo(info, tag, size, off);
	case MB2_TAG_MMAP:
		return tag_mmap(info, tag, size, off);
	case MB2_TAG_ACPI_OLD:
		return tag_acpi(info, tag, size, off, 1);
	case MB2_TAG_ACPI_NEW:
		return tag_acpi(info, tag, size, off, 2);
	case MB2_TAG_EFI64:
		return tag_efi64(info, tag, size, off);
	case MB2_TAG_EFI_MMAP:
		return tag_efi_mmap(info, tag, size, off);
	case MB2_TAG_EFI_BS:
		info->efi_bs_active = true;
		return 0;
	default:
		return 0;	/* tags ferry does not use */
	}
}

/* Tags start at offset 8 and at every 8-byte boundary after a tag. */
static int walk_tags(const uint8_t *p, uint32_t total, struct mb2_info *info)
{
	uint32_t off = 8, type, size;
	int ret;

	for (;;) {
		if (off > total || total - off < TAG_HDR)
			return fail(info, "offset 0x%x: no end tag before the end of the block (total %u)",
				    off, total);
		type = rd32(p + off);
		size = rd32(p + off + 4);
		if (size < TAG_HDR)
			return fail(info, "tag %u at offset 0x%x: size %u is below 8", type, off, size);
		if (size > total - off)
			return fail(info, "tag %u at offset 0x%x: size %u runs past the end (total %u)",
				    type, off, size, total);
		if (type == MB2_TAG_END)
			return 0;
		ret = handle_tag(info, p + off, size, off);
		if (ret)
			return ret;
		off += (size + 7u) & ~7u;	/* size <= 1 MiB: no overflow */
	}
}

static void warn_dropped(const struct mb2_info *info)
{
	if (info->modules_dropped)
		pr_warn("mb2: %u modules beyond the first %u ignored",
			info->modules_dropped, MB2_MAX_MODULES);
	if (info->mmap_dropped)
		pr_warn("mb2: %u memory map entries beyond the first %u ignored",
			info->mmap_dropped, MB2_MAX_MMAP);
}

int mb2_parse(const void *block, size_t mapped, struct mb2_info *info)
{
	const uint8_t *p = block;
	uint32_t total;
	int ret;

	memset(info, 0, sizeof(*info));
	if (!p || mapped < 8)
		return fail(info, "info block: %zu bytes mapped, need at least 8", p ? mapped : 0);
	total = rd32(p);
	info->total_size = total;
	if (total < 8)
		return fail(info, "info block: total_size %u is below 8", total);
	if (total > MB2_INFO_MAX_SIZE) {
		fail(info, "info block: total_size %u above the %u limit", total, MB2_INFO_MAX_SIZE);
		return -E2BIG;
	}
	if (total > mapped)
		return fail(info, "info block: total_size %u exceeds the %zu bytes mapped", total, mapped);
	ret = walk_tags(p, total, info);
	if (ret == 0)
		warn_dropped(info);
	return ret;
}

/* ------------------------------------------------------------------ */
/* ferry's command line                                               */
/* ------------------------------------------------------------------ */

#define TOKEN_MAX	128

static const uint16_t com_ports[4] = { 0x3f8, 0x2f8, 0x3e8, 0x2e8 };
static const char *const level_names[4] = { "err", "warn", "info", "debug" };

__attribute__((format(printf, 2, 3)))
static void add_warn(struct mb2_cmdline *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nr_warn == MB2_MAX_WARN) {
		c->warn_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(c->warn[c->nr_warn++], MB2_WARN_LEN, fmt, ap);
	va_end(ap);
}

static bool starts_with_digit(const char *s)
{
	return *s >= '0' && *s <= '9';
}

/*
 * Whole string s as a number <= max: decimal, or hex after "0x" if
 * allow_hex.  strtoul alone would also take leading blanks and a sign.
 */
static bool parse_uint(const char *s, bool allow_hex, uint32_t max, uint32_t *out)
{
	bool hex = allow_hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned long v;
	char *end;

	if (!starts_with_digit(s))
		return false;
	errno = 0;
	/* Base 16 takes the "0x" itself; a bare "0x" or a second one is junk. */
	v = strtoul(s, &end, hex ? 16 : 10);
	if (errno == ERANGE || *end || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "A.B.C.D" at s, each 0..255 in at most 3 digits; returns the end or NULL. */
static const char *parse_quad(const char *s)
{
	unsigned long v;
	unsigned int part;
	char *end;

	for (part = 0; part < 4; part++) {
		if (part && *s++ != '.')
			return NULL;
		if (!starts_with_digit(s))
			return NULL;
		v = strtoul(s, &end, 10);
		if (end - s > 3 || v > 255)
			return NULL;
		s = end;
	}
	return s;
}

static bool parse_port(const char *s, uint16_t *port)
{
	uint32_t v;

	if (strlen(s) == 4 && !strncmp(s, "com", 3) && s[3] >= '1' && s[3] <= '4') {
		*port = com_ports[s[3] - '1'];
		return true;
	}
	if (!parse_uint(s, true, 0xffff, &v) || v == 0)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* console=PORT[,BAUD]; val is a writable copy.  All or nothing. */
static void opt_console(struct mb2_cmdline *c, char *val)
{
	char *comma = strchr(val, ',');
	uint32_t baud = c->console_baud;
	uint16_t port;

	if (comma)
		*comma = '\0';
	if (!parse_port(val, &port)) {
		add_warn(c, "console=%.40s: unknown port", val);
		return;
	}
	if (comma && (!parse_uint(comma + 1, false, 115200, &baud) ||
		      baud == 0 || 115200 % baud)) {
		add_warn(c, "console: bad baud rate '%.30s'", comma + 1);
		return;
	}
	c->console_port = port;
	c->console_baud = baud;
}

static void opt_loglevel(struct mb2_cmdline *c, const char *val)
{
	uint32_t v;

	for (v = 0; v < 4; v++) {
		if (!strcmp(val, level_names[v]))
			break;
	}
	if (v == 4 && !parse_uint(val, false, 3, &v)) {
		add_warn(c, "loglevel=%.40s: want 0..3 or err/warn/info/debug", val);
		return;
	}
	c->loglevel = (enum log_level)v;
}

static void opt_ip(struct mb2_cmdline *c, const char *val)
{
	const char *end = parse_quad(val);
	uint32_t len;

	if (!end || *end != '/' || !parse_uint(end + 1, false, 32, &len)) {
		add_warn(c, "ip=%.40s: want A.B.C.D/LEN", val);
		return;
	}
	snprintf(c->ip, sizeof(c->ip), "%s", val);
}

static void opt_gw(struct mb2_cmdline *c, const char *val)
{
	const char *end = parse_quad(val);

	if (!end || *end) {
		add_warn(c, "gw=%.40s: want A.B.C.D", val);
		return;
	}
	snprintf(c->gw, sizeof(c->gw), "%s", val);
}

/* Only the length is checked here: drivers/nicsel.c parses the value. */
static void opt_nic(struct mb2_cmdline *c, const char *val)
{
	if (!*val || strlen(val) >= sizeof(c->nic)) {
		add_warn(c, "nic=%.40s: want pci:BB:DD.F or a MAC address", val);
		return;
	}
	snprintf(c->nic, sizeof(c->nic), "%s", val);
}

/* One whitespace-free token, copied into a writable buffer. */
static void parse_token(struct mb2_cmdline *c, char *tok, bool first)
{
	char *eq = strchr(tok, '=');

	if (first && tok[0] == '/')
		return;		/* the image path some loaders prepend */
	if (eq)
		*eq = '\0';
	if (eq && !strcmp(tok, "console"))
		opt_console(c, eq + 1);
	else if (eq && !strcmp(tok, "loglevel"))
		opt_loglevel(c, eq + 1);
	else if (eq && !strcmp(tok, "ip"))
		opt_ip(c, eq + 1);
	else if (eq && !strcmp(tok, "gw"))
		opt_gw(c, eq + 1);
	else if (eq && !strcmp(tok, "nic"))
		opt_nic(c, eq + 1);
	else
		add_warn(c, "unknown option '%.40s'", tok);
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

int mb2_parse_cmdline(const char *cmdline, struct mb2_cmdline *out)
{
	char tok[TOKEN_MAX];
	const char *s = cmdline, *start;
	bool first = true;
	size_t len;

	memset(out, 0, sizeof(*out));
	out->console_port = com_ports[0];
	out->console_baud = 115200;
	out->loglevel = LOG_INFO;
	while (s && *s) {
		while (is_space(*s))
			s++;
		for (start = s; *s && !is_space(*s); s++)
			;
		len = (size_t)(s - start);
		if (len == 0)
			break;
		if (len >= sizeof(tok)) {
			add_warn(out, "option too long: '%.30s...'", start);
		} else {
			memcpy(tok, start, len);
			tok[len] = '\0';
			parse_token(out, tok, first);
		}
		first = false;
	}
	return (int)(out->nr_warn + out->warn_dropped);
}
