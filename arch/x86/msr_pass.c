/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MSR pass-through list (msr_pass.h).  An MSR may be opened only where
 * the guest's value is kept apart from the host's by the hardware switch:
 *  - FS/GS base: guest-state fields of the VMCS and the VMCB;
 *  - KERNEL_GS_BASE, STAR, LSTAR, CSTAR, SFMASK: swapped by VMLOAD/VMSAVE
 *    on SVM (APM 15.5.2) and left in the CPU on VMX while the vCPU owns it
 *    (vmx/hw.c);
 *  - SYSENTER_CS: swapped by VMLOAD/VMSAVE too; VMX lets it exit to the
 *    core's allow-list, which reaches it through the state.
 * SYSENTER_ESP/EIP exit on both: AMD CPUs keep only their low 32 bits, and
 * the guest, told it runs on an Intel CPU, writes 64-bit addresses there
 * (the SVM back end keeps them whole, as KVM does).
 */
#include "arch/x86/msr_pass.h"

#define BOTH	(MSR_PASS_VMX | MSR_PASS_SVM)

const struct msr_pass msr_pass_list[] = {
	{ 0xc0000100, BOTH },		/* FS_BASE */
	{ 0xc0000101, BOTH },		/* GS_BASE */
	{ 0xc0000102, BOTH },		/* KERNEL_GS_BASE */
	{ 0xc0000081, BOTH },		/* STAR */
	{ 0xc0000082, BOTH },		/* LSTAR */
	{ 0xc0000083, BOTH },		/* CSTAR */
	{ 0xc0000084, BOTH },		/* SFMASK */
	{ 0x174, MSR_PASS_SVM },	/* SYSENTER_CS */
};

const size_t msr_pass_count = sizeof(msr_pass_list) / sizeof(msr_pass_list[0]);
