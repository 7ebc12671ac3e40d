UNIT_TESTS += vdev_devices
unit_vdev_devices_SRCS := tests/unit/test_vdev_devices.c $(VDEV_SRCS)
