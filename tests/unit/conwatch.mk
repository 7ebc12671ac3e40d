UNIT_TESTS += conwatch
unit_conwatch_SRCS := tests/unit/test_conwatch.c hv/conwatch.c
