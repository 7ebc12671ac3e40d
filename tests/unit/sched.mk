UNIT_TESTS += sched
unit_sched_SRCS := tests/unit/test_sched.c hv/sched/balance.c tests/unit/core_fake.c tests/unit/gnet_fake.c tests/unit/core_seam.c \
	hv/exit.c hv/sched/credit.c hv/cpuid.c hv/msr.c hv/vm_devices.c hv/conwatch.c hv/vm_arrival.c $(VDEV_SRCS) hv/kvmclock.c hv/tsc.c hv/lib/tscscale.c \
	hv/lib/ring.c hv/mm/gpmap.c hv/mm/dirty.c arch/x86/paging.c arch/x86/svm/npt.c arch/x86/vmx/ept.c \
	arch/x86/emulate/fetch.c arch/x86/emulate/mmio.c arch/x86/emulate/decode.c arch/x86/emulate/gwalk.c
# core_seam.c includes these: rebuild when they change
$(BUILD)/unit/sched: hv/vcpu.c hv/sched.c
