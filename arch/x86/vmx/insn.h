/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The VMX instructions and debug-register moves, as inline functions that
 * report the outcome (Intel SDM Vol. 3C "VMX Instruction Reference",
 * "Conventions"): CF=1 is VMfailInvalid (no current VMCS: -ENXIO), ZF=1 is
 * VMfailValid (the reason is in the VM-instruction error field: -EIO).
 * Hardware only: the pure code in this directory never includes this.
 */
#ifndef FERRY_ARCH_X86_VMX_INSN_H
#define FERRY_ARCH_X86_VMX_INSN_H

#include <errno.h>
#include <stdint.h>

static inline int vmx_status(uint8_t cf, uint8_t zf)
{
	return cf ? -ENXIO : zf ? -EIO : 0;
}

static inline int vmxon(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmxon %[pa]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf) : [pa] "m"(pa) : "cc", "memory");
	return vmx_status(cf, zf);
}

static inline int vmclear(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmclear %[pa]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf) : [pa] "m"(pa) : "cc", "memory");
	return vmx_status(cf, zf);
}

static inline int vmptrld(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmptrld %[pa]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf) : [pa] "m"(pa) : "cc", "memory");
	return vmx_status(cf, zf);
}

static inline int vmread(uint32_t field, uint64_t *value)
{
	uint8_t cf, zf;
	uint64_t v;

	__asm__ volatile("vmread %[f], %[v]; setc %[cf]; setz %[zf]"
			 : [v] "=r"(v), [cf] "=qm"(cf), [zf] "=qm"(zf)
			 : [f] "r"((uint64_t)field) : "cc");
	*value = v;
	return vmx_status(cf, zf);
}

static inline int vmwrite(uint32_t field, uint64_t value)
{
	uint8_t cf, zf;

	__asm__ volatile("vmwrite %[v], %[f]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf)
			 : [v] "r"(value), [f] "r"((uint64_t)field) : "cc");
	return vmx_status(cf, zf);
}

/* INVEPT descriptor: the EPTP, then 64 reserved bits. */
static inline int invept(uint64_t type, uint64_t eptp)
{
	struct { uint64_t eptp, reserved; } desc = { eptp, 0 };
	uint8_t cf, zf;

	__asm__ volatile("invept %[d], %[t]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf)
			 : [d] "m"(desc), [t] "r"(type) : "cc", "memory");
	return vmx_status(cf, zf);
}

/* INVVPID descriptor: the VPID in bits 15:0, then a linear address. */
static inline int invvpid(uint64_t type, uint16_t vpid)
{
	struct { uint64_t vpid, addr; } desc = { vpid, 0 };
	uint8_t cf, zf;

	__asm__ volatile("invvpid %[d], %[t]; setc %[cf]; setz %[zf]"
			 : [cf] "=qm"(cf), [zf] "=qm"(zf)
			 : [d] "m"(desc), [t] "r"(type) : "cc", "memory");
	return vmx_status(cf, zf);
}

#define DEFINE_DR(n)							\
static inline uint64_t read_dr##n(void)					\
{									\
	uint64_t v;							\
	__asm__ volatile("mov %%db" #n ", %0" : "=r"(v));		\
	return v;							\
}									\
static inline void write_dr##n(uint64_t v)				\
{									\
	__asm__ volatile("mov %0, %%db" #n : : "r"(v));			\
}
DEFINE_DR(0)
DEFINE_DR(1)
DEFINE_DR(2)
DEFINE_DR(3)
DEFINE_DR(6)
#undef DEFINE_DR

#endif
