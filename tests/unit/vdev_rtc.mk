UNIT_TESTS += vdev_rtc
unit_vdev_rtc_SRCS := tests/unit/test_vdev_rtc.c hv/vdev/rtc.c hv/vdev/snap.c
