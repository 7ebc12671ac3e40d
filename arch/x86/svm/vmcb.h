/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The AMD virtual machine control block (VMCB): layout of the control area
 * and the state-save area, intercept bits, exit codes and the event
 * formats.  AMD64 APM Vol. 2 (pub. 24593): Appendix B "Layout of VMCB"
 * (Tables B-1 and B-2), Appendix C "SVM Intercept Exit Codes", 15.9-15.13
 * (intercepts), 15.20 (event injection), 15.21 (interrupts).  Offsets were
 * cross-checked against Linux arch/x86/include/asm/svm.h and QEMU
 * target/i386/svm.h; every one is pinned by a _Static_assert below.
 */
#ifndef FERRY_ARCH_X86_SVM_VMCB_H
#define FERRY_ARCH_X86_SVM_VMCB_H

#include <stddef.h>
#include <stdint.h>

/* ---- control area (APM Table B-1), offsets 000h-3FFh ------------------- */

struct vmcb_control {
	uint32_t intercept_cr;		/* 000h: 15:0 reads, 31:16 writes of CR0-15 */
	uint32_t intercept_dr;		/* 004h: 15:0 reads, 31:16 writes of DR0-15 */
	uint32_t intercept_exc;		/* 008h: one bit per exception vector */
	uint32_t intercept1;		/* 00Ch: VMCB_I1_* */
	uint32_t intercept2;		/* 010h: VMCB_I2_* */
	uint32_t intercept3;		/* 014h: INVLPGB, INVPCID, ... (unused) */
	uint8_t reserved_018[0x3c - 0x18];
	uint16_t pause_filter_thresh;	/* 03Ch */
	uint16_t pause_filter_count;	/* 03Eh */
	uint64_t iopm_base_pa;		/* 040h: 12 KiB I/O permission map */
	uint64_t msrpm_base_pa;		/* 048h: 8 KiB MSR permission map */
	uint64_t tsc_offset;		/* 050h */
	uint32_t asid;			/* 058h: guest ASID, never 0 */
	uint8_t tlb_control;		/* 05Ch: VMCB_TLB_* */
	uint8_t reserved_05d[3];
	uint64_t int_ctl;		/* 060h: V_TPR, V_IRQ, ..., V_INTR_VECTOR */
	uint64_t int_state;		/* 068h: bit 0 interrupt shadow */
	uint64_t exit_code;		/* 070h */
	uint64_t exit_info1;		/* 078h */
	uint64_t exit_info2;		/* 080h */
	uint64_t exit_int_info;		/* 088h: event format, see VMCB_EVT_* */
	uint64_t np_ctl;		/* 090h: bit 0 NP_ENABLE */
	uint64_t avic_apic_bar;		/* 098h */
	uint64_t ghcb_pa;		/* 0A0h */
	uint64_t event_inj;		/* 0A8h: event format, see VMCB_EVT_* */
	uint64_t ncr3;			/* 0B0h: nested page table root */
	uint64_t virt_ext;		/* 0B8h: LBR / VMSAVE-VMLOAD virtualization */
	uint32_t clean;			/* 0C0h: VMCB clean bits (15.15.3) */
	uint32_t reserved_0c4;
	uint64_t next_rip;		/* 0C8h: with NRIP-save (CPUID 8000_000Ah EDX[3]) */
	uint8_t insn_len;		/* 0D0h: decode assists */
	uint8_t insn_bytes[15];		/* 0D1h */
	uint8_t reserved_0e0[0x400 - 0xe0];
} __attribute__((packed));

/* ---- state-save area (APM Table B-2), at VMCB offset 400h -------------- */

/* A segment or descriptor-table register.  attrib is struct seg's format:
 * descriptor bits 47:40 in 7:0 and 55:52 in 11:8 (APM 15.5.1). */
struct vmcb_seg {
	uint16_t sel;
	uint16_t attrib;
	uint32_t limit;
	uint64_t base;
} __attribute__((packed));

