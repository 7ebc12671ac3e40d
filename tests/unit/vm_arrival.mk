UNIT_TESTS += vm_arrival
unit_vm_arrival_SRCS := tests/unit/test_vm_arrival.c hv/vm_arrival.c
