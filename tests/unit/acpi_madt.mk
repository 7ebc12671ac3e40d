UNIT_TESTS += acpi_madt
unit_acpi_madt_SRCS := tests/unit/test_acpi_madt.c arch/x86/acpi.c
