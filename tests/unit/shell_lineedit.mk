UNIT_TESTS += shell_lineedit
unit_shell_lineedit_SRCS := tests/unit/test_shell_lineedit.c hv/shell/lineedit.c
