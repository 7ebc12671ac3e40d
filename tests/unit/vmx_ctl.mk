UNIT_TESTS += vmx_ctl
unit_vmx_ctl_SRCS := tests/unit/test_vmx_ctl.c arch/x86/vmx/ctl.c arch/x86/vmx/names.c hv/cpuid.c arch/x86/msr_pass.c
