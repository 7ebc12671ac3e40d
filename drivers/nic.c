/* SPDX-License-Identifier: BSD-2-Clause */
/* The NIC drivers, the PCI scan for their cards and the choice of one. */
#include <errno.h>
#include "drivers/nic.h"

static const struct nic_driver *const drivers[] = {
	&e1000_driver, &e1000e_driver, &virtio_net_driver,
};

struct scan {
	struct nic_found *found;
	unsigned int n, max;
};

static const struct nic_driver *driver_for(const struct pci_dev *d)
{
	for (unsigned int i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (drivers[i]->match(d, drivers[i]->arg))
			return drivers[i];
	return NULL;
}

static bool scan_one(const struct pci_dev *d, void *arg)
{
	struct scan *s = arg;
	const struct nic_driver *drv = driver_for(d);
	struct nic_found *f;

	if (!drv)
		return false;
	f = &s->found[s->n++];
	*f = (struct nic_found){ .pci = *d, .drv = drv };
	f->mac_ok = drv->read_mac(d, drv->arg, f->mac) == 0;
	return s->n == s->max;
}

unsigned int nic_scan(struct nic_found *found, unsigned int max)
{
	struct scan s = { found, 0, max };

	if (max)
		pci_foreach(scan_one, &s);
	return s.n;
}

int nic_start(const struct nic_found *found, unsigned int n, const struct nic_sel *sel,
	      struct nic **out, unsigned int *which)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct nic_found *f = &found[i];

		if (!nic_sel_match(sel, f->pci.bus, f->pci.dev, f->pci.fn,
				   f->mac_ok ? f->mac : NULL))
			continue;
		*which = i;
		return f->drv->probe(&f->pci, f->drv->arg, out);
	}
	return -ENODEV;
}
