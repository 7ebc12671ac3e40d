UNIT_TESTS += gnet
unit_gnet_SRCS := tests/unit/test_gnet.c hv/gnet.c hv/net/switch.c hv/net/cksum.c hv/net/gso.c hv/vdev/snap.c hv/net/gro.c
