UNIT_TESTS += policy
unit_policy_SRCS := tests/unit/test_policy.c hv/cpuid.c hv/msr.c