struct vmcb_save {
	struct vmcb_seg es, cs, ss, ds, fs, gs;	/* 000h-05Fh */
	struct vmcb_seg gdtr, ldtr, idtr, tr;	/* 060h-09Fh */
	uint8_t reserved_0a0[0xcb - 0xa0];
	uint8_t cpl;				/* 0CBh */
	uint8_t reserved_0cc[4];
	uint64_t efer;				/* 0D0h */
	uint8_t reserved_0d8[0x148 - 0xd8];
	uint64_t cr4;				/* 148h */
	uint64_t cr3;				/* 150h */
	uint64_t cr0;				/* 158h */
	uint64_t dr7;				/* 160h */
	uint64_t dr6;				/* 168h */
	uint64_t rflags;			/* 170h */
	uint64_t rip;				/* 178h */
	uint8_t reserved_180[0x1d8 - 0x180];
	uint64_t rsp;				/* 1D8h */
	uint64_t s_cet, ssp, isst_addr;		/* 1E0h-1F7h */
	uint64_t rax;				/* 1F8h */
	uint64_t star;				/* 200h */
	uint64_t lstar;				/* 208h */
	uint64_t cstar;				/* 210h */
	uint64_t sfmask;			/* 218h */
	uint64_t kernel_gs_base;		/* 220h */
	uint64_t sysenter_cs;			/* 228h */
	uint64_t sysenter_esp;			/* 230h */
	uint64_t sysenter_eip;			/* 238h */
	uint64_t cr2;				/* 240h */
	uint8_t reserved_248[0x268 - 0x248];
	uint64_t g_pat;				/* 268h: guest PAT with nested paging */
	uint64_t dbgctl;			/* 270h */
	uint64_t br_from, br_to;		/* 278h, 280h */
	uint64_t last_excp_from, last_excp_to;	/* 288h, 290h */
	uint8_t reserved_298[0xc00 - 0x298];
} __attribute__((packed));

/* One 4 KiB page, 4 KiB aligned (VMRUN faults otherwise). */
struct vmcb {
	struct vmcb_control ctl;
	struct vmcb_save save;
} __attribute__((packed));

#define VMCB_CTL(f, off) _Static_assert(offsetof(struct vmcb_control, f) == (off), #f)
#define VMCB_SAVE(f, off) _Static_assert(offsetof(struct vmcb_save, f) == (off), #f)
VMCB_CTL(intercept1, 0x00c);
VMCB_CTL(intercept2, 0x010);
VMCB_CTL(pause_filter_thresh, 0x03c);
VMCB_CTL(iopm_base_pa, 0x040);
VMCB_CTL(msrpm_base_pa, 0x048);
VMCB_CTL(tsc_offset, 0x050);
VMCB_CTL(asid, 0x058);
VMCB_CTL(tlb_control, 0x05c);
VMCB_CTL(int_ctl, 0x060);
VMCB_CTL(int_state, 0x068);
VMCB_CTL(exit_code, 0x070);
VMCB_CTL(exit_info1, 0x078);
VMCB_CTL(exit_info2, 0x080);
VMCB_CTL(exit_int_info, 0x088);
VMCB_CTL(np_ctl, 0x090);
VMCB_CTL(event_inj, 0x0a8);
VMCB_CTL(ncr3, 0x0b0);
VMCB_CTL(clean, 0x0c0);
VMCB_CTL(next_rip, 0x0c8);
VMCB_CTL(insn_len, 0x0d0);
VMCB_SAVE(cs, 0x010);
VMCB_SAVE(gdtr, 0x060);
VMCB_SAVE(ldtr, 0x070);
VMCB_SAVE(idtr, 0x080);
VMCB_SAVE(tr, 0x090);
VMCB_SAVE(cpl, 0x0cb);
VMCB_SAVE(efer, 0x0d0);
VMCB_SAVE(cr4, 0x148);
VMCB_SAVE(cr3, 0x150);
VMCB_SAVE(cr0, 0x158);
VMCB_SAVE(dr7, 0x160);
VMCB_SAVE(dr6, 0x168);
VMCB_SAVE(rflags, 0x170);
VMCB_SAVE(rip, 0x178);
VMCB_SAVE(rsp, 0x1d8);
VMCB_SAVE(rax, 0x1f8);
VMCB_SAVE(star, 0x200);
VMCB_SAVE(kernel_gs_base, 0x220);
VMCB_SAVE(sysenter_cs, 0x228);
VMCB_SAVE(sysenter_eip, 0x238);
VMCB_SAVE(cr2, 0x240);
VMCB_SAVE(g_pat, 0x268);
VMCB_SAVE(last_excp_to, 0x290);
_Static_assert(sizeof(struct vmcb_control) == 0x400, "control area size");
_Static_assert(sizeof(struct vmcb_seg) == 16, "segment size");
_Static_assert(offsetof(struct vmcb, save) == 0x400, "save area offset");
_Static_assert(sizeof(struct vmcb) == 4096, "VMCB size");
#undef VMCB_CTL
#undef VMCB_SAVE

