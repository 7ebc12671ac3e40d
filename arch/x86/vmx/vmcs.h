/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMX architectural constants: VMCS field encodings, control bits, exit
 * reasons, exit-qualification and interruption-information formats, and
 * the capability MSRs.  Pure definitions, also included by entry.S.
 *
 * References, Intel SDM Vol. 3C (chapter numbers move between editions:
 * the titles are what to look for):
 *   "Virtual Machine Control Structures" (ch. 24/25): field formats, controls
 *   "VM Exits" (ch. 27/28) and appendix C "VMX Basic Exit Reasons"
 *   appendix B "Field Encoding in VMCS"
 *   appendix A "VMX Capability Reporting Facility"
 *   "VMX Instruction Reference" (ch. 30/31): "VM Instruction Error Numbers"
 */
#ifndef FERRY_ARCH_X86_VMX_VMCS_H
#define FERRY_ARCH_X86_VMX_VMCS_H

/* ---- capability MSRs (appendix A) --------------------------------------- */
#define MSR_VMX_BASIC			0x480
#define MSR_VMX_PINBASED_CTLS		0x481
#define MSR_VMX_PROCBASED_CTLS		0x482
#define MSR_VMX_EXIT_CTLS		0x483
#define MSR_VMX_ENTRY_CTLS		0x484
#define MSR_VMX_MISC			0x485
#define MSR_VMX_CR0_FIXED0		0x486
#define MSR_VMX_CR0_FIXED1		0x487
#define MSR_VMX_CR4_FIXED0		0x488
#define MSR_VMX_CR4_FIXED1		0x489
#define MSR_VMX_PROCBASED_CTLS2		0x48b
#define MSR_VMX_EPT_VPID_CAP		0x48c
#define MSR_VMX_TRUE_PINBASED_CTLS	0x48d
#define MSR_VMX_TRUE_PROCBASED_CTLS	0x48e
#define MSR_VMX_TRUE_EXIT_CTLS		0x48f
#define MSR_VMX_TRUE_ENTRY_CTLS		0x490

/* IA32_FEATURE_CONTROL ("Enabling and Entering VMX Operation") */
#define FEATURE_CONTROL_LOCK		(1ull << 0)
#define FEATURE_CONTROL_VMX_OUTSIDE_SMX	(1ull << 2)

/* IA32_VMX_BASIC (A.1) */
#define VMX_BASIC_REVISION_MASK		0x7fffffffull
#define VMX_BASIC_SIZE_SHIFT		32		/* bits 44:32: region size */
#define VMX_BASIC_SIZE_MASK		0x1fffull
#define VMX_BASIC_PA32			(1ull << 48)	/* regions below 4 GiB */
#define VMX_BASIC_MEMTYPE_SHIFT		50		/* bits 53:50, 6 = WB */
#define VMX_BASIC_TRUE_CTLS		(1ull << 55)

/* IA32_VMX_MISC (A.6) */
#define VMX_MISC_EXIT_SAVES_LMA		(1ull << 5)	/* exits store EFER.LMA in the
							 * IA-32e mode guest control */

/* IA32_VMX_EPT_VPID_CAP (A.10) */
#define EPT_CAP_WALK4			(1ull << 6)
#define EPT_CAP_WB			(1ull << 14)
#define EPT_CAP_2M			(1ull << 16)
#define EPT_CAP_INVEPT			(1ull << 20)
#define EPT_CAP_AD			(1ull << 21)
#define EPT_CAP_INVEPT_SINGLE		(1ull << 25)
#define EPT_CAP_INVEPT_ALL		(1ull << 26)
#define VPID_CAP_INVVPID		(1ull << 32)
#define VPID_CAP_INVVPID_SINGLE		(1ull << 41)
#define VPID_CAP_INVVPID_ALL		(1ull << 42)

