/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pvpanic on PCI: see pvpanic.h.
 */
#include "hv/vdev/pvpanic.h"

#define PVPANIC_SNAP_VERSION	1
#define NO_INTX			0xFF

static void write_event(struct pvpanic *p, uint8_t v)
{
	if (v & ~PVPANIC_EVENTS || !v)
		p->stats.ignored++;
	if (v & PVPANIC_CRASH_LOADED) {
		p->stats.crash_loaded++;
		if (p->event)
			p->event(p->ctx, PVPANIC_CRASH_LOADED);
	}
	if (!(v & PVPANIC_PANICKED))
		return;
	p->stats.panics++;
	if (p->panicked)
		return;
	p->panicked = true;
	if (p->event)
		p->event(p->ctx, PVPANIC_PANICKED);
}

static void bar_rw(void *dev, unsigned int bar, uint64_t offset, uint8_t size, bool write,
		   uint64_t *val)
{
	struct pvpanic *p = dev;

	(void)bar, (void)size;		/* the bus checked both */
	if (offset) {
		p->stats.ignored++;	/* reads were zeroed by the bus */
		return;
	}
	if (write)
		write_event(p, (uint8_t)*val);
	else
		*val = PVPANIC_EVENTS;
}

void pvpanic_init(struct pvpanic *p, void (*event)(void *ctx, uint8_t event), void *ctx)
{
	static const struct vpci_id id = {
		.vendor = PVPANIC_VENDOR, .device = PVPANIC_DEVICE,
		.subsys_vendor = PVPANIC_VENDOR, .subsys_id = PVPANIC_DEVICE,
		.revision = PVPANIC_REVISION, .class_code = PVPANIC_CLASS,
	};

	vpci_fn_init(&p->fn, &id, NO_INTX, bar_rw, p);
	vpci_fn_add_bar(&p->fn, 0, PVPANIC_BAR_SIZE);	/* cannot fail: bar 0, 16 bytes */
	p->panicked = false;
	p->event = event;
	p->ctx = ctx;
	p->stats = (struct pvpanic_stats){ 0 };
}

int pvpanic_snapshot(struct pvpanic *p, struct snap *s)
{
	bool panicked = p->panicked;

	if (snap_version(s, PVPANIC_SNAP_VERSION))
		return s->err;
	snap_bool(s, &panicked);
	if (s->err || vpci_fn_snapshot(&p->fn, s))
		return s->err;
	p->panicked = panicked;
	return 0;
}
