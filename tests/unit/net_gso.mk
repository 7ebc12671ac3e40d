UNIT_TESTS += net_gso
unit_net_gso_SRCS := tests/unit/test_net_gso.c hv/net/gso.c hv/net/cksum.c
