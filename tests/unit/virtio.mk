UNIT_TESTS += virtio
unit_virtio_SRCS := tests/unit/test_virtio.c drivers/virtio_pci.c drivers/vnet_hdr.c
