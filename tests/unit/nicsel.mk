UNIT_TESTS += nicsel
unit_nicsel_SRCS := tests/unit/test_nicsel.c drivers/nicsel.c drivers/nic.c boot/mb2info.c
