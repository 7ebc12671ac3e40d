UNIT_TESTS += migrate_runs
unit_migrate_runs_SRCS := tests/unit/test_migrate_runs.c hv/migrate/stream.c hv/lib/namelist.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/vdev/snap.c hv/lib/crc32.c hv/cpuid.c
