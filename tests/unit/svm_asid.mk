UNIT_TESTS += svm_asid
unit_svm_asid_SRCS := tests/unit/test_svm_asid.c arch/x86/svm/asid.c
