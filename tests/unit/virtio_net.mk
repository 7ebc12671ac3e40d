UNIT_TESTS += virtio_net
unit_virtio_net_SRCS := tests/unit/test_virtio_net.c tests/unit/drv_host.c drivers/virtio_net.c drivers/virtq.c \
	drivers/virtio_pci.c drivers/vnet_hdr.c