/* ---- intercepts (APM 15.9-15.13, Table B-1) ------------------------------ */

/* intercept_cr: writes of CRn in bits 31:16. */
#define VMCB_CR_WRITE(n)	(1u << (16 + (n)))
#define VMCB_CR_READ(n)		(1u << (n))

/* intercept_exc: one bit per vector. */
#define VMCB_EXC(vec)		(1u << (vec))

/* intercept1, offset 00Ch */
#define VMCB_I1_INTR		(1u << 0)
#define VMCB_I1_NMI		(1u << 1)
#define VMCB_I1_SMI		(1u << 2)
#define VMCB_I1_INIT		(1u << 3)
#define VMCB_I1_VINTR		(1u << 4)
#define VMCB_I1_RDTSC		(1u << 14)
#define VMCB_I1_RDPMC		(1u << 15)
#define VMCB_I1_CPUID		(1u << 18)
#define VMCB_I1_IRET		(1u << 20)
#define VMCB_I1_INVD		(1u << 22)
#define VMCB_I1_PAUSE		(1u << 23)
#define VMCB_I1_HLT		(1u << 24)
#define VMCB_I1_INVLPGA		(1u << 26)
#define VMCB_I1_IOIO_PROT	(1u << 27)
#define VMCB_I1_MSR_PROT	(1u << 28)
#define VMCB_I1_TASK_SWITCH	(1u << 29)
#define VMCB_I1_FERR_FREEZE	(1u << 30)
#define VMCB_I1_SHUTDOWN	(1u << 31)

/* intercept2, offset 010h */
#define VMCB_I2_VMRUN		(1u << 0)
#define VMCB_I2_VMMCALL		(1u << 1)
#define VMCB_I2_VMLOAD		(1u << 2)
#define VMCB_I2_VMSAVE		(1u << 3)
#define VMCB_I2_STGI		(1u << 4)
#define VMCB_I2_CLGI		(1u << 5)
#define VMCB_I2_SKINIT		(1u << 6)
#define VMCB_I2_RDTSCP		(1u << 7)
#define VMCB_I2_ICEBP		(1u << 8)
#define VMCB_I2_WBINVD		(1u << 9)
#define VMCB_I2_MONITOR		(1u << 10)
#define VMCB_I2_MWAIT		(1u << 11)
#define VMCB_I2_MWAIT_COND	(1u << 12)
#define VMCB_I2_XSETBV		(1u << 13)

/* tlb_control (APM 15.16.1) */
#define VMCB_TLB_NONE		0
#define VMCB_TLB_FLUSH_ALL	1	/* every ASID on this CPU */
#define VMCB_TLB_FLUSH_ASID	3	/* this guest's ASID (FlushByAsid) */

/* int_ctl (APM 15.21.1-15.21.4) */
#define VMCB_V_TPR_MASK		0xfull			/* bits 3:0 = CR8 */
#define VMCB_V_IRQ		(1ull << 8)
#define VMCB_V_INTR_PRIO_SHIFT	16
#define VMCB_V_INTR_PRIO_MASK	(0xfull << 16)
#define VMCB_V_IGN_TPR		(1ull << 20)
#define VMCB_V_INTR_MASKING	(1ull << 24)
#define VMCB_V_INTR_VECTOR_SHIFT 32
#define VMCB_V_INTR_VECTOR_MASK	(0xffull << 32)

/* int_state */
#define VMCB_INT_SHADOW		(1ull << 0)

/* np_ctl */
#define VMCB_NP_ENABLE		(1ull << 0)

/* EVENTINJ and EXITINTINFO (APM 15.20, Figure 15-5; 15.7.2) */
#define VMCB_EVT_VECTOR_MASK	0xffull
#define VMCB_EVT_TYPE_SHIFT	8
#define VMCB_EVT_TYPE_MASK	(7ull << 8)
#define VMCB_EVT_EV		(1ull << 11)	/* error code valid */
#define VMCB_EVT_V		(1ull << 31)	/* valid */
#define VMCB_EVT_ERR_SHIFT	32
#define VMCB_EVT_INTR		0	/* TYPE: external or virtual interrupt */
#define VMCB_EVT_NMI		2
#define VMCB_EVT_EXC		3	/* exception (fault or trap) */
#define VMCB_EVT_SOFT		4	/* software interrupt (INT n) */

