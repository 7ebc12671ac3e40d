UNIT_TESTS += cmd_net
unit_cmd_net_SRCS := tests/unit/test_cmd_net.c hv/shell/cmd_net.c hv/shell/shell.c \
	hv/shell/parse.c hv/lib/errtext.c
