UNIT_TESTS += paging
unit_paging_SRCS := tests/unit/test_paging.c arch/x86/paging.c arch/x86/svm/npt.c arch/x86/vmx/ept.c
