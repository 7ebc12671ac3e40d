UNIT_TESTS += e1000
unit_e1000_SRCS := tests/unit/test_e1000.c tests/unit/drv_host.c drivers/e1000.c drivers/e1000e.c

# the same with rings of another size: a ring larger than a page must get
# the pages it needs (it once overran the one it was given)
UNIT_TESTS += e1000_bigring
unit_e1000_bigring_SRCS := $(unit_e1000_SRCS)
unit_e1000_bigring_CFLAGS := -DE1000_RX_DESC=1024 -DE1000_TX_DESC=512
