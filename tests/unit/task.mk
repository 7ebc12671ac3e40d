UNIT_TESTS += task
unit_task_SRCS := tests/unit/test_task.c arch/x86/task.c arch/x86/task_switch.S
