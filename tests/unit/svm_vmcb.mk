UNIT_TESTS += svm_vmcb
unit_svm_vmcb_SRCS := tests/unit/test_svm_vmcb.c arch/x86/svm/vmcb.c arch/x86/svm/state.c arch/x86/svm/asid.c arch/x86/msr_pass.c hv/lib/tscscale.c
