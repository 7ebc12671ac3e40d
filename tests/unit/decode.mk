UNIT_TESTS += decode
unit_decode_SRCS := tests/unit/test_decode.c arch/x86/emulate/decode.c arch/x86/emulate/mmio.c