/* EXITINFO1 of IOIO exits (APM 15.10.2, Figure 15-2) */
#define VMCB_IO_IN		(1ull << 0)	/* TYPE: 1 = IN */
#define VMCB_IO_STR		(1ull << 2)
#define VMCB_IO_REP		(1ull << 3)
#define VMCB_IO_SZ8		(1ull << 4)
#define VMCB_IO_SZ16		(1ull << 5)
#define VMCB_IO_SZ32		(1ull << 6)
#define VMCB_IO_PORT_SHIFT	16

/* EXITINFO1 of nested page faults (APM 15.25.6): the #PF error code bits
 * plus where in the walk the fault was. */
#define VMCB_NPF_P		(1ull << 0)	/* present: a permission fault */
#define VMCB_NPF_W		(1ull << 1)
#define VMCB_NPF_U		(1ull << 2)
#define VMCB_NPF_RSV		(1ull << 3)
#define VMCB_NPF_ID		(1ull << 4)	/* instruction fetch */
#define VMCB_NPF_FINAL		(1ull << 32)	/* on the final guest physical address */
#define VMCB_NPF_TABLE		(1ull << 33)	/* on a guest page-table access */

/* ---- exit codes (APM Appendix C, Table C-1) ----------------------------- */

#define SVM_EXIT_READ_CR8	0x008	/* 000h + n: MOV from CRn */
#define SVM_EXIT_WRITE_CR4	0x014	/* 010h + n: MOV to CRn */
#define SVM_EXIT_WRITE_CR8	0x018
#define SVM_EXIT_EXC_BASE	0x040	/* + vector, 040h-05Fh */
#define SVM_EXIT_INTR		0x060
#define SVM_EXIT_NMI		0x061
#define SVM_EXIT_SMI		0x062
#define SVM_EXIT_INIT		0x063
#define SVM_EXIT_VINTR		0x064
#define SVM_EXIT_RDTSC		0x06e
#define SVM_EXIT_RDPMC		0x06f
#define SVM_EXIT_CPUID		0x072
#define SVM_EXIT_IRET		0x074
#define SVM_EXIT_INVD		0x076
#define SVM_EXIT_PAUSE		0x077
#define SVM_EXIT_HLT		0x078
#define SVM_EXIT_INVLPG		0x079
#define SVM_EXIT_INVLPGA	0x07a
#define SVM_EXIT_IOIO		0x07b
#define SVM_EXIT_MSR		0x07c
#define SVM_EXIT_TASK_SWITCH	0x07d
#define SVM_EXIT_FERR_FREEZE	0x07e
#define SVM_EXIT_SHUTDOWN	0x07f
#define SVM_EXIT_VMRUN		0x080
#define SVM_EXIT_VMMCALL	0x081
#define SVM_EXIT_VMLOAD		0x082
#define SVM_EXIT_VMSAVE		0x083
#define SVM_EXIT_STGI		0x084
#define SVM_EXIT_CLGI		0x085
#define SVM_EXIT_SKINIT		0x086
#define SVM_EXIT_RDTSCP		0x087
#define SVM_EXIT_ICEBP		0x088
#define SVM_EXIT_WBINVD		0x089
#define SVM_EXIT_MONITOR	0x08a
#define SVM_EXIT_MWAIT		0x08b
#define SVM_EXIT_MWAIT_COND	0x08c
#define SVM_EXIT_XSETBV		0x08d
#define SVM_EXIT_NPF		0x400
#define SVM_EXIT_INVALID	0xffffffffu	/* -1: VMRUN failed; compare as u32 */

/* Exception vectors the back end intercepts or injects. */
#define X86_VEC_DB		1
#define X86_VEC_UD		6
#define X86_VEC_GP		13
#define X86_VEC_AC		17
#define X86_VEC_MC		18

/* ---- MSRs (APM 15.30) ---------------------------------------------------- */

#define MSR_VM_CR		0xc0010114
#define MSR_VM_HSAVE_PA		0xc0010117

/* ---- permission maps (APM 15.10.1, 15.11) -------------------------------- */

#define SVM_IOPM_SIZE		(12 * 1024)
#define SVM_MSRPM_SIZE		(8 * 1024)

#endif
