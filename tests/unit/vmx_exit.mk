UNIT_TESTS += vmx_exit
unit_vmx_exit_SRCS := tests/unit/test_vmx_exit.c arch/x86/vmx/exit.c arch/x86/vmx/cr.c arch/x86/vmx/state.c arch/x86/vmx/ctl.c arch/x86/vmx/names.c arch/x86/emulate/gwalk.c arch/x86/emulate/fetch.c arch/x86/emulate/decode.c hv/cpuid.c arch/x86/msr_pass.c
