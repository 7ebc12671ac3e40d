UNIT_TESTS += gpmap
unit_gpmap_SRCS := tests/unit/test_gpmap.c hv/mm/gpmap.c arch/x86/paging.c arch/x86/svm/npt.c \
	arch/x86/vmx/ept.c hv/vdev/rtc.c hv/vdev/snap.c
