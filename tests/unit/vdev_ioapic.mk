UNIT_TESTS += vdev_ioapic
unit_vdev_ioapic_SRCS := tests/unit/test_vdev_ioapic.c hv/vdev/ioapic.c hv/vdev/lapic.c hv/vdev/snap.c
