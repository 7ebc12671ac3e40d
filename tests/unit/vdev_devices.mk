UNIT_TESTS += vdev_devices
unit_vdev_devices_SRCS := tests/unit/test_vdev_devices.c hv/vdev/devices.c hv/vdev/pic.c hv/vdev/pit.c hv/vdev/uart.c hv/vdev/rtc.c hv/vdev/snap.c
