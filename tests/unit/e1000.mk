UNIT_TESTS += e1000
unit_e1000_SRCS := tests/unit/test_e1000.c tests/unit/drv_host.c drivers/e1000.c drivers/e1000e.c
