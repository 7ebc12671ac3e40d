UNIT_TESTS += mb1elf
unit_mb1elf_SRCS := tests/unit/test_mb1elf.c hv/loader/mb1elf.c
