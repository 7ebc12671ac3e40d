/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the C entry point.  Checks the multiboot1 hand-over, copies
 * what it needs from the multiboot information (memory sizes, command
 * line) before any mode may overwrite it, picks the mode from the command
 * line and runs it.  Also the options parser and power off.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define MB_BOOT_MAGIC 0x2BADB002
#define MB_INFO_MEM (1u << 0)
#define MB_INFO_CMDLINE (1u << 2)
#define MB_INFO_MODS (1u << 3)
#define MB_INFO_MMAP (1u << 6)
#define MB_MEM_AVAILABLE 1
#define FOUR_GIB 0x100000000ull
#define CMDLINE_MAX 512
#define MAX_TOKENS 32

/* The start of the multiboot information, Multiboot 0.6.96 3.3. */
struct mb_info {
	uint32_t flags;
	uint32_t mem_lower; /* KiB below 1 MiB */
	uint32_t mem_upper; /* KiB from 1 MiB to the first hole */
	uint32_t boot_device;
	uint32_t cmdline; /* physical address of a C string */
	uint32_t mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr; /* valid with MB_INFO_MMAP */
};

/* One module (spec 3.3): [start, end) and its string. */
struct mb_module {
	uint32_t start, end, string, reserved;
};

/* One memory map entry (spec 3.3): size counts the bytes after itself. */
struct mb_mmap {
	uint32_t size;
	uint64_t base, len;
	uint32_t type;
} __attribute__((packed));

struct mode {
	const char *name;
	bool timer; /* needs the PIT interrupt */
	void (*run)(void);
};

static const struct mode modes[] = {
	{ "hello", false, mode_hello },
	{ "echo", false, mode_echo },
	{ "crash", false, mode_crash },
	{ "memtest", false, mode_memtest },
	{ "heartbeat", true, mode_heartbeat },
	{ "tickrate", true, mode_tickrate },
	{ "fpu", true, mode_fpu },
	{ "exits", true, mode_exits },
	{ "work", true, mode_work },
	{ "share", true, mode_share },
	{ "hostile", false, mode_hostile },
	{ "vqhostile", true, mode_vqhostile },
	{ "netflood", true, mode_netflood },
	{ "netbeat", true, mode_netbeat },
	{ "dirty", true, mode_dirty },
	{ "spin", false, mode_spin },
	{ "triplefault", false, mode_triplefault },
	{ "ipiflood", true, mode_ipiflood },
	{ "smp", true, mode_smp },
};

struct tg_boot tg_boot;
static char cmdline[CMDLINE_MAX];
/* The command line split at blanks: words with '=' are options, the first
 * word naming a mode is the mode, anything else (the kernel path that
 * QEMU and GRUB put first) is ignored. */
static char *tokens[MAX_TOKENS];
static int ntokens;

