UNIT_TESTS += migrate_policy
unit_migrate_policy_SRCS := tests/unit/test_migrate_policy.c hv/migrate/policy.c hv/migrate/stream.c hv/lib/namelist.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/vdev/snap.c hv/lib/crc32.c hv/cpuid.c
