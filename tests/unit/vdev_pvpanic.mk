UNIT_TESTS += vdev_pvpanic
unit_vdev_pvpanic_SRCS := tests/unit/test_vdev_pvpanic.c $(VDEV_SRCS)
