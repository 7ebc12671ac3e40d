/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 82540EM driver (Intel "PCI/PCI-X Family of Gigabit Ethernet Controllers
 * Software Developer's Manual", 8254x SDM): reset, MAC from the receive
 * address registers (set by the EEPROM load) or the EEPROM, legacy
 * receive descriptors, legacy and (for checksum and segmentation offload)
 * extended transmit descriptors after context descriptors, polling.  The
 * 82574L runs the same code with its own struct e1000_model (e1000e.c).
 */
#include <errno.h>
#include <stdlib.h>
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
#define RCTL_UPE	(1u << 3)	/* unicast promiscuous (SDM 13.4.22) */
#define RCTL_MPE	(1u << 4)	/* multicast promiscuous */
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

static struct e1000 *E(struct nic *n) { return (struct e1000 *)n; }
static uint32_t rd(struct e1000 *n, uint32_t r) { return *(volatile uint32_t *)(n->regs + r); }
static void wr(struct e1000 *n, uint32_t r, uint32_t v) { *(volatile uint32_t *)(n->regs + r) = v; }

/* EERD (SDM 13.4.4): start bit 0, the word address, done, the data in
 * 31:16; the 82574L moves the done bit and the address (e1000e.c). */
static uint16_t eeprom_read(struct e1000 *n, uint8_t word)
{
	uint32_t done = 1u << n->m->eerd_done_bit;

	wr(n, EERD, 1u | (uint32_t)word << n->m->eerd_addr_shift);
	for (int i = 0; i < 100000; i++) {
		uint32_t v = rd(n, EERD);
		if (v & done)
			return v >> 16;
	}
	return 0xffff;
}

/* From the receive address registers (SDM 13.4.62, loaded from the EEPROM
 * at reset) when valid, else from the EEPROM words 0-2 (false: none). */
static bool mac_from_card(struct e1000 *n, uint8_t mac[6])
{
	uint32_t lo = rd(n, RAL0), hi = rd(n, RAH0);

	if (hi & (1u << 31)) {		/* address valid */
		for (int i = 0; i < 4; i++)
			mac[i] = lo >> (8 * i);
		mac[4] = hi;
		mac[5] = hi >> 8;
	} else {
		for (int i = 0; i < 3; i++) {
			uint16_t w = eeprom_read(n, i);
			mac[2 * i] = w;
			mac[2 * i + 1] = w >> 8;
		}
	}
	/* a unicast address that is not zero, wherever it came from */
	return !(mac[0] & 1) && (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}

/* False for a blank EEPROM (all ones, zero, multicast): no MAC to use. */
static bool read_mac(struct e1000 *n)
{
	uint8_t *mac = n->nic.mac;

	if (!mac_from_card(n, mac))
		return false;
	wr(n, RAL0, mac[0] | mac[1] << 8 | mac[2] << 16 | (uint32_t)mac[3] << 24);
	wr(n, RAH0, mac[4] | mac[5] << 8 | 1u << 31);
	return true;
}

/* Map BAR 0, the registers (128 KiB on both models). */
static int map_regs(struct e1000 *n, const struct pci_dev *d)
{
	uint64_t size, bar = pci_bar_mem(d, 0, &size);

	if (!bar || size < 0x20000)
		return -EIO;
	n->regs = ioremap(bar, size);
	return n->regs ? 0 : -ENOMEM;
}

/* The NIC takes a ring length in multiples of 128 bytes (8 descriptors). */
_Static_assert(E1000_RX_DESC % 8 == 0 && E1000_TX_DESC % 8 == 0, "ring lengths");
#define RX_RING_BYTES	(E1000_RX_DESC * sizeof(struct e1000_rx_desc))
#define TX_RING_BYTES	(E1000_TX_DESC * sizeof(struct e1000_tx_desc))

/* Rings and buffers in contiguous frames reached through the direct map. */
static int alloc_rings(struct e1000 *n)
{
	size_t rx_pages = (E1000_RX_DESC * NIC_BUF) / 4096, tx_pages = (E1000_TX_DESC * NIC_BUF) / 4096;

	/* (sized from the descriptor counts: a ring of more than 256 used to
	 * overrun the one page it was given) */
	n->rx_ring_pa = frame_alloc_contig((RX_RING_BYTES + 4095) / 4096, 1);
	n->tx_ring_pa = frame_alloc_contig((TX_RING_BYTES + 4095) / 4096, 1);
	n->rx_buf_pa = frame_alloc_contig(rx_pages, 1);
	n->tx_buf_pa = frame_alloc_contig(tx_pages, 1);
	if (!n->rx_ring_pa || !n->tx_ring_pa || !n->rx_buf_pa || !n->tx_buf_pa)
		return -ENOMEM;
	n->rx = phys_to_virt(n->rx_ring_pa);
	n->tx = phys_to_virt(n->tx_ring_pa);
	n->rx_buf = phys_to_virt(n->rx_buf_pa);
	n->tx_buf = phys_to_virt(n->tx_buf_pa);
	memset(n->rx, 0, RX_RING_BYTES);
	memset(n->tx, 0, TX_RING_BYTES);
	return 0;
}

static void setup_rx(struct e1000 *n)
{
	for (int i = 0; i < E1000_RX_DESC; i++)
		n->rx[i] = (struct e1000_rx_desc){ .addr = n->rx_buf_pa + i * NIC_BUF };
	for (int i = 0; i < 128; i++)
		wr(n, MTA + 4 * i, 0);
	wr(n, RDBAL, (uint32_t)n->rx_ring_pa);
	wr(n, RDBAH, n->rx_ring_pa >> 32);
	wr(n, RDLEN, RX_RING_BYTES);
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

static void tx_kick(struct e1000 *n);

static void setup_tx(struct e1000 *n)
{
	for (int i = 0; i < E1000_TX_DESC; i++)
		n->tx[i] = (struct e1000_tx_desc){ .addr = n->tx_buf_pa + i * NIC_BUF,
						   .upper = TX_DD };
	wr(n, TDBAL, (uint32_t)n->tx_ring_pa);
	wr(n, TDBAH, n->tx_ring_pa >> 32);
	wr(n, TDLEN, TX_RING_BYTES);
	wr(n, TDH, 0);
	wr(n, TDT, 0);
	n->tx_tail = n->tx_clean = 0;
	wr(n, TIPG, 10 | 8 << 10 | 6 << 20);
	wr(n, TCTL, TCTL_EN | TCTL_PSP | 0x10 << 4 | 0x40 << 12);
	tx_put_context(n, 0, 0, 0);	/* legacy descriptors ignore it */
	tx_kick(n);
}

bool e1000_model_match(const struct pci_dev *d, const void *model)
{
	const struct e1000_model *m = model;

	return d->vendor == 0x8086 && d->device == m->device;
}

int e1000_model_read_mac(const struct pci_dev *d, const void *model, uint8_t mac[6])
{
	struct e1000 n = { .m = model };
	int err = map_regs(&n, d);

	if (err)
		return err;
	pci_enable_mem(d);		/* the registers only: no DMA yet */
	return mac_from_card(&n, mac) ? 0 : -ENOENT;
}

static void reset(struct e1000 *n)
{
	wr(n, IMC, 0xffffffff);
	wr(n, CTRL, rd(n, CTRL) | CTRL_RST);
	udelay(10000);
	wr(n, IMC, 0xffffffff);
	(void)rd(n, ICR);
	wr(n, CTRL, rd(n, CTRL) | CTRL_SLU);
}

static int start(struct e1000 *n, const struct pci_dev *d)
{
	int err = map_regs(n, d);

	if (err)
		return err;
	pci_enable_mem(d);	/* the registers; DMA once it has a MAC */
	reset(n);
	if (!read_mac(n))
		return -ENOENT;	/* no MAC of its own: ferry has no source of one */
	pci_enable_bus_master(d);
	if (alloc_rings(n))
		return -ENOMEM;
	setup_rx(n);
	setup_tx(n);
	wr(n, RXCSUM, RXCSUM_IPOFL | RXCSUM_TUOFL);
	return 0;
}

static const struct nic_ops e1000_ops;
static bool e1000_link_up(struct nic *nic);

int e1000_model_probe(const struct pci_dev *d, const void *model, struct nic **out)
{
	const struct e1000_model *m = model;
	struct e1000 *n = calloc(1, sizeof(*n));
	int err;

	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->m = m;
	n->nic = (struct nic){ .ops = &e1000_ops, .driver = m->driver, .model = m->model,
			       .pci = *d, .tx_csum = true, .tso = true,
			       .tx_slots = E1000_TX_DESC - 1 };	/* one stays empty */
	err = start(n, d);
	if (err) {
		free(n);	/* rings, if any, stay with the card: it may use them */
		return err;
	}
	pr_info("%s: %02x:%02x.%x MAC %02x:%02x:%02x:%02x:%02x:%02x, link %s", m->driver,
		d->bus, d->dev, d->fn, n->nic.mac[0], n->nic.mac[1], n->nic.mac[2],
		n->nic.mac[3], n->nic.mac[4], n->nic.mac[5],
		e1000_link_up(&n->nic) ? "up" : "down");
	*out = &n->nic;
	return 0;
}

static void e1000_irq_setup(struct nic *nic)
{
	struct e1000 *n = E(nic);

	wr(n, RDTR, 0);		/* no receive delay, no moderation: wake at once */
	wr(n, RADV, 0);
	wr(n, ITR, 0);		/* probe left every cause masked */
}

static void e1000_irq_mask(struct nic *nic)
{
	wr(E(nic), IMC, INT_WAKE);
}

static void e1000_irq_unmask(struct nic *nic)
{
	wr(E(nic), IMS, INT_WAKE);
}

static uint32_t e1000_irq_ack(struct nic *nic)
{
	return rd(E(nic), ICR);	/* reading clears the causes and drops the line */
}

static bool e1000_link_up(struct nic *nic)
{
	struct e1000 *n = E(nic);

	return n->regs && (rd(n, STATUS) & STATUS_LU);
}

static void tx_reclaim(struct e1000 *n)
{
	while (n->tx_clean != n->tx_tail && (n->tx[n->tx_clean].upper & TX_DD)) {
		n->tx_clean = (n->tx_clean + 1) % E1000_TX_DESC;
		n->nic.stats.tx_done++;
	}
}

static unsigned int tx_free(const struct e1000 *n)
{
	return (n->tx_clean + E1000_TX_DESC - n->tx_tail - 1) % E1000_TX_DESC;
}

static unsigned int e1000_tx_room(struct nic *nic)
{
	struct e1000 *n = E(nic);

	tx_reclaim(n);
	return tx_free(n);
}

static uint8_t *tx_slot_buf(const struct e1000 *n)
{
	return n->tx_buf + n->tx_tail * NIC_BUF;
}

static void *e1000_tx_frame(struct nic *nic)
{
	struct e1000 *n = E(nic);

	tx_reclaim(n);
	return tx_free(n) ? tx_slot_buf(n) : NULL;
}

/* Hand queued frames to the NIC: one register write for a burst. */
static void tx_kick(struct e1000 *n)
{
	if (!n->tx_unkicked)
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	wr(n, TDT, n->tx_tail);
	n->tx_unkicked = 0;
}

static void e1000_tx_kick(struct nic *nic)
{
	tx_kick(E(nic));
}

static int e1000_xmit(struct nic *nic, const void *frame, size_t len)
{
	struct e1000 *n = E(nic);
	bool csum = n->nic.tx_csum && nic_frame_is_tcp4(frame, len);
	struct e1000_tx_desc *d;

	if (len > NIC_BUF || len < 14)
		return -EINVAL;
	tx_reclaim(n);
	if (!tx_free(n)) {
		tx_kick(n);
		n->nic.stats.tx_busy++;
		return -EAGAIN;
	}
	d = &n->tx[n->tx_tail];
	d->addr = n->tx_buf_pa + n->tx_tail * NIC_BUF;
	if (frame != tx_slot_buf(n))	/* not built in place */
		memcpy(tx_slot_buf(n), frame, len);
	d->lower = (uint32_t)len | TX_CMD_EOP | TX_CMD_IFCS | TX_CMD_RS;
	d->upper = 0;
	if (csum) {
		d->lower |= TX_CMD_DEXT | TX_DTYP_D;
		d->upper = TX_POPTS_TXSM;
		n->nic.stats.tx_csum++;
	}
	n->tx_tail = (n->tx_tail + 1) % E1000_TX_DESC;
	if (++n->tx_unkicked >= 32)
		tx_kick(n);
	n->nic.stats.tx_frames++;
	n->nic.stats.tx_bytes += len;
	return 0;
}

/* Checksums the NIC verified (SDM 3.2.9); none when it says "ignore". */
static unsigned int rx_flags(const struct e1000_rx_desc *d)
{
	unsigned int f = 0;

	if (d->status & RX_IXSM)
		return 0;
	if ((d->status & RX_IPCS) && !(d->errors & RX_ERR_IPE))
		f |= NIC_RX_IP_CSUM_OK;
	if ((d->status & RX_TCPCS) && !(d->errors & RX_ERR_TCPE))
		f |= NIC_RX_TCP_CSUM_OK;
	return f;
}

/* One extended data descriptor for len bytes copied from src (unless
 * src is already the slot's buffer). */
static void tx_put_data(struct e1000 *n, const uint8_t *src, size_t len,
			uint32_t cmd, uint32_t popts)
{
	struct e1000_tx_desc *d = &n->tx[n->tx_tail];

	d->addr = n->tx_buf_pa + n->tx_tail * NIC_BUF;
	if (src != tx_slot_buf(n))
		memcpy(tx_slot_buf(n), src, len);
	d->lower = (uint32_t)len | TX_CMD_DEXT | TX_DTYP_D | TX_CMD_IFCS | TX_CMD_RS | cmd;
	d->upper = popts;
	n->tx_tail = (n->tx_tail + 1) % E1000_TX_DESC;
	n->tx_unkicked++;
}

static int e1000_xmit_tso(struct nic *nic, const uint8_t *hdr, size_t hlen,
			  const struct nic_iov *iov, unsigned int niov, unsigned int mss)
{
	struct e1000 *n = E(nic);
	size_t total = nic_iov_len(iov, niov), segs;
	struct nic_iov_cur cur = { .iov = iov, .n = niov };
	uint8_t tmp[256];

	if (!n->nic.tso || hlen > 255 || !total || !mss || hlen + mss > NIC_BUF ||
	    !nic_frame_is_tcp4(hdr, hlen))
		return -EINVAL;
	tx_reclaim(n);
	/* the context, the headers, the payload a buffer at a time */
	if (tx_free(n) < 2 + (total + NIC_BUF - 1) / NIC_BUF) {
		tx_kick(n);
		n->nic.stats.tx_busy++;
		return -EAGAIN;
	}
	memcpy(tmp, hdr, hlen);		/* hdr may be the next slot's buffer */
	tx_put_context(n, (uint32_t)total, (uint32_t)hlen, mss);
	tx_put_data(n, tmp, hlen, TX_CMD_TSE, TX_POPTS_IXSM | TX_POPTS_TXSM);
	for (size_t off = 0; off < total;) {
		size_t k = nic_iov_copy(&cur, tx_slot_buf(n), NIC_BUF);

		off += k;
		tx_put_data(n, tx_slot_buf(n), k, TX_CMD_TSE | (off == total ? TX_CMD_EOP : 0),
			    TX_POPTS_IXSM | TX_POPTS_TXSM);
	}
	segs = (total + mss - 1) / mss;
	n->nic.stats.tx_tso++;
	n->nic.stats.tx_frames += segs;
	n->nic.stats.tx_bytes += total + hlen * segs;
	if (n->tx_unkicked >= 32)
		tx_kick(n);
	return 0;
}

static int e1000_poll(struct nic *nic, nic_rx_fn rx, void *ctx, int budget)
{
	struct e1000 *n = E(nic);
	int done = 0, last = -1;

	tx_kick(n);
	while (done < budget) {
		struct e1000_rx_desc *d = &n->rx[n->rx_next];
		if (!(d->status & RX_DD))
			break;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		/* a bad checksum is the stack's to count: it checks again.  A
		 * frame spread over buffers (no EOP) is dropped whole: its last
		 * piece too, which alone would pass for a frame */
		bool tail = n->rx_discarding;

		n->rx_discarding = !(d->status & RX_EOP);
		if (tail || !(d->status & RX_EOP) ||
		    (d->errors & ~(RX_ERR_IPE | RX_ERR_TCPE)) || d->length > NIC_BUF) {
			n->nic.stats.rx_errors++;	/* bad, or spread over buffers: drop */
		} else {
			unsigned int flags = rx_flags(d);

			n->nic.stats.rx_frames++;
			n->nic.stats.rx_bytes += d->length;
			n->nic.stats.rx_csum += flags != 0;
			rx(ctx, n->rx_buf + n->rx_next * NIC_BUF, d->length, flags);
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
		n->nic.stats.rx_missed += rd(n, MPC);	/* clears on read */
	return done;
}

static void e1000_set_promisc(struct nic *nic, bool on)
{
	struct e1000 *n = E(nic);
	uint32_t rctl = rd(n, RCTL) & ~(RCTL_UPE | RCTL_MPE);

	wr(n, RCTL, rctl | (on ? RCTL_UPE | RCTL_MPE : 0));
}

static const struct nic_ops e1000_ops = {
	.xmit = e1000_xmit,
	.tx_frame = e1000_tx_frame,
	.xmit_tso = e1000_xmit_tso,
	.tx_kick = e1000_tx_kick,
	.tx_room = e1000_tx_room,
	.poll = e1000_poll,
	.link_up = e1000_link_up,
	.set_promisc = e1000_set_promisc,
	.irq_setup = e1000_irq_setup,
	.irq_mask = e1000_irq_mask,
	.irq_unmask = e1000_irq_unmask,
	.irq_ack = e1000_irq_ack,
};

/* The 82540EM: EERD done in bit 4, word address in bits 15:8 (SDM 13.4.4). */
static const struct e1000_model m82540em = {
	.driver = "e1000", .model = "82540EM", .device = 0x100e,
	.eerd_done_bit = 4, .eerd_addr_shift = 8,
};

const struct nic_driver e1000_driver = {
	.name = "e1000", .arg = &m82540em, .match = e1000_model_match,
	.read_mac = e1000_model_read_mac, .probe = e1000_model_probe,
};
