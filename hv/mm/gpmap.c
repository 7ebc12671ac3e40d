/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's RAM from host frames, its EPT/NPT mapping and access to it by
 * guest-physical address.  See gpmap.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "hv/mm/gpmap.h"

#define PAGE		PT_SIZE_4K
#define FOUR_GIB	(4ull << 30)

static bool is_run(const struct gpmap *m, size_t i)
{
	return m->runs && !(i % GPMAP_RUN_FRAMES) && m->runs[i / GPMAP_RUN_FRAMES];
}

void gpmap_free(struct gpmap *m)
{
	for (size_t i = 0; m->frames && i < m->nr_frames; ) {
		size_t n = is_run(m, i) ? GPMAP_RUN_FRAMES : 1;

		if (m->frames[i])	/* 0: a failed allocation stopped before it */
			m->mem->free(m->frames[i], n);
		i += n;
	}
	free(m->frames);
	free(m->runs);
	m->frames = NULL;
	m->runs = NULL;
}

static int take_frames(struct gpmap *m)
{
	for (size_t i = 0; i < m->nr_frames; ) {
		uint64_t pa = 0;

		if (!(i % GPMAP_RUN_FRAMES) && m->nr_frames - i >= GPMAP_RUN_FRAMES)
			pa = m->mem->alloc_contig(GPMAP_RUN_FRAMES, GPMAP_RUN_FRAMES);
		if (pa) {
			m->runs[i / GPMAP_RUN_FRAMES] = 1;
			for (size_t j = 0; j < GPMAP_RUN_FRAMES; j++)
				m->frames[i + j] = pa + j * PAGE;
			i += GPMAP_RUN_FRAMES;
			continue;
		}
		pa = m->mem->alloc_frame();
		if (!pa)
			return -ENOMEM;
		m->frames[i++] = pa;
	}
	return 0;
}

int gpmap_alloc(struct gpmap *m, size_t nr_frames, const struct gpmap_mem *mem)
{
	int rc;

	*m = (struct gpmap){ .nr_frames = nr_frames, .mem = mem };
	if (!nr_frames)
		return -EINVAL;
	m->frames = calloc(nr_frames, sizeof(*m->frames));
	m->runs = calloc(nr_frames / GPMAP_RUN_FRAMES + 1, 1);
	rc = m->frames && m->runs ? take_frames(m) : -ENOMEM;
	if (rc)
		gpmap_free(m);
	return rc;
}

int gpmap_map(const struct gpmap *m, struct page_table *pt)
{
	for (size_t i = 0; i < m->nr_frames; ) {
		uint64_t size = is_run(m, i) ? PT_SIZE_2M : PAGE;
		int err = pt_map(pt, guest_page_gpa(i), m->frames[i], size, PT_RWX, 0);

		if (err < 0)
			return err;
		i += size / PAGE;
	}
	return 0;
}

void *gpmap_page_hva(const struct gpmap *m, uint64_t page)
{
	if (page >= m->nr_frames)
		return NULL;
	return m->mem->virt(m->frames[page]);
}

void *gpmap_hva(const struct gpmap *m, uint64_t gpa)
{
	char *h = gpmap_page_hva(m, guest_gpa_page(gpa));

	return h ? h + gpa % PAGE : NULL;
}

size_t gpmap_host_high_pages(const struct gpmap *m)
{
	size_t n = 0;

	for (size_t i = 0; m->frames && i < m->nr_frames; i++)
		n += m->frames[i] >= FOUR_GIB;
	return n;
}

/* Whether [gpa, gpa + len) is RAM on one side of the hole. */
static bool in_ram(const struct gpmap *m, uint64_t gpa, size_t len)
{
	uint64_t below, above, end = gpa + len;

	guest_ram_split((uint64_t)m->nr_frames * PAGE, &below, &above);
	if (end < gpa)
		return false;
	return end <= below || (gpa >= FOUR_GIB && end - FOUR_GIB <= above);
}

static int copy(const struct gpmap *m, uint64_t gpa, void *buf, size_t len, bool write)
{
	char *b = buf;

	if (!in_ram(m, gpa, len))
		return -EFAULT;
	while (len) {
		size_t chunk = PAGE - gpa % PAGE;
		char *h = gpmap_hva(m, gpa);

		if (chunk > len)
			chunk = len;
		if (write)
			memcpy(h, b, chunk);
		else
			memcpy(b, h, chunk);
		gpa += chunk;
		b += chunk;
		len -= chunk;
	}
	return 0;
}

int gpmap_read(const struct gpmap *m, uint64_t gpa, void *buf, size_t len)
{
	return copy(m, gpa, buf, len, false);
}

int gpmap_write(const struct gpmap *m, uint64_t gpa, const void *buf, size_t len)
{
	return copy(m, gpa, (void *)buf, len, true);
}
