UNIT_TESTS += loader_pvh
unit_loader_pvh_SRCS := tests/unit/test_pvh.c hv/loader/pvh.c hv/loader/e820.c hv/loader/probe.c hv/loader/bzimage.c hv/loader/mb1elf.c
