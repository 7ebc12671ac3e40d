UNIT_TESTS += virt
unit_virt_SRCS := tests/unit/test_virt.c arch/x86/virt.c
