# SPDX-License-Identifier: BSD-2-Clause
# Network targets (included by tests/fuzz/fuzz.mk).
FUZZ_ALL += net
fuzz_net_SRCS := tests/fuzz/fuzz_net.c $(FUZZ_NET_SRCS)
FUZZ_ALL += vnet
fuzz_vnet_SRCS := tests/fuzz/fuzz_vnet.c hv/vdev/virtio_net.c hv/vdev/virtio_pci.c \
	hv/vdev/virtqueue.c hv/vdev/vpci.c hv/vdev/snap.c
FUZZ_ALL += switch
fuzz_switch_SRCS := tests/fuzz/fuzz_switch.c hv/net/switch.c