/* INVEPT / INVVPID types ("INVEPT", "INVVPID" in the instruction reference) */
#define INVEPT_SINGLE			1
#define INVEPT_ALL			2
#define INVVPID_SINGLE			1
#define INVVPID_ALL			2

/* ---- VMCS field encodings (appendix B) ---------------------------------- */
/* 16-bit */
#define VMCS_VPID			0x0000
#define VMCS_GUEST_ES_SEL		0x0800	/* ES, CS, SS, DS, FS, GS, LDTR, TR: +2 each */
#define VMCS_GUEST_CS_SEL		0x0802
#define VMCS_GUEST_SS_SEL		0x0804
#define VMCS_GUEST_DS_SEL		0x0806
#define VMCS_GUEST_FS_SEL		0x0808
#define VMCS_GUEST_GS_SEL		0x080a
#define VMCS_GUEST_LDTR_SEL		0x080c
#define VMCS_GUEST_TR_SEL		0x080e
#define VMCS_GUEST_PML_INDEX		0x0812	/* "PML index": next entry, 511 down */
#define VMCS_HOST_ES_SEL		0x0c00
#define VMCS_HOST_CS_SEL		0x0c02
#define VMCS_HOST_SS_SEL		0x0c04
#define VMCS_HOST_DS_SEL		0x0c06
#define VMCS_HOST_FS_SEL		0x0c08
#define VMCS_HOST_GS_SEL		0x0c0a
#define VMCS_HOST_TR_SEL		0x0c0c
/* 64-bit */
#define VMCS_MSR_BITMAP			0x2004
#define VMCS_EXIT_MSR_STORE_ADDR	0x2006
#define VMCS_EXIT_MSR_LOAD_ADDR		0x2008
#define VMCS_ENTRY_MSR_LOAD_ADDR	0x200a
#define VMCS_PML_ADDR			0x200e	/* the 4 KiB page-modification log */
#define VMCS_TSC_OFFSET			0x2010
#define VMCS_TSC_MULTIPLIER		0x2032
#define VMCS_EPTP			0x201a
#define VMCS_GUEST_PHYS_ADDR		0x2400	/* read-only */
#define VMCS_LINK_POINTER		0x2800
#define VMCS_GUEST_DEBUGCTL		0x2802
#define VMCS_GUEST_PAT			0x2804
#define VMCS_GUEST_EFER			0x2806
#define VMCS_GUEST_PDPTE0		0x280a	/* PDPTE0..3: +2 each */
#define VMCS_HOST_PAT			0x2c00
#define VMCS_HOST_EFER			0x2c02
/* 32-bit */
#define VMCS_PIN_CTLS			0x4000
#define VMCS_PROC_CTLS			0x4002
#define VMCS_EXCEPTION_BITMAP		0x4004
#define VMCS_PF_ERROR_MASK		0x4006
#define VMCS_PF_ERROR_MATCH		0x4008
#define VMCS_CR3_TARGET_COUNT		0x400a
#define VMCS_EXIT_CTLS			0x400c
#define VMCS_EXIT_MSR_STORE_COUNT	0x400e
#define VMCS_EXIT_MSR_LOAD_COUNT	0x4010
#define VMCS_ENTRY_CTLS			0x4012
#define VMCS_ENTRY_MSR_LOAD_COUNT	0x4014
#define VMCS_ENTRY_INTR_INFO		0x4016
#define VMCS_ENTRY_EXCEPTION_ERROR	0x4018
#define VMCS_ENTRY_INSN_LEN		0x401a
#define VMCS_PROC_CTLS2			0x401e
#define VMCS_PLE_GAP			0x4020
#define VMCS_PLE_WINDOW			0x4022
#define VMCS_INSN_ERROR			0x4400	/* read-only from here ... */
#define VMCS_EXIT_REASON		0x4402
#define VMCS_EXIT_INTR_INFO		0x4404
#define VMCS_EXIT_INTR_ERROR		0x4406
#define VMCS_IDT_VECTORING_INFO		0x4408
#define VMCS_IDT_VECTORING_ERROR	0x440a
#define VMCS_EXIT_INSN_LEN		0x440c	/* ... to here */
#define VMCS_GUEST_ES_LIMIT		0x4800	/* same order as the selectors */
#define VMCS_GUEST_GDTR_LIMIT		0x4810
#define VMCS_GUEST_IDTR_LIMIT		0x4812
#define VMCS_GUEST_ES_AR		0x4814	/* same order as the selectors */
#define VMCS_GUEST_CS_AR		0x4816
#define VMCS_GUEST_SS_AR		0x4818
#define VMCS_GUEST_INTERRUPTIBILITY	0x4824
#define VMCS_GUEST_ACTIVITY		0x4826
#define VMCS_GUEST_SYSENTER_CS		0x482a
#define VMCS_GUEST_PREEMPTION_TIMER	0x482e
#define VMCS_HOST_SYSENTER_CS		0x4c00
/* natural width */
#define VMCS_CR0_MASK			0x6000
#define VMCS_CR4_MASK			0x6002
#define VMCS_CR0_SHADOW			0x6004
#define VMCS_CR4_SHADOW			0x6006
#define VMCS_EXIT_QUALIFICATION		0x6400	/* read-only */
#define VMCS_GUEST_CR0			0x6800
#define VMCS_GUEST_CR3			0x6802
#define VMCS_GUEST_CR4			0x6804
#define VMCS_GUEST_ES_BASE		0x6806	/* same order as the selectors */
#define VMCS_GUEST_CS_BASE		0x6808
#define VMCS_GUEST_GDTR_BASE		0x6816
#define VMCS_GUEST_IDTR_BASE		0x6818
#define VMCS_GUEST_DR7			0x681a
#define VMCS_GUEST_RSP			0x681c
#define VMCS_GUEST_RIP			0x681e
#define VMCS_GUEST_RFLAGS		0x6820
#define VMCS_GUEST_PENDING_DBG		0x6822
#define VMCS_GUEST_SYSENTER_ESP		0x6824
#define VMCS_GUEST_SYSENTER_EIP		0x6826
#define VMCS_HOST_CR0			0x6c00
#define VMCS_HOST_CR3			0x6c02
#define VMCS_HOST_CR4			0x6c04
#define VMCS_HOST_FS_BASE		0x6c06
#define VMCS_HOST_GS_BASE		0x6c08
#define VMCS_HOST_TR_BASE		0x6c0a
#define VMCS_HOST_GDTR_BASE		0x6c0c
#define VMCS_HOST_IDTR_BASE		0x6c0e
#define VMCS_HOST_SYSENTER_ESP		0x6c10
#define VMCS_HOST_SYSENTER_EIP		0x6c12
#define VMCS_HOST_RSP			0x6c14	/* written by entry.S before each entry */
#define VMCS_HOST_RIP			0x6c16

