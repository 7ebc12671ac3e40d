UNIT_TESTS += vdev_uart
unit_vdev_uart_SRCS := tests/unit/test_vdev_uart.c hv/vdev/uart.c hv/vdev/snap.c
