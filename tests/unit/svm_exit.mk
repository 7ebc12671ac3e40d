UNIT_TESTS += svm_exit
unit_svm_exit_SRCS := tests/unit/test_svm_exit.c arch/x86/svm/exit.c arch/x86/svm/vmcb.c arch/x86/svm/state.c arch/x86/emulate/gwalk.c arch/x86/emulate/fetch.c arch/x86/emulate/decode.c arch/x86/svm/asid.c hv/cpuid.c arch/x86/msr_pass.c
