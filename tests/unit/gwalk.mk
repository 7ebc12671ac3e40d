UNIT_TESTS += gwalk
unit_gwalk_SRCS := tests/unit/test_gwalk.c arch/x86/emulate/gwalk.c arch/x86/emulate/fetch.c arch/x86/emulate/decode.c
