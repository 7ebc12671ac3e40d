UNIT_TESTS += migrate_sparse
unit_migrate_sparse_SRCS := tests/unit/test_migrate_sparse.c hv/migrate/stream.c hv/lib/namelist.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/vdev/snap.c hv/lib/crc32.c hv/cpuid.c
