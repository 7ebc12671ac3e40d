UNIT_TESTS += cmd_migrate
unit_cmd_migrate_SRCS := tests/unit/test_cmd_migrate.c hv/shell/cmd_migrate.c hv/shell/shell.c \
	hv/shell/parse.c hv/lib/errtext.c
