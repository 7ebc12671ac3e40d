/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the guest-image loaders share: how they write guest memory, and
 * which kind of image a module holds.
 */
#ifndef FERRY_HV_LOADER_LOADER_H
#define FERRY_HV_LOADER_LOADER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Guest memory access for loaders.  Both return 0 or a negative errno and
 * must themselves check that [gpa, gpa + len) is guest RAM.
 */
struct loader_mem_ops {
	int (*copy)(void *ctx, uint64_t gpa, const void *src, size_t len);
	int (*zero)(void *ctx, uint64_t gpa, size_t len);
	void *ctx;
};

enum loader_kind {
	LOADER_MB1,		/* multiboot1 ELF: hv/loader/mb1elf.h */
	LOADER_BZIMAGE,		/* Linux bzImage: hv/loader/bzimage.h */
	LOADER_PVH,		/* ELF64 with a PVH entry (vmlinux): hv/loader/pvh.h */
	LOADER_UNKNOWN,		/* why: in the reason string */
};

/* Which loader a module is for, from its first bytes.  For LOADER_UNKNOWN
 * *why says what the module looks like instead. */
enum loader_kind loader_probe(const void *image, size_t len, const char **why);

#endif
