/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guest page walker: translates a guest linear address to a guest-physical
 * one the way the guest's MMU would (Intel SDM vol. 3A ch. 4, AMD APM
 * vol. 2 ch. 5), reading the guest's paging structures through a callback,
 * and reports the #PF error code the guest must see when it would fault.
 * Also fetches instruction bytes at a linear address across page ends.
 *
 * Paging modes: off (identity), 32-bit (4 KiB and, with CR4.PSE, 4 MiB
 * pages with PSE-36 high bits), PAE (4 KiB, 2 MiB), 4-level and 5-level
 * (4 KiB, 2 MiB, 1 GiB).  Checks present, reserved bits (MAXPHYADDR,
 * XD without EFER.NXE, PS where not allowed, 1 GiB pages without the
 * CPUID bit), R/W with CR0.WP, U/S with the access's privilege, XD with
 * EFER.NXE, SMEP and SMAP (with RFLAGS.AC).
 *
 * Not done: the walker never sets Accessed/Dirty bits (the instruction
 * being emulated was already executed once by the CPU, which set them for
 * its code page; an emulated data access to MMIO is not to RAM);
 * protection keys (CR4.PKE/PKS) and shadow-stack accesses are not
 * checked; PAE PDPTEs are read from memory at each walk instead of from
 * the copy the CPU loaded with CR3, and a reserved bit in one is reported
 * as a #PF with RSVD (the CPU gives #GP at the MOV to CR3 instead).
 * Canonical checks of the linear address are the caller's (#GP/#SS),
 * except that a non-canonical address is refused with -EINVAL.
 */
#ifndef FERRY_ARCH_X86_EMULATE_GWALK_H
#define FERRY_ARCH_X86_EMULATE_GWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Read len bytes of guest-physical memory at gpa into buf.  Returns 0, or
 * -errno when [gpa, gpa+len) is not guest RAM.
 */
typedef int (*gwalk_read_fn)(void *ctx, uint64_t gpa, void *buf, size_t len);

/* The guest's paging controls, snapshot by the caller at the exit. */
struct gwalk_env {
	uint64_t cr0, cr3, cr4, efer;
	uint64_t rflags;	/* only AC is used (SMAP) */
	unsigned maxphyaddr;	/* guest's CPUID 80000008h EAX[7:0], 32..52 */
	bool gbpages;		/* guest's CPUID 80000001h EDX[26]: 1 GiB pages */
	gwalk_read_fn read_gpa;
	void *ctx;
};

/* Access kinds; the values are the #PF error-code bits (SDM 4.7). */
#define GW_WRITE	(1u << 1)	/* a write */
#define GW_USER		(1u << 2)	/* CPL 3 (and not an implicit supervisor access) */
#define GW_FETCH	(1u << 4)	/* an instruction fetch */

/* #PF error-code bits (SDM vol. 3A 4.7, figure 4-12). */
#define PF_ERR_P	(1u << 0)	/* 0: not present, 1: protection */
#define PF_ERR_W	(1u << 1)
#define PF_ERR_U	(1u << 2)
#define PF_ERR_RSVD	(1u << 3)
#define PF_ERR_ID	(1u << 4)

/* What a walk found. */
struct gwalk_result {
	int err;		/* 0, -EFAULT (#PF), -EIO (table not in RAM), -EINVAL */
	uint64_t gpa;		/* on success: the translation */
	uint64_t page_size;	/* on success: 4 KiB, 2/4 MiB, 1 GiB; 0 if paging is off */
	uint64_t fault_addr;	/* -EFAULT: linear address for CR2 */
	uint32_t error_code;	/* -EFAULT: #PF error code */
	uint64_t bad_gpa;	/* -EIO: the paging-structure entry that could not be read */
};

/*
 * Translate linear address la for an access of kind `access` (GW_*).
 * Returns res->err: 0, -EFAULT (the guest takes #PF with res->error_code
 * and CR2 = res->fault_addr), -EIO (a paging-structure entry lies outside
 * guest RAM: res->bad_gpa) or -EINVAL (non-canonical la, or a bad env).
 */
int gwalk_translate(const struct gwalk_env *env, uint64_t la,
		    unsigned access, struct gwalk_result *res);

/*
 * Fetch up to len (<= 15) instruction bytes at linear address la, with
 * user = (CPL == 3).  Returns the number of bytes fetched (> 0); if fewer
 * than len, res describes why the next byte could not be fetched (a fault
 * on the next page, which matters only if the instruction reaches it).
 * Returns res->err (< 0) when not even the first byte can be fetched.
 * Outside long mode the linear address wraps at 4 GiB.
 */
int guest_fetch_insn(const struct gwalk_env *env, uint64_t la, bool user,
		     uint8_t *buf, size_t len, struct gwalk_result *res);

#endif
