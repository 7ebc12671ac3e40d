UNIT_TESTS += vdev_pic
unit_vdev_pic_SRCS := tests/unit/test_vdev_pic.c hv/vdev/pic.c hv/vdev/snap.c