/* ---- VM-execution controls ("VM-Execution Control Fields") --------------- */
#define PIN_EXT_INT_EXITING		(1u << 0)
#define PIN_NMI_EXITING			(1u << 3)
#define PIN_VIRTUAL_NMIS		(1u << 5)
#define PIN_PREEMPTION_TIMER		(1u << 6)

#define PROC_INTR_WINDOW_EXITING	(1u << 2)
#define PROC_TSC_OFFSETTING		(1u << 3)
#define PROC_RDTSC_EXITING		(1u << 12)
#define PROC_HLT_EXITING		(1u << 7)
#define PROC_MWAIT_EXITING		(1u << 10)
#define PROC_RDPMC_EXITING		(1u << 11)
#define PROC_CR3_LOAD_EXITING		(1u << 15)
#define PROC_CR3_STORE_EXITING		(1u << 16)
#define PROC_CR8_LOAD_EXITING		(1u << 19)
#define PROC_CR8_STORE_EXITING		(1u << 20)
#define PROC_UNCOND_IO_EXITING		(1u << 24)
#define PROC_USE_IO_BITMAPS		(1u << 25)
#define PROC_USE_MSR_BITMAPS		(1u << 28)
#define PROC_MONITOR_EXITING		(1u << 29)
#define PROC_SECONDARY_CTLS		(1u << 31)

