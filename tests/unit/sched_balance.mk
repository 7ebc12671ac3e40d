UNIT_TESTS += sched_balance
unit_sched_balance_SRCS := tests/unit/test_sched_balance.c hv/sched/balance.c
