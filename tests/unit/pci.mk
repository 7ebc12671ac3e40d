UNIT_TESTS += pci
unit_pci_SRCS := tests/unit/test_pci.c
