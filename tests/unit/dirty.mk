UNIT_TESTS += dirty
unit_dirty_SRCS := tests/unit/test_dirty.c hv/mm/dirty.c arch/x86/paging.c arch/x86/svm/npt.c arch/x86/vmx/ept.c arch/x86/vmx/pml.c
