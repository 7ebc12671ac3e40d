UNIT_TESTS += sched
unit_sched_SRCS := tests/unit/test_sched.c tests/unit/core_fake.c tests/unit/core_seam.c \
	hv/exit.c hv/cpuid.c hv/msr.c hv/vm_devices.c hv/vdev/devices.c hv/vdev/pic.c \
	hv/vdev/pit.c hv/vdev/uart.c hv/vdev/rtc.c hv/vdev/snap.c hv/lib/ring.c \
	hv/mm/gpmap.c hv/mm/dirty.c arch/x86/paging.c arch/x86/svm/npt.c arch/x86/vmx/ept.c
# core_seam.c includes these: rebuild when they change
$(BUILD)/unit/sched: hv/vcpu.c hv/sched.c
