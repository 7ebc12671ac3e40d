UNIT_TESTS += net_tcp
unit_net_tcp_SRCS := tests/unit/test_net_tcp.c tests/unit/net_free.c hv/net/net.c hv/net/arp.c hv/net/ip.c hv/net/icmp.c hv/net/cksum.c hv/lib/crc32.c hv/net/tcp.c hv/net/tcp_in.c hv/net/tcp_out.c hv/net/tcp_timer.c hv/net/tcp_sack.c hv/net/nettest.c tests/unit/netsim.c
