UNIT_TESTS += vmx_state
unit_vmx_state_SRCS := tests/unit/test_vmx_state.c arch/x86/vmx/state.c arch/x86/vmx/ctl.c hv/cpuid.c arch/x86/msr_pass.c