#define PROC2_EPT			(1u << 1)
#define PROC2_VPID			(1u << 5)
#define PROC2_WBINVD_EXITING		(1u << 6)
#define PROC2_UNRESTRICTED_GUEST	(1u << 7)
#define PROC2_PAUSE_LOOP_EXITING	(1u << 10)
#define PROC2_PML			(1u << 17)
#define PROC2_TSC_SCALING		(1u << 25)

/* VM-exit controls ("VM-Exit Control Fields") */
#define EXITCTL_SAVE_DEBUG		(1u << 2)
#define EXITCTL_HOST_ADDR_SPACE		(1u << 9)
#define EXITCTL_ACK_INTR_ON_EXIT	(1u << 15)
#define EXITCTL_SAVE_PAT		(1u << 18)
#define EXITCTL_LOAD_PAT		(1u << 19)
#define EXITCTL_SAVE_EFER		(1u << 20)
#define EXITCTL_LOAD_EFER		(1u << 21)

/* VM-entry controls ("VM-Entry Control Fields") */
#define ENTRYCTL_LOAD_DEBUG		(1u << 2)
#define ENTRYCTL_IA32E_GUEST		(1u << 9)
#define ENTRYCTL_LOAD_PAT		(1u << 14)
#define ENTRYCTL_LOAD_EFER		(1u << 15)

/* ---- interruption information ("VM-Entry Controls for Event Injection",
 * "Information for VM Exits Due to Vectored Events", "...During Event
 * Delivery": one format for all three fields) ------------------------------ */
#define INTR_INFO_VECTOR_MASK		0xffu
#define INTR_INFO_TYPE_SHIFT		8
#define INTR_INFO_TYPE_MASK		(7u << 8)
#define INTR_INFO_ERROR_VALID		(1u << 11)
#define INTR_INFO_NMI_UNBLOCKED		(1u << 12)	/* exit info only: IRET unblocked NMIs */
#define INTR_INFO_VALID			(1u << 31)
#define INTR_TYPE_EXT_INT		0
#define INTR_TYPE_NMI			2
#define INTR_TYPE_HW_EXCEPTION		3
#define INTR_TYPE_SOFT_INT		4
#define INTR_TYPE_PRIV_SOFT_EXC		5
#define INTR_TYPE_SOFT_EXC		6

/* Guest interruptibility state ("Guest Non-Register State") */
#define GUEST_INTR_STI			(1u << 0)
#define GUEST_INTR_MOV_SS		(1u << 1)
#define GUEST_INTR_NMI			(1u << 3)	/* virtual-NMI blocking with virtual NMIs */

/* Guest segment access rights: the descriptor's bits 15:8 and 23:20 in
 * bits 7:0 and 15:12, bit 16 "unusable" ("Guest Register State"). */
#define VMX_AR_UNUSABLE			(1u << 16)

/* Pending debug exceptions: BS (single step) */
#define PENDING_DBG_BS			(1ull << 14)

/* ---- basic exit reasons (appendix C) ------------------------------------ */
#define EXIT_REASON_ENTRY_FAILURE	(1u << 31)
#define EXIT_REASON_BASIC_MASK		0xffffu

