UNIT_TESTS += net_switch
unit_net_switch_SRCS := tests/unit/test_net_switch.c hv/net/switch.c
