UNIT_TESTS += pvclock
unit_pvclock_SRCS := tests/unit/test_pvclock.c hv/vdev/pvclock.c hv/lib/tscscale.c
