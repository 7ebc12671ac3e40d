UNIT_TESTS += log
unit_log_SRCS := tests/unit/test_log.c hv/lib/log.c
