UNIT_TESTS += migrate_stream
unit_migrate_stream_SRCS := tests/unit/test_migrate_stream.c hv/migrate/stream.c hv/lib/namelist.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/vdev/snap.c hv/lib/crc32.c hv/cpuid.c
