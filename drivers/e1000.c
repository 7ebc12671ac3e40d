/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 82540EM driver (Intel "PCI/PCI-X Family of Gigabit Ethernet Controllers
 * Software Developer's Manual", 8254x SDM): reset, MAC from the receive
 * address registers (set by the EEPROM load) or the EEPROM, legacy
 * receive descriptors, legacy and (for checksum and segmentation offload)
 * extended transmit descriptors after context descriptors, polling.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "drivers/e1000.h"
#include "hv/lib/log.h"
#include "hv/mm/frame.h"
#include "hv/lib/time.h"

enum {
	CTRL = 0x0000, STATUS = 0x0008, EERD = 0x0014, ICR = 0x00c0, ITR = 0x00c4,
	IMS = 0x00d0, IMC = 0x00d8, RCTL = 0x0100, TCTL = 0x0400, TIPG = 0x0410,
	RDBAL = 0x2800, RDBAH = 0x2804, RDLEN = 0x2808, RDH = 0x2810, RDT = 0x2818,
	RDTR = 0x2820, RADV = 0x282c,
	TDBAL = 0x3800, TDBAH = 0x3804, TDLEN = 0x3808, TDH = 0x3810, TDT = 0x3818,
	MPC = 0x4010, RXCSUM = 0x5000, MTA = 0x5200, RAL0 = 0x5400, RAH0 = 0x5404,
};
/* Interrupt causes (SDM 13.4.17): frames sent, link change, frames
 * received (timer 0 fires at once with RDTR 0), ring low, overrun. */
#define INT_TXDW	(1u << 0)
#define INT_LSC		(1u << 2)
#define INT_RXDMT0	(1u << 4)
#define INT_RXO		(1u << 6)
#define INT_RXT0	(1u << 7)
#define INT_WAKE	(INT_TXDW | INT_LSC | INT_RXDMT0 | INT_RXO | INT_RXT0)
#define CTRL_SLU	(1u << 6)
#define CTRL_RST	(1u << 26)
#define STATUS_LU	(1u << 1)
#define RCTL_EN		(1u << 1)
#define RCTL_BAM	(1u << 15)
#define RCTL_SECRC	(1u << 26)	/* strip the Ethernet CRC */
#define TCTL_EN		(1u << 1)
#define TCTL_PSP	(1u << 3)
#define RXCSUM_IPOFL	(1u << 8)	/* SDM 13.4.42 */
#define RXCSUM_TUOFL	(1u << 9)
#define RX_DD		(1u << 0)	/* receive status, SDM 3.2.3.1 */
#define RX_EOP		(1u << 1)
#define RX_IXSM		(1u << 2)	/* ignore the checksum bits */
#define RX_TCPCS	(1u << 5)
#define RX_IPCS		(1u << 6)
#define RX_ERR_TCPE	(1u << 5)	/* receive errors, SDM 3.2.3.2 */
#define RX_ERR_IPE	(1u << 6)
/* Transmit descriptor dwords (SDM 3.3.3, 3.3.6, 3.3.7): `lower' holds the
 * length (data) or PAYLEN (context), DTYP in bits 23:20 and the command
 * byte in 31:24; `upper' the status (DD), POPTS in 15:8 (data) or
 * HDRLEN and MSS (context). */
#define TX_CMD_EOP	(1u << 24)
#define TX_CMD_IFCS	(1u << 25)
#define TX_CMD_RS	(1u << 27)
#define TX_CMD_TSE	(1u << 26)	/* data and context: segmentation */
#define TX_CMD_DEXT	(1u << 29)
#define TX_CTX_TCP	(1u << 24)	/* TUCMD: TCP (not UDP) */
#define TX_CTX_IP	(1u << 25)	/* TUCMD: IPv4 */
#define TX_DTYP_D	(1u << 20)	/* extended data (0: context) */
#define TX_POPTS_IXSM	(1u << 8)	/* insert the IPv4 header checksum */
#define TX_POPTS_TXSM	(1u << 9)	/* insert the TCP/UDP checksum */
#define TX_DD		(1u << 0)
/* Offsets in an IPv4 TCP frame (Ethernet, 20-byte IP header). */
#define OFF_IP		14
#define OFF_TCP		34

struct e1000_rx_desc {
	uint64_t addr;
	uint16_t length, csum;
	uint8_t status, errors;
	uint16_t special;
} __attribute__((packed));

struct e1000_tx_desc {
	uint64_t addr;		/* context: IPCSS..TUCSE */
	uint32_t lower, upper;
} __attribute__((packed));

static uint32_t rd(struct e1000 *n, uint32_t r) { return *(volatile uint32_t *)(n->regs + r); }
static void wr(struct e1000 *n, uint32_t r, uint32_t v) { *(volatile uint32_t *)(n->regs + r) = v; }

static uint16_t eeprom_read(struct e1000 *n, uint8_t word)
{
	wr(n, EERD, 1u | (uint32_t)word << 8);
	for (int i = 0; i < 100000; i++) {
		uint32_t v = rd(n, EERD);
		if (v & (1u << 4))
			return v >> 16;
	}
	return 0xffff;
}

static void read_mac(struct e1000 *n)
{
	uint32_t lo = rd(n, RAL0), hi = rd(n, RAH0);

	if (hi & (1u << 31)) {		/* address valid */
		for (int i = 0; i < 4; i++)
			n->mac[i] = lo >> (8 * i);
		n->mac[4] = hi;
		n->mac[5] = hi >> 8;
		return;
	}
	for (int i = 0; i < 3; i++) {
		uint16_t w = eeprom_read(n, i);
		n->mac[2 * i] = w;
		n->mac[2 * i + 1] = w >> 8;
	}
	wr(n, RAL0, n->mac[0] | n->mac[1] << 8 | n->mac[2] << 16 | (uint32_t)n->mac[3] << 24);
	wr(n, RAH0, n->mac[4] | n->mac[5] << 8 | 1u << 31);
}

/* Rings and buffers in contiguous frames reached through the direct map. */
static int alloc_rings(struct e1000 *n)
{
	size_t rx_pages = (E1000_RX_DESC * E1000_BUF) / 4096, tx_pages = (E1000_TX_DESC * E1000_BUF) / 4096;

	n->rx_ring_pa = frame_alloc_contig(1, 1);
	n->tx_ring_pa = frame_alloc_contig(1, 1);
	n->rx_buf_pa = frame_alloc_contig(rx_pages, 1);
	n->tx_buf_pa = frame_alloc_contig(tx_pages, 1);
	if (!n->rx_ring_pa || !n->tx_ring_pa || !n->rx_buf_pa || !n->tx_buf_pa)
		return -ENOMEM;
	n->rx = phys_to_virt(n->rx_ring_pa);
	n->tx = phys_to_virt(n->tx_ring_pa);
	n->rx_buf = phys_to_virt(n->rx_buf_pa);
	n->tx_buf = phys_to_virt(n->tx_buf_pa);
	memset(n->rx, 0, 4096);
	memset(n->tx, 0, 4096);
	return 0;
}

static void setup_rx(struct e1000 *n)
{
	for (int i = 0; i < E1000_RX_DESC; i++)
		n->rx[i] = (struct e1000_rx_desc){ .addr = n->rx_buf_pa + i * E1000_BUF };
	for (int i = 0; i < 128; i++)
		wr(n, MTA + 4 * i, 0);
	wr(n, RDBAL, (uint32_t)n->rx_ring_pa);
	wr(n, RDBAH, n->rx_ring_pa >> 32);
	wr(n, RDLEN, E1000_RX_DESC * sizeof(struct e1000_rx_desc));
	wr(n, RDH, 0);
	wr(n, RDT, E1000_RX_DESC - 1);
	n->rx_next = 0;
	wr(n, RCTL, RCTL_EN | RCTL_BAM | RCTL_SECRC);	/* 2048-byte buffers */
}

/* The offload context (SDM 3.3.6): IP header checksum region 14..33 with
 * its field at 24, TCP from 34 to the end with its field at 50.  Loaded
 * at setup, for checksums only: the NIC keeps it for later data
 * descriptors; each TSO frame loads its own with TSE, PAYLEN, HDRLEN and
 * MSS (QEMU keeps a TSE context apart from the plain one). */
static void tx_put_context(struct e1000 *n, uint32_t tse_paylen, uint32_t hlen,
			   uint32_t mss)
{
	struct e1000_tx_desc *d = &n->tx[n->tx_tail];

	d->addr = OFF_IP | (OFF_IP + 10) << 8 | (uint64_t)(OFF_TCP - 1) << 16 |
		  (uint64_t)OFF_TCP << 32 | (uint64_t)(OFF_TCP + 16) << 40;
	d->lower = TX_CMD_DEXT | TX_CMD_RS | TX_CTX_IP | TX_CTX_TCP;
	if (tse_paylen)
		d->lower |= TX_CMD_TSE | tse_paylen;
	d->upper = hlen << 8 | mss << 16;
	n->tx_tail = (n->tx_tail + 1) % E1000_TX_DESC;
	n->tx_unkicked++;
}

static void setup_tx(struct e1000 *n)
{
	for (int i = 0; i < E1000_TX_DESC; i++)
		n->tx[i] = (struct e1000_tx_desc){ .addr = n->tx_buf_pa + i * E1000_BUF,
						   .upper = TX_DD };
	wr(n, TDBAL, (uint32_t)n->tx_ring_pa);
	wr(n, TDBAH, n->tx_ring_pa >> 32);
	wr(n, TDLEN, E1000_TX_DESC * sizeof(struct e1000_tx_desc));
	wr(n, TDH, 0);
	wr(n, TDT, 0);
	n->tx_tail = n->tx_clean = 0;
	wr(n, TIPG, 10 | 8 << 10 | 6 << 20);
	wr(n, TCTL, TCTL_EN | TCTL_PSP | 0x10 << 4 | 0x40 << 12);
	tx_put_context(n, 0, 0, 0);	/* legacy descriptors ignore it */
	e1000_tx_kick(n);
}

int e1000_probe(struct e1000 *n)
{
	uint64_t bar, size;

	memset(n, 0, sizeof(*n));
	if (!pci_find(0x8086, 0x100e, &n->pci))
		return -ENODEV;
	bar = pci_bar_mem(&n->pci, 0, &size);
	if (!bar || size < 0x20000)
		return -EIO;
	n->regs = ioremap(bar, size);
	if (!n->regs)
		return -ENOMEM;
	pci_enable_bus_master(&n->pci);
	wr(n, IMC, 0xffffffff);
	wr(n, CTRL, rd(n, CTRL) | CTRL_RST);
	udelay(10000);
	wr(n, IMC, 0xffffffff);
	(void)rd(n, ICR);
	wr(n, CTRL, rd(n, CTRL) | CTRL_SLU);
	read_mac(n);
	if (alloc_rings(n))
		return -ENOMEM;
	setup_rx(n);
	setup_tx(n);
	wr(n, RXCSUM, RXCSUM_IPOFL | RXCSUM_TUOFL);
	n->tx_csum = true;
	n->tso = true;
	pr_info("e1000: %02x:%02x.%x MAC %02x:%02x:%02x:%02x:%02x:%02x, link %s",
		n->pci.bus, n->pci.dev, n->pci.fn, n->mac[0], n->mac[1], n->mac[2],
		n->mac[3], n->mac[4], n->mac[5], e1000_link_up(n) ? "up" : "down");
	return 0;
}

void e1000_irq_setup(struct e1000 *n)
{
	wr(n, RDTR, 0);		/* no receive delay, no moderation: wake at once */
	wr(n, RADV, 0);
	wr(n, ITR, 0);		/* e1000_probe left every cause masked */
}

void e1000_irq_mask(struct e1000 *n)
{
	wr(n, IMC, INT_WAKE);
}

void e1000_irq_unmask(struct e1000 *n)
{
	wr(n, IMS, INT_WAKE);
}

uint32_t e1000_irq_ack(struct e1000 *n)
{
	return rd(n, ICR);	/* reading clears the causes and drops the line */
}

bool e1000_link_up(struct e1000 *n)
{
	return n->regs && (rd(n, STATUS) & STATUS_LU);
}

static void tx_reclaim(struct e1000 *n)
{
	while (n->tx_clean != n->tx_tail && (n->tx[n->tx_clean].upper & TX_DD))
		n->tx_clean = (n->tx_clean + 1) % E1000_TX_DESC;
}

static unsigned int tx_free(const struct e1000 *n)
{
	return (n->tx_clean + E1000_TX_DESC - n->tx_tail - 1) % E1000_TX_DESC;
}

static uint8_t *tx_slot_buf(const struct e1000 *n)
{
	return n->tx_buf + n->tx_tail * E1000_BUF;
}

void *e1000_tx_frame(struct e1000 *n)
{
	tx_reclaim(n);
	return tx_free(n) ? tx_slot_buf(n) : NULL;
}

bool e1000_frame_is_tcp4(const uint8_t *f, size_t len)
{
	return len >= OFF_TCP + 20 && f[12] == 0x08 && f[13] == 0x00 &&
	       f[OFF_IP] == 0x45 && f[OFF_IP + 9] == 6;
}


/* Hand queued frames to the NIC: one register write for a burst. */
void e1000_tx_kick(struct e1000 *n)
{
	if (!n->tx_unkicked)
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	wr(n, TDT, n->tx_tail);
	n->tx_unkicked = 0;
}

int e1000_xmit(struct e1000 *n, const void *frame, size_t len)
{
	bool csum = n->tx_csum && e1000_frame_is_tcp4(frame, len);
	struct e1000_tx_desc *d;

	if (len > E1000_BUF || len < 14)
		return -EINVAL;
	tx_reclaim(n);
	if (!tx_free(n)) {
		e1000_tx_kick(n);
		n->stats.tx_busy++;
		return -EAGAIN;
	}
	d = &n->tx[n->tx_tail];
	d->addr = n->tx_buf_pa + n->tx_tail * E1000_BUF;
	if (frame != tx_slot_buf(n))	/* not built in place */
		memcpy(tx_slot_buf(n), frame, len);
	d->lower = (uint32_t)len | TX_CMD_EOP | TX_CMD_IFCS | TX_CMD_RS;
	d->upper = 0;
	if (csum) {
		d->lower |= TX_CMD_DEXT | TX_DTYP_D;
		d->upper = TX_POPTS_TXSM;
		n->stats.tx_csum++;
	}
	n->tx_tail = (n->tx_tail + 1) % E1000_TX_DESC;
	if (++n->tx_unkicked >= 32)
		e1000_tx_kick(n);
	n->stats.tx_frames++;
	n->stats.tx_bytes += len;
	return 0;
}

/* Checksums the NIC verified (SDM 3.2.9); none when it says "ignore". */
static unsigned int rx_flags(const struct e1000_rx_desc *d)
{
	unsigned int f = 0;

	if (d->status & RX_IXSM)
		return 0;
	if ((d->status & RX_IPCS) && !(d->errors & RX_ERR_IPE))
		f |= E1000_RX_IP_CSUM_OK;
	if ((d->status & RX_TCPCS) && !(d->errors & RX_ERR_TCPE))
		f |= E1000_RX_TCP_CSUM_OK;
	return f;
}

/* One extended data descriptor for len bytes copied from src (unless
 * src is already the slot's buffer). */
static void tx_put_data(struct e1000 *n, const uint8_t *src, size_t len,
			uint32_t cmd, uint32_t popts)
{
	struct e1000_tx_desc *d = &n->tx[n->tx_tail];

	d->addr = n->tx_buf_pa + n->tx_tail * E1000_BUF;
	if (src != tx_slot_buf(n))
		memcpy(tx_slot_buf(n), src, len);
	d->lower = (uint32_t)len | TX_CMD_DEXT | TX_DTYP_D | TX_CMD_IFCS | TX_CMD_RS | cmd;
	d->upper = popts;
	n->tx_tail = (n->tx_tail + 1) % E1000_TX_DESC;
	n->tx_unkicked++;
}

static unsigned int tso_descs(const size_t len[2])
{
	return 2 + (unsigned int)((len[0] + E1000_BUF - 1) / E1000_BUF +
				  (len[1] + E1000_BUF - 1) / E1000_BUF);
}

int e1000_xmit_tso(struct e1000 *n, const uint8_t *hdr, size_t hlen,
		   const uint8_t *const data[2], const size_t len[2], unsigned int mss)
{
	size_t total = len[0] + len[1];
	uint8_t tmp[256];

	if (!n->tso || hlen > 255 || total > E1000_TSO_MAX || !total || !mss ||
	    hlen + mss > E1000_BUF || !e1000_frame_is_tcp4(hdr, hlen))
		return -EINVAL;
	tx_reclaim(n);
	if (tx_free(n) < tso_descs(len)) {
		e1000_tx_kick(n);
		n->stats.tx_busy++;
		return -EAGAIN;
	}
	memcpy(tmp, hdr, hlen);		/* hdr may be the next slot's buffer */
	tx_put_context(n, (uint32_t)total, (uint32_t)hlen, mss);
	tx_put_data(n, tmp, hlen, TX_CMD_TSE, TX_POPTS_IXSM | TX_POPTS_TXSM);
	for (int i = 0; i < 2; i++)
		for (size_t off = 0; off < len[i]; off += E1000_BUF) {
			size_t k = len[i] - off < E1000_BUF ? len[i] - off : E1000_BUF;

			tx_put_data(n, data[i] + off, k,
				    TX_CMD_TSE | (off + k == len[i] && (i || !len[1]) ? TX_CMD_EOP : 0),
				    TX_POPTS_IXSM | TX_POPTS_TXSM);
		}
	n->stats.tx_tso++;
	n->stats.tx_frames += (total + mss - 1) / mss;
	n->stats.tx_bytes += total + hlen * ((total + mss - 1) / mss);
	if (n->tx_unkicked >= 32)
		e1000_tx_kick(n);
	return 0;
}

int e1000_poll(struct e1000 *n,
	       void (*rx)(void *ctx, const void *frame, size_t len, unsigned flags),
	       void *ctx, int budget)
{
	int done = 0, last = -1;

	e1000_tx_kick(n);
	while (done < budget) {
		struct e1000_rx_desc *d = &n->rx[n->rx_next];
		if (!(d->status & RX_DD))
			break;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		/* a bad checksum is the stack's to count: it checks again */
		if (!(d->status & RX_EOP) || (d->errors & ~(RX_ERR_IPE | RX_ERR_TCPE)) ||
		    d->length > E1000_BUF) {
			n->stats.rx_errors++;	/* bad, or spread over buffers: drop */
		} else {
			unsigned int flags = rx_flags(d);

			n->stats.rx_frames++;
			n->stats.rx_bytes += d->length;
			n->stats.rx_csum += flags != 0;
			rx(ctx, n->rx_buf + n->rx_next * E1000_BUF, d->length, flags);
		}
		d->status = 0;
		d->errors = 0;
		last = n->rx_next;
		n->rx_next = (n->rx_next + 1) % E1000_RX_DESC;
		done++;
	}
	if (last >= 0) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		wr(n, RDT, last);		/* give the buffers back at once */
	}
	if (!done && ++n->idle_polls % 1024 == 0)
		n->stats.rx_missed += rd(n, MPC);	/* clears on read */
	return done;
}
