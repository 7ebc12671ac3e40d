UNIT_TESTS += vdev_vnic
unit_vdev_vnic_SRCS := tests/unit/test_vdev_vnic.c hv/vdev/vnic.c hv/vdev/virtio_net.c \
	hv/vdev/virtio_pci.c hv/vdev/virtqueue.c hv/vdev/vpci.c hv/vdev/snap.c hv/vdev/pvpanic.c
