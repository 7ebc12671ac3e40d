/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multiboot2 boot information parser and ferry's own command-line parser.
 *
 * mb2_parse() walks the information block GRUB hands to ferry (multiboot2
 * specification, section 3.6 "Boot information format") and copies what
 * ferry needs into a plain struct.  Every length in the block is checked
 * before use: a malformed block yields a negative errno and a message in
 * info->errmsg naming the record and its offset; the caller prints it and
 * stops.  The parser only reads the block; it never writes to it.
 *
 * mb2_parse_cmdline() parses ferry's command line (console=, loglevel=, ip=,
 * gw=).  Unknown or malformed options only produce warnings.
 */
#ifndef FERRY_BOOT_MB2INFO_H
#define FERRY_BOOT_MB2INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hv/lib/log.h"

/* Tag types (multiboot2 spec 3.6.2 .. 3.6.16). */
#define MB2_TAG_END		0
#define MB2_TAG_CMDLINE		1
#define MB2_TAG_LOADER_NAME	2
#define MB2_TAG_MODULE		3
#define MB2_TAG_MEMINFO		4
#define MB2_TAG_MMAP		6
#define MB2_TAG_EFI64		12	/* EFI 64-bit system table pointer */
#define MB2_TAG_ACPI_OLD	14
#define MB2_TAG_ACPI_NEW	15
#define MB2_TAG_EFI_MMAP	17	/* EFI memory map (GetMemoryMap output) */
#define MB2_TAG_EFI_BS		18	/* EFI boot services not terminated */

#define MB2_EFI_DESC_MIN	40	/* sizeof(EFI_MEMORY_DESCRIPTOR), UEFI 2.10 7.2 */

/* Memory map entry types (spec 3.6.8). */
#define MB2_MEM_USABLE		1
#define MB2_MEM_RESERVED	2
#define MB2_MEM_ACPI_RECLAIM	3
#define MB2_MEM_NVS		4
#define MB2_MEM_BAD		5

#define MB2_INFO_MAX_SIZE	(1u << 20)	/* refuse larger blocks */
#define MB2_MAX_MODULES		32
#define MB2_MAX_MMAP		128
#define MB2_RSDP_MAX		36		/* ACPI 2.0+ RSDP length */
#define MB2_ERRMSG_LEN		128

/* One boot module; mod_end is exclusive (GRUB sets it to start + size). */
struct mb2_module {
	uint64_t start;
	uint64_t end;
	const char *cmdline;	/* points into the info block, NUL-terminated */
};

struct mb2_mmap_entry {
	uint64_t base;
	uint64_t len;
	uint32_t type;		/* MB2_MEM_* (other values: treat as reserved) */
};

/*
 * What ferry extracted from the block.  Filled once by mb2_parse() on the
 * boot CPU and read-only afterwards.  String pointers point into the info
 * block: they stay valid as long as the caller keeps the block mapped (its
 * physical range should be reserved from the frame allocator).
 */
struct mb2_info {
	uint32_t total_size;		/* bytes of the block */
	const char *cmdline;		/* tag 1, NULL if absent */
	const char *loader_name;	/* tag 2, NULL if absent */

	bool has_meminfo;		/* tag 4 */
	uint32_t mem_lower_kb;
	uint32_t mem_upper_kb;

	uint32_t nr_modules;		/* tag 3, in block order */
	uint32_t modules_dropped;	/* beyond MB2_MAX_MODULES (warned) */
	struct mb2_module modules[MB2_MAX_MODULES];

	bool has_mmap;			/* tag 6 */
	uint32_t nr_mmap;
	uint32_t mmap_dropped;		/* beyond MB2_MAX_MMAP (warned) */
	struct mb2_mmap_entry mmap[MB2_MAX_MMAP];

	uint32_t rsdp_version;		/* 0 none, 1 tag 14, 2 tag 15 (preferred) */
	uint32_t rsdp_len;		/* bytes valid in rsdp[] */
	uint8_t rsdp[MB2_RSDP_MAX];

	/* UEFI boot (tags 12, 17, 18): recorded, not needed to boot. */
	uint64_t efi_systab;		/* tag 12, 0 if absent */
	bool efi_bs_active;		/* tag 18: boot services not exited */
	bool has_efi_mmap;		/* tag 17 */
	uint32_t efi_desc_size;		/* bytes per descriptor, >= 40 */
	uint32_t efi_desc_version;
	uint32_t nr_efi_desc;		/* whole descriptors in the tag */
	const uint8_t *efi_mmap;	/* first descriptor, inside the block */

	char errmsg[MB2_ERRMSG_LEN];	/* why mb2_parse() failed */
};

/*
 * Parse the block at `block`, of which `mapped` bytes are readable.
 * Returns 0, or -EINVAL (malformed: see info->errmsg) / -E2BIG (total_size
 * above MB2_INFO_MAX_SIZE).  `block` needs no particular alignment.
 */
int mb2_parse(const void *block, size_t mapped, struct mb2_info *info);

/* --- ferry's command line --- */

#define MB2_OPT_STR_LEN		24	/* "255.255.255.255/32" fits */
#define MB2_MAX_WARN		8
#define MB2_WARN_LEN		64

/* Parsed options; defaults are COM1 (0x3f8) at 115200 baud, LOG_INFO. */
struct mb2_cmdline {
	uint16_t console_port;		/* I/O port base of the 16550 */
	uint32_t console_baud;		/* divides 115200 exactly */
	enum log_level loglevel;
	char ip[MB2_OPT_STR_LEN];	/* "A.B.C.D/LEN", "" if not given */
	char gw[MB2_OPT_STR_LEN];	/* "A.B.C.D", "" if not given */
	char nic[MB2_OPT_STR_LEN];	/* "pci:BB:DD.F" or a MAC, "" if not
					 * given; checked by drivers/nicsel.c */
	uint32_t nr_warn;		/* entries in warn[] */
	uint32_t warn_dropped;		/* warnings beyond MB2_MAX_WARN */
	char warn[MB2_MAX_WARN][MB2_WARN_LEN];
};

/*
 * Parse `cmdline` (may be NULL) into `out`, starting from the defaults.
 * Options: console=com1..com4[,BAUD] or console=0xPORT[,BAUD];
 * loglevel=0..3 or err|warn|info|debug; ip=A.B.C.D/LEN; gw=A.B.C.D;
 * nic=pci:BB:DD.F or nic=MAC (kept as text: the network code parses it).
 * A first word starting with '/' (the image path) is ignored.  Unknown or
 * malformed options are recorded in out->warn[] and otherwise ignored.
 * Returns the number of warnings.
 */
int mb2_parse_cmdline(const char *cmdline, struct mb2_cmdline *out);

#endif
