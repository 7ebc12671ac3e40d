UNIT_TESTS += net_gro
unit_net_gro_SRCS := tests/unit/test_net_gro.c hv/net/gro.c hv/net/gso.c hv/net/cksum.c
