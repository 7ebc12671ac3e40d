UNIT_TESTS += shell
unit_shell_SRCS := tests/unit/test_shell.c hv/shell/shell.c hv/lib/errtext.c hv/shell/parse.c hv/shell/script.c
