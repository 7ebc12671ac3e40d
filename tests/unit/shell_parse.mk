UNIT_TESTS += shell_parse
unit_shell_parse_SRCS := tests/unit/test_shell_parse.c hv/shell/parse.c
