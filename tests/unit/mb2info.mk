UNIT_TESTS += mb2info
unit_mb2info_SRCS := tests/unit/test_mb2info.c boot/mb2info.c
