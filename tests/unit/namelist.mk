UNIT_TESTS += namelist
unit_namelist_SRCS := tests/unit/test_namelist.c hv/lib/namelist.c
