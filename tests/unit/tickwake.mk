UNIT_TESTS += tickwake
unit_tickwake_SRCS := tests/unit/test_tickwake.c
