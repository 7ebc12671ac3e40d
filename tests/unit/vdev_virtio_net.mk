UNIT_TESTS += vdev_virtio_net
unit_vdev_virtio_net_SRCS := tests/unit/test_vdev_virtio_net.c hv/vdev/virtio_net.c \
	hv/vdev/virtio_pci.c hv/vdev/virtqueue.c hv/vdev/vpci.c hv/vdev/snap.c
