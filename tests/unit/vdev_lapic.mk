UNIT_TESTS += vdev_lapic
unit_vdev_lapic_SRCS := tests/unit/test_vdev_lapic.c hv/vdev/lapic.c hv/vdev/snap.c