static void split_cmdline(void)
{
	char *p = cmdline;

	while (*p && ntokens < MAX_TOKENS) {
		while (*p == ' ' || *p == '\t')
			*p++ = 0;
		if (!*p)
			break;
		tokens[ntokens++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	while (*p) /* cut a line too long to parse */
		*p++ = 0;
}

static const char *option_value(const char *key)
{
	size_t n = strlen(key);

	for (int i = 0; i < ntokens; i++)
		if (!strncmp(tokens[i], key, n) && tokens[i][n] == '=')
			return tokens[i] + n + 1;
	return NULL;
}

bool tg_opt_has(const char *key)
{
	return option_value(key) != NULL;
}

const char *tg_opt_str(const char *key)
{
	return option_value(key);
}

/* A missing or malformed value gives def (and says so). */
uint32_t tg_opt_u32(const char *key, uint32_t def)
{
	const char *v = option_value(key);
	uint32_t out;

	if (!v)
		return def;
	if (!tg_parse_u32(v, &out)) {
		tg_printf("TG WARN bad option %s=%s, using %u\n", key, v, def);
		return def;
	}
	return out;
}

/* Is name an element of the comma-separated list? */
bool tg_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (list && *list) {
		if (!strncmp(list, name, n) && (list[n] == ',' || !list[n]))
			return true;
		while (*list && *list != ',')
			list++;
		if (*list == ',')
			list++;
	}
	return false;
}

static const struct mode *find_mode(void)
{
	for (int i = 0; i < ntokens; i++)
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
			if (!strcmp(tokens[i], modes[m].name))
				return &modes[m];
	return NULL;
}

/* The end of RAM at or above 4 GiB in the memory map; 0 when none. */
static uint64_t high_ram_end(const struct mb_info *mbi)
{
	uint32_t off = 0;
	uint64_t end = 0;

	if (!(mbi->flags & MB_INFO_MMAP))
		return 0;
	while (off + sizeof(struct mb_mmap) <= mbi->mmap_length) {
		const struct mb_mmap *e = (const void *)(mbi->mmap_addr + off);

		if (e->type == MB_MEM_AVAILABLE && e->base >= FOUR_GIB &&
		    e->base + e->len > end)
			end = e->base + e->len;
		off += e->size + 4;
	}
	return end;
}

static void read_boot_info(const struct mb_info *mbi)
{
	const char *src;
	uint64_t end;

	if (mbi->flags & MB_INFO_MEM) {
		tg_boot.have_mem = true;
		tg_boot.mem_lower_kib = mbi->mem_lower;
		tg_boot.mem_upper_kib = mbi->mem_upper;
		end = TG_MIB + (uint64_t)mbi->mem_upper * 1024;
		tg_boot.ram_end = end > TG_RAM_LIMIT ? TG_RAM_LIMIT : (uint32_t)end;
	}
	tg_boot.high_end = high_ram_end(mbi);
	if (mbi->flags & MB_INFO_CMDLINE) {
		src = (const char *)mbi->cmdline;
		for (int i = 0; i < CMDLINE_MAX - 1 && src[i]; i++)
			cmdline[i] = src[i];
	}
	tg_boot.free_start =
		((uint32_t)__image_end + TG_PAGE - 1) & ~(TG_PAGE - 1);
}

/* The modules the loader gave (one line each: where, how long, a checksum
 * of the bytes, the string); free memory starts past the last. */
static void report_modules(const struct mb_info *mbi)
{
	const struct mb_module *mod = (const void *)mbi->mods_addr;

	if (!(mbi->flags & MB_INFO_MODS))
		return;
	tg_printf("TG modules count=%u\n", mbi->mods_count);
	for (uint32_t i = 0; i < mbi->mods_count && i < 64; i++) {
		const uint8_t *p = (const void *)mod[i].start;
		uint32_t sum = 0, end;

		for (uint32_t j = 0; mod[i].start + j < mod[i].end; j++)
			sum = sum * 31 + p[j];
		tg_printf("TG module %u start=0x%x len=%u sum=0x%08x string=\"%s\"\n", i,
			  mod[i].start, mod[i].end - mod[i].start, sum,
			  mod[i].string ? (const char *)mod[i].string : "");
		end = (mod[i].end + TG_PAGE - 1) & ~(TG_PAGE - 1);
		if (end > tg_boot.free_start)
			tg_boot.free_start = end;
	}
}

/* Power off: ferry's control port first, then QEMU's isa-debug-exit,
 * and if neither is there, stop for good. */
void tg_poweroff(void)
{
	tg_printf("TG poweroff\n");
	outw(TG_CTL_PORT, TG_CTL_POWEROFF);
	outb(TG_QEMU_EXIT_PORT, 0);
	tg_halt_forever();
}

void tg_halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

void tg_main(uint32_t magic, const struct mb_info *mbi);

void tg_main(uint32_t magic, const struct mb_info *mbi)
{
	const struct mode *m;

	tg_uart_init();
	tg_trap_init();
	tg_pic_init();
	if (magic != MB_BOOT_MAGIC) {
		tg_printf("TG FAIL boot magic=0x%08x\n", magic);
		tg_poweroff();
	}
	read_boot_info(mbi);
	tg_printf("TG boot cmdline=\"%s\" mem_lower_kib=%u mem_upper_kib=%u\n",
		  cmdline, tg_boot.mem_lower_kib, tg_boot.mem_upper_kib);
	report_modules(mbi);
	split_cmdline();
	m = find_mode();
	if (!m) {
		tg_printf("TG WARN no mode on the command line, using hello\n");
		m = &modes[0];
	}
	tg_printf("TG mode %s\n", m->name);
	if (m->timer)
		tg_timer_start();
	m->run();
	tg_poweroff();
}
