/* SPDX-License-Identifier: BSD-2-Clause */
/* Which loader a module is for (see loader.h). */
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/loader/bzimage.h"
#include "hv/loader/loader.h"
#include "hv/loader/mb1elf.h"
#include "hv/loader/pvh.h"

#define EM_386		3
#define EM_X86_64	62

enum loader_kind loader_probe(const void *image, size_t len, const char **why)
{
	const uint8_t *b = image;

	*why = NULL;
	if (bz_is_bzimage(image, len))
		return LOADER_BZIMAGE;
	if (mb1_aout_kludge(image, len))
		return LOADER_MB1;	/* its header says where it loads, as GRUB reads it */
	if (len >= 20 && !memcmp(b, "\177ELF", 4)) {
		uint16_t machine = get_le16(b + 18);

		if (b[4] == 1 && machine == EM_386)
			return LOADER_MB1;
		if (pvh_has_entry(image, len))
			return LOADER_PVH;
		*why = machine == EM_X86_64 ? "a 64-bit ELF with no PVH entry note (ferry loads "
					      "multiboot1 ELF32 kernels, Linux bzImages and "
					      "PVH kernels such as vmlinux)"
					    : "an ELF file for another architecture";
		return LOADER_UNKNOWN;
	}
	*why = "neither a multiboot1 kernel, a Linux bzImage nor a PVH kernel";
	return LOADER_UNKNOWN;
}
