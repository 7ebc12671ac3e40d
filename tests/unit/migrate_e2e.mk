UNIT_TESTS += migrate_e2e
unit_migrate_e2e_SRCS := tests/unit/test_migrate_e2e.c tests/unit/mig_host.c tests/unit/netsim.c tests/unit/net_free.c \
	hv/migrate/send.c hv/migrate/recv.c hv/migrate/chan.c hv/migrate/stream.c \
	hv/migrate/statecheck.c hv/migrate/sparse.c hv/migrate/policy.c hv/migrate/history.c hv/migrate/doubt.c \
	hv/net/net.c hv/net/arp.c hv/net/ip.c hv/net/icmp.c hv/net/cksum.c hv/net/tcp.c \
	hv/net/tcp_in.c hv/net/tcp_out.c hv/net/tcp_timer.c hv/net/tcp_sack.c \
	hv/mm/dirty.c arch/x86/paging.c arch/x86/vmx/ept.c hv/vdev/snap.c hv/cpuid.c \
	hv/lib/crc32.c hv/lib/errtext.c hv/lib/log.c hv/migrate/trust.c hv/crypto/noise.c \
	hv/crypto/keyfile.c hv/crypto/random.c hv/lib/namelist.c
unit_migrate_e2e_LIBS := -lbearssl
