/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For the VMX unit tests: a fake VMCS behind struct vmcs_io (an array
 * indexed by field encoding, values cut to the field's width as VMWRITE
 * does), and the capability MSRs of a Bochs-like Skylake CPU.
 */
#ifndef FERRY_TESTS_UNIT_TEST_VMX_FAKE_H
#define FERRY_TESTS_UNIT_TEST_VMX_FAKE_H

#include <stdint.h>
#include <string.h>
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

#define FAKE_FIELDS 0x8000

struct fake_vmcs {
	uint64_t val[FAKE_FIELDS];
	unsigned reads[FAKE_FIELDS];
	unsigned writes[FAKE_FIELDS];
	unsigned bad;			/* accesses to impossible encodings */
};

/* Encoding bits 14:13: 0 16-bit, 1 64-bit, 2 32-bit, 3 natural width. */
static inline uint64_t fake_width_mask(uint32_t field)
{
	switch ((field >> 13) & 3) {
	case 0: return 0xffffull;
	case 2: return 0xffffffffull;
	default: return ~0ull;
	}
}

static inline uint64_t fake_read(void *ctx, uint32_t field)
{
	struct fake_vmcs *f = ctx;

	if (field >= FAKE_FIELDS || (field & 1)) {
		f->bad++;
		return 0;
	}
	f->reads[field]++;
	return f->val[field];
}

static inline void fake_write(void *ctx, uint32_t field, uint64_t value)
{
	struct fake_vmcs *f = ctx;

	if (field >= FAKE_FIELDS || (field & 1) || (field >> 10 & 3) == 1) {
		f->bad++;	/* out of range, "high" access, or a read-only field */
		return;
	}
	f->writes[field]++;
	f->val[field] = value & fake_width_mask(field);
}

static inline void fake_io(struct fake_vmcs *f, struct vmcs_io *io)
{
	memset(f, 0, sizeof(*f));
	io->read = fake_read;
	io->write = fake_write;
	io->ctx = f;
}

/* Capability MSRs as a Skylake-class CPU (and Bochs's corei7_skylake_x)
 * report them: true controls, secondary allowed-1 0x02177fff, EPT/VPID
 * caps 0x00000f0106334141, CR0_FIXED0 0x80000021, CR4 fixed 0x2000 /
 * 0x3727ff, revision 0x2b. */
static inline void fake_caps(struct vmx_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->basic = 0x2bull | 0x1000ull << 32 | 6ull << 50 | 1ull << 54 | 1ull << 55;
	c->misc = 0x000000000000003e5ull;
	c->pin = 0x0000007f00000016ull;
	c->proc = 0xfff9fffe0401e172ull;
	c->proc2 = 0x02177fff00000000ull;
	c->exit = 0x01ffffff00036dffull;
	c->entry = 0x0003ffff000011ffull;
	c->true_pin = 0x0000007f00000016ull;
	c->true_proc = 0xfff9fffe04006172ull;
	c->true_exit = 0x01ffffff00036dfbull;
	c->true_entry = 0x0003ffff000011fbull;
	c->cr0_fixed0 = 0x80000021ull;
	c->cr0_fixed1 = 0xffffffffull;
	c->cr4_fixed0 = 0x2000ull;
	c->cr4_fixed1 = 0x3727ffull;
	c->ept_vpid = 0x00000f0106334141ull;
}

#endif
