/* SPDX-License-Identifier: BSD-2-Clause */
/* Parsing and matching the `nic=` option (drivers/nicsel.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "drivers/nicsel.h"

/* 1 or 2 hex digits at *s, at most max; advances *s. */
static bool hex_field(const char **s, unsigned int max, uint8_t *out)
{
	unsigned int v = 0, digits = 0;

	while (digits < 2 && hex_digit(**s) >= 0) {
		v = v * 16 + (unsigned int)hex_digit(**s);
		(*s)++;
		digits++;
	}
	if (!digits || v > max)
		return false;
	*out = (uint8_t)v;
	return true;
}

/* "BB:DD.F": bus 0-ff, device 0-1f, function 0-7, nothing after. */
static int parse_pci(const char *s, struct nic_sel *sel)
{
	if (!hex_field(&s, 0xff, &sel->bus) || *s++ != ':' ||
	    !hex_field(&s, 0x1f, &sel->dev) || *s++ != '.' ||
	    !hex_field(&s, 7, &sel->fn) || *s)
		return -EINVAL;
	sel->kind = NIC_SEL_PCI;
	return 0;
}

/* Six pairs of hex digits, all separated by ':' or all by '-'. */
static int parse_mac(const char *s, struct nic_sel *sel)
{
	char sep = strlen(s) == 17 ? s[2] : 0;

	if (sep != ':' && sep != '-')
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		int hi = hex_digit(s[3 * i]), lo = hex_digit(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != sep))
			return -EINVAL;
		sel->mac[i] = (uint8_t)(hi << 4 | lo);
	}
	sel->kind = NIC_SEL_MAC;
	return 0;
}

int nic_sel_parse(const char *s, struct nic_sel *sel)
{
	memset(sel, 0, sizeof(*sel));
	if (!s || !*s)
		return 0;
	if (!strncmp(s, "pci:", 4))
		return parse_pci(s + 4, sel);
	return parse_mac(s, sel);
}

bool nic_sel_match(const struct nic_sel *sel, uint8_t bus, uint8_t dev, uint8_t fn,
		   const uint8_t *mac)
{
	switch (sel->kind) {
	case NIC_SEL_PCI:
		return sel->bus == bus && sel->dev == dev && sel->fn == fn;
	case NIC_SEL_MAC:
		return mac && !memcmp(sel->mac, mac, 6);
	default:
		return true;
	}
}

void nic_sel_format(const struct nic_sel *sel, char buf[24])
{
	const uint8_t *m = sel->mac;

	if (sel->kind == NIC_SEL_PCI)
		snprintf(buf, 24, "pci:%02x:%02x.%x", sel->bus, sel->dev, sel->fn);
	else if (sel->kind == NIC_SEL_MAC)
		snprintf(buf, 24, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
			 m[4], m[5]);
	else
		snprintf(buf, 24, "the first NIC");
}
