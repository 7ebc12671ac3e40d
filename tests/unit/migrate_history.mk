UNIT_TESTS += migrate_history
unit_migrate_history_SRCS := tests/unit/test_migrate_history.c hv/migrate/history.c
