UNIT_TESTS += linux_boot
unit_linux_boot_SRCS := tests/unit/test_linux_boot.c hv/loader/bzimage.c hv/loader/e820.c hv/loader/mptable.c hv/loader/probe.c hv/loader/mb1elf.c hv/loader/pvh.c
