/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The rules for a guest's CPU state as it travels in VCPU_STATE: what this
 * host could load without the CPU refusing the entry or faulting, and
 * nothing a guest could not have set itself (host-only and reserved bits).
 * The stream runs them on every VCPU_STATE it encodes or decodes; the
 * receiver may run them again on what it loads.  Pure: no I/O.
 *
 * Each returns 0, or -EINVAL with e (code MIG_E_STATE) naming the field.
 */
#ifndef FERRY_HV_MIGRATE_STATECHECK_H
#define FERRY_HV_MIGRATE_STATECHECK_H

#include <stdint.h>
#include "hv/cpu_state.h"
#include "hv/migrate/stream.h"

/* Control registers, EFER, RFLAGS, debug registers (SDM Vol. 3A 2.5), XCR0
 * against what this host can load (xcr0_mask; SDM Vol. 1 13.3), canonical
 * addresses, segment attributes, syscall MSRs, PAT and MTRR default type,
 * interruptibility and the pending event (SDM 24.8.3, APM 15.20). */
int mig_cpu_state_check(const struct cpu_state *c, uint64_t xcr0_mask, struct mig_error *e);

/* A standard-format XSAVE area of len bytes (SDM Vol. 1 13.4, 13.8.1):
 * length in bounds, MXCSR reserved bits clear, XSTATE_BV within xcr0_mask,
 * the header's reserved bytes (XCOMP_BV...) zero. */
int mig_xsave_check(const uint8_t *area, uint32_t len, uint64_t xcr0_mask, struct mig_error *e);

#endif
