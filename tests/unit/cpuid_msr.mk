UNIT_TESTS += cpuid_msr
unit_cpuid_msr_SRCS := tests/unit/test_cpuid_msr.c hv/cpuid.c hv/msr.c
