/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire formats of the protocols the stack speaks: header sizes, field offsets
 * and constants, plus big-endian load/store helpers.  Headers are accessed by
 * offset from a byte pointer (never through packed structs), so a frame at
 * any alignment is safe to parse.
 */
#ifndef FERRY_HV_NET_PROTO_H
#define FERRY_HV_NET_PROTO_H

#include <stdint.h>
#include <string.h>
#include "hv/lib/bytes.h"

/* Ethernet II (IEEE 802.3 clause 3.1.1), without preamble and FCS. */
#define ETH_ALEN	6
#define ETH_HLEN	14
#define ETH_ZLEN	60		/* minimum frame without FCS */
#define ETH_MTU		1500
#define ETH_FRAME_MAX	(ETH_HLEN + ETH_MTU)
#define ETH_RX_MAX	1522		/* tolerate a stray FCS or tag */
#define ETH_O_DST	0
#define ETH_O_SRC	6
#define ETH_O_TYPE	12
#define ETH_P_IP	0x0800
#define ETH_P_ARP	0x0806

/* ARP for IPv4 over Ethernet (RFC 826). */
#define ARP_LEN		28
#define ARP_O_HTYPE	0
#define ARP_O_PTYPE	2
#define ARP_O_HLEN	4
#define ARP_O_PLEN	5
#define ARP_O_OP	6
#define ARP_O_SHA	8
#define ARP_O_SPA	14
#define ARP_O_THA	18
#define ARP_O_TPA	24
#define ARP_HTYPE_ETH	1
#define ARP_OP_REQUEST	1
#define ARP_OP_REPLY	2

/* IPv4 (RFC 791 section 3.1). */
#define IP_HLEN		20
#define IP_O_VHL	0
#define IP_O_TOS	1
#define IP_O_LEN	2
#define IP_O_ID		4
#define IP_O_FRAG	6
#define IP_O_TTL	8
#define IP_O_PROTO	9
#define IP_O_CSUM	10
#define IP_O_SRC	12
#define IP_O_DST	16
#define IP_FLAG_DF	0x4000
#define IP_FLAG_MF	0x2000
#define IP_FRAG_MASK	0x1fff
#define IP_TTL_DEFAULT	64
#define IP_PROTO_ICMP	1
#define IP_PROTO_TCP	6
#define IP_BROADCAST	0xffffffffu

/* ICMP (RFC 792): echo request/reply layout. */
#define ICMP_HLEN	8
#define ICMP_O_TYPE	0
#define ICMP_O_CODE	1
#define ICMP_O_CSUM	2
#define ICMP_O_ID	4
#define ICMP_O_SEQ	6
#define ICMP_ECHO_REPLY	0
#define ICMP_ECHO	8
#define ICMP_DEST_UNREACH	3
#define ICMP_FRAG_NEEDED	4	/* its code: DF set, the next hop's MTU in */
#define ICMP_O_MTU	6		/* RFC 1191 4: 0 from older routers */

/* TCP (RFC 9293 section 3.1). */
#define TCP_HLEN	20
#define TCP_O_SPORT	0
#define TCP_O_DPORT	2
#define TCP_O_SEQ	4
#define TCP_O_ACK	8
#define TCP_O_OFF	12
#define TCP_O_FLAGS	13
#define TCP_O_WIN	14
#define TCP_O_CSUM	16
#define TCP_O_URP	18
#define TCP_FIN		0x01
#define TCP_SYN		0x02
#define TCP_RST		0x04
#define TCP_PSH		0x08
#define TCP_ACK		0x10
#define TCP_URG		0x20
#define TCP_OPT_EOL	0
#define TCP_OPT_NOP	1
#define TCP_OPT_MSS	2		/* RFC 9293 3.2 */
#define TCP_OPT_WS	3		/* RFC 7323 2 */
#define TCP_OPT_SACKOK	4		/* RFC 2018 2 */
#define TCP_OPT_SACK	5		/* RFC 2018 3 */
#define TCP_OPT_MAXLEN	40

static inline void mac_copy(uint8_t *dst, const uint8_t *src)
{
	memcpy(dst, src, ETH_ALEN);
}

static inline int mac_is_multicast(const uint8_t *m)
{
	return m[0] & 1;	/* group bit; covers broadcast */
}

#endif
