UNIT_TESTS += sched_credit
unit_sched_credit_SRCS := tests/unit/test_sched_credit.c hv/sched/credit.c
