UNIT_TESTS += snap
unit_snap_SRCS := tests/unit/test_snap.c $(VDEV_SRCS)