#define VMX_EXIT_EXCEPTION_NMI		0
#define VMX_EXIT_EXT_INTR		1
#define VMX_EXIT_TRIPLE_FAULT		2
#define VMX_EXIT_INIT			3
#define VMX_EXIT_SIPI			4
#define VMX_EXIT_INTR_WINDOW		7
#define VMX_EXIT_NMI_WINDOW		8
#define VMX_EXIT_TASK_SWITCH		9
#define VMX_EXIT_CPUID			10
#define VMX_EXIT_GETSEC			11
#define VMX_EXIT_HLT			12
#define VMX_EXIT_INVD			13
#define VMX_EXIT_INVLPG			14
#define VMX_EXIT_RDPMC			15
#define VMX_EXIT_RDTSC			16
#define VMX_EXIT_RSM			17
#define VMX_EXIT_VMCALL			18
#define VMX_EXIT_VMCLEAR		19
#define VMX_EXIT_VMLAUNCH		20
#define VMX_EXIT_VMPTRLD		21
#define VMX_EXIT_VMPTRST		22
#define VMX_EXIT_VMREAD			23
#define VMX_EXIT_VMRESUME		24
#define VMX_EXIT_VMWRITE		25
#define VMX_EXIT_VMXOFF			26
#define VMX_EXIT_VMXON			27
#define VMX_EXIT_CR_ACCESS		28
#define VMX_EXIT_DR_ACCESS		29
#define VMX_EXIT_IO			30
#define VMX_EXIT_RDMSR			31
#define VMX_EXIT_WRMSR			32
#define VMX_EXIT_BAD_GUEST_STATE	33
#define VMX_EXIT_MSR_LOADING		34
#define VMX_EXIT_MWAIT			36
#define VMX_EXIT_MTF			37
#define VMX_EXIT_MONITOR		39
#define VMX_EXIT_PAUSE			40
#define VMX_EXIT_MACHINE_CHECK		41
#define VMX_EXIT_EPT_VIOLATION		48
#define VMX_EXIT_EPT_MISCONFIG		49
#define VMX_EXIT_INVEPT			50
#define VMX_EXIT_RDTSCP			51
#define VMX_EXIT_PREEMPTION_TIMER	52
#define VMX_EXIT_INVVPID		53
#define VMX_EXIT_WBINVD			54
#define VMX_EXIT_XSETBV			55
#define VMX_EXIT_VMFUNC			59
#define VMX_EXIT_PML_FULL		62
#define VMX_EXIT_REASON_COUNT		76	/* reasons with a name */

/* ---- exit qualifications ("Exit Qualification for ...") ----------------- */
/* I/O instructions */
#define IO_QUAL_SIZE_MASK		0x7ull		/* size - 1 */
#define IO_QUAL_IN			(1ull << 3)
#define IO_QUAL_STRING			(1ull << 4)
#define IO_QUAL_REP			(1ull << 5)
#define IO_QUAL_PORT_SHIFT		16
/* Control-register accesses */
#define CR_QUAL_CR_MASK			0xfull
#define CR_QUAL_TYPE_SHIFT		4		/* 0 MOV to CR, 1 MOV from CR, 2 CLTS, 3 LMSW */
#define CR_QUAL_GPR_SHIFT		8
#define CR_QUAL_LMSW_SHIFT		16
#define CR_TYPE_MOV_TO			0
#define CR_TYPE_MOV_FROM		1
#define CR_TYPE_CLTS			2
#define CR_TYPE_LMSW			3
/* EPT violations */
#define EPT_QUAL_READ			(1ull << 0)
#define EPT_QUAL_WRITE			(1ull << 1)
#define EPT_QUAL_FETCH			(1ull << 2)
#define EPT_QUAL_PERM_MASK		(7ull << 3)	/* R/W/X of the translation: any = present */
#define EPT_QUAL_GLA_VALID		(1ull << 7)	/* the guest-linear address is */
#define EPT_QUAL_GLA_XLAT		(1ull << 8)	/* with 7: the access itself, not a walk */
#define EPT_QUAL_NMI_UNBLOCKED		(1ull << 12)

/* ---- VM-instruction error numbers --------------------------------------- */
#define VMX_ERR_ENTRY_BAD_CONTROLS	7
#define VMX_ERR_ENTRY_BAD_HOST		8
#define VMX_ERR_COUNT			29	/* numbers with a name: 1..28 */

#endif
