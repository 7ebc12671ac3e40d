UNIT_TESTS += attach
unit_attach_SRCS := tests/unit/test_attach.c hv/shell/attach.c
