UNIT_TESTS += snap
unit_snap_SRCS := tests/unit/test_snap.c hv/vdev/snap.c hv/vdev/pic.c hv/vdev/pit.c hv/vdev/uart.c hv/vdev/rtc.c hv/vdev/devices.c
