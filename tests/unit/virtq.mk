UNIT_TESTS += virtq
unit_virtq_SRCS := tests/unit/test_virtq.c drivers/virtq.c
