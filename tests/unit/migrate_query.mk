UNIT_TESTS += migrate_query
unit_migrate_query_SRCS := tests/unit/test_migrate_query.c hv/migrate/stream.c hv/lib/namelist.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/vdev/snap.c hv/lib/crc32.c hv/cpuid.c
