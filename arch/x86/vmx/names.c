/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMX numbers in words, for stop reasons and logs: VM-instruction errors
 * (Intel SDM Vol. 3C "VM Instruction Error Numbers") and basic exit
 * reasons (appendix C "VMX Basic Exit Reasons").  Pure logic.
 */
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

static const char *const insn_errors[VMX_ERR_COUNT] = {
	[1] = "VMCALL executed in VMX root operation",
	[2] = "VMCLEAR with invalid physical address",
	[3] = "VMCLEAR with VMXON pointer",
	[4] = "VMLAUNCH with non-clear VMCS",
	[5] = "VMRESUME with non-launched VMCS",
	[6] = "VMRESUME after VMXOFF",
	[7] = "VM entry with invalid control field(s)",
	[8] = "VM entry with invalid host-state field(s)",
	[9] = "VMPTRLD with invalid physical address",
	[10] = "VMPTRLD with VMXON pointer",
	[11] = "VMPTRLD with incorrect VMCS revision identifier",
	[12] = "VMREAD/VMWRITE from/to unsupported VMCS component",
	[13] = "VMWRITE to read-only VMCS component",
	[15] = "VMXON executed in VMX root operation",
	[16] = "VM entry with invalid executive-VMCS pointer",
	[17] = "VM entry with non-launched executive VMCS",
	[18] = "VM entry with executive-VMCS pointer not VMXON pointer",
	[19] = "VMCALL with non-clear VMCS",
	[20] = "VMCALL with invalid VM-exit control fields",
	[22] = "VMCALL with incorrect MSEG revision identifier",
	[23] = "VMXOFF under dual-monitor treatment of SMIs and SMM",
	[24] = "VMCALL with invalid SMM-monitor features",
	[25] = "VM entry with invalid VM-execution control fields in executive VMCS",
	[26] = "VM entry with events blocked by MOV SS",
	[28] = "invalid operand to INVEPT/INVVPID",
};

static const char *const exit_reasons[VMX_EXIT_REASON_COUNT] = {
	[0] = "exception or NMI", [1] = "external interrupt", [2] = "triple fault",
	[3] = "INIT signal", [4] = "start-up IPI", [5] = "I/O SMI", [6] = "other SMI",
	[7] = "interrupt window", [8] = "NMI window", [9] = "task switch",
	[10] = "CPUID", [11] = "GETSEC", [12] = "HLT", [13] = "INVD", [14] = "INVLPG",
	[15] = "RDPMC", [16] = "RDTSC", [17] = "RSM", [18] = "VMCALL", [19] = "VMCLEAR",
	[20] = "VMLAUNCH", [21] = "VMPTRLD", [22] = "VMPTRST", [23] = "VMREAD",
	[24] = "VMRESUME", [25] = "VMWRITE", [26] = "VMXOFF", [27] = "VMXON",
	[28] = "control-register access", [29] = "MOV DR", [30] = "I/O instruction",
	[31] = "RDMSR", [32] = "WRMSR", [33] = "VM-entry failure: invalid guest state",
	[34] = "VM-entry failure: MSR loading", [36] = "MWAIT", [37] = "monitor trap flag",
	[39] = "MONITOR", [40] = "PAUSE", [41] = "VM-entry failure: machine-check event",
	[43] = "TPR below threshold", [44] = "APIC access", [45] = "virtualized EOI",
	[46] = "GDTR/IDTR access", [47] = "LDTR/TR access", [48] = "EPT violation",
	[49] = "EPT misconfiguration", [50] = "INVEPT", [51] = "RDTSCP",
	[52] = "VMX-preemption timer expired", [53] = "INVVPID", [54] = "WBINVD/WBNOINVD",
	[55] = "XSETBV", [56] = "APIC write", [57] = "RDRAND", [58] = "INVPCID",
	[59] = "VMFUNC", [60] = "ENCLS", [61] = "RDSEED", [62] = "page-modification log full",
	[63] = "XSAVES", [64] = "XRSTORS", [65] = "PCONFIG", [66] = "SPP-related event",
	[67] = "UMWAIT", [68] = "TPAUSE", [69] = "LOADIWKEY", [70] = "ENCLV",
	[72] = "ENQCMD PASID translation failure", [73] = "ENQCMDS PASID translation failure",
	[74] = "bus lock", [75] = "instruction timeout",
};

const char *vmx_insn_error_name(uint32_t error)
{
	if (error < VMX_ERR_COUNT && insn_errors[error])
		return insn_errors[error];
	return "unknown VM-instruction error";
}

const char *vmx_exit_reason_name(uint32_t reason)
{
	reason &= EXIT_REASON_BASIC_MASK;
	if (reason < VMX_EXIT_REASON_COUNT && exit_reasons[reason])
		return exit_reasons[reason];
	return "unknown exit reason";
}
