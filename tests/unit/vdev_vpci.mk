UNIT_TESTS += vdev_vpci
unit_vdev_vpci_SRCS := tests/unit/test_vdev_vpci.c hv/vdev/vpci.c hv/vdev/snap.c
