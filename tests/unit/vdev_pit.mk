UNIT_TESTS += vdev_pit
unit_vdev_pit_SRCS := tests/unit/test_vdev_pit.c hv/vdev/pit.c hv/vdev/snap.c
