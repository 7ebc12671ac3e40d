/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "vqhostile": a virtio-net driver just good enough to
 * hand the device hostile virtqueues, one case at a time:
 *   TG vq TRY <case>
 *   TG vq RESULT <case> queue=rx|tx used=U status=0x.. isr=0x.. probe_used=P
 *                [enabled=0|1]
 *   vqhostile [only=CASE,...] [skip=CASE,...]
 * It finds the modern virtio-net function (1af4:1041) on PCI bus 0 by
 * configuration mechanism #1, walks its vendor capabilities (Virtio 1.1,
 * 4.1.4: common, notify, ISR, device configuration), turns on memory
 * decoding and bus mastering, and for each case resets the device, does
 * the status handshake (ACKNOWLEDGE, DRIVER, features with VERSION_1,
 * FEATURES_OK, DRIVER_OK), sets up an 8-entry receive and transmit queue
 * in its own RAM and posts the case's descriptors on the transmit queue
 * (whose doorbell makes the device walk them at once).  It reports what
 * a driver can see: the used index the device published, the device
 * status (DEVICE_NEEDS_RESET, 0x40, when a queue broke), the ISR (read,
 * which clears it: 0x1 used buffers, 0x2 configuration change), and then
 * posts one good frame on the transmit queue: probe_used says whether
 * that queue still works.  Paging stays off: the BAR lies in the 32-bit
 * hole below 4 GiB, reached at its physical address.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define PCI_CONF_ADDR 0xCF8
#define PCI_CONF_DATA 0xCFC
#define PCI_COMMAND 0x04
#define PCI_CMD_MEM 0x0002
#define PCI_CMD_MASTER 0x0004
#define PCI_STATUS_CAPS (0x0010u << 16) /* in the dword at 0x04 */
#define PCI_BAR0 0x10
#define PCI_CAP_PTR 0x34
#define PCI_CAP_VNDR 0x09
#define VIRTIO_VENDOR 0x1AF4
#define VIRTIO_NET_MODERN 0x1041

/* Vendor capability types and the common configuration's fields
 * (Virtio 1.1, 4.1.4 and 4.1.4.3). */
#define CAP_COMMON 1
#define CAP_NOTIFY 2
#define CAP_ISR 3
#define CAP_DEVICE 4
#define CC_DFSELECT 0x00
#define CC_DF 0x04
#define CC_GFSELECT 0x08
#define CC_GF 0x0C
#define CC_STATUS 0x14
#define CC_Q_SELECT 0x16
#define CC_Q_SIZE 0x18
#define CC_Q_ENABLE 0x1C
#define CC_Q_NOFF 0x1E
#define CC_Q_DESC 0x20
#define CC_Q_AVAIL 0x28
#define CC_Q_USED 0x30

#define S_ACKNOWLEDGE 0x01
#define S_DRIVER 0x02
#define S_DRIVER_OK 0x04
#define S_FEATURES_OK 0x08
#define F_MAC (1ull << 5)
#define F_INDIRECT (1ull << 28)
#define F_VERSION_1 (1ull << 32)

#define RXQ 0
#define TXQ 1
#define QSIZE 8
#define PROBE_DESC (QSIZE - 1) /* the good frame's descriptor */
#define D_NEXT 1
#define D_WRITE 2
#define D_INDIRECT 4
#define NET_HDR 12             /* virtio_net_hdr with num_buffers (1.x) */
#define FRAME 60               /* a minimum Ethernet frame, no FCS */
#define ETHERTYPE_LOCAL 0x88B5 /* IEEE 802 local experimental */
#define SETTLE_SPINS (1u << 20)
#define RX_BUF 2048
#define RX_WAIT_S 20 /* rx_goes_on's default wait for a frame */

struct vdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

/* One split virtqueue (Virtio 1.1, 2.6): 16-, 2- and 4-byte alignment
 * (i386 aligns a uint64_t to 4 only: the table asks for its 16). */
struct vring {
	struct vdesc desc[QSIZE] __attribute__((aligned(16)));
	struct {
		uint16_t flags, idx, ring[QSIZE];
	} avail;
	struct {
		uint16_t flags, idx;
		struct {
			uint32_t id, len;
		} ring[QSIZE];
	} used __attribute__((aligned(4)));
};

static struct vring rings[2] __attribute__((aligned(TG_PAGE)));
static struct vdesc table[4] __attribute__((aligned(16))); /* indirect */
static uint8_t frame[NET_HDR + FRAME];
static uint8_t rxbuf[2][RX_BUF];

/* Where the device is: BAR addresses of its structures. */
static struct {
	uint32_t pci;	/* CONFIG_ADDRESS of the function, register 0 */
	uint32_t bar[6];
	uint32_t common, notify, notify_mult, isr, device;
	uint16_t notify_off[2];
	uint8_t mac[6];
} dev;

static uint16_t tx_avail; /* the driver's next available index */

/* ---- PCI configuration mechanism #1 ---------------------------------- */

static uint32_t cfg_read32(uint32_t off)
{
	outl(PCI_CONF_ADDR, dev.pci | (off & 0xFC));
	return inl(PCI_CONF_DATA);
}

static uint8_t cfg_read8(uint32_t off)
{
	return (uint8_t)(cfg_read32(off) >> (8 * (off & 3)));
}

static void cfg_write16(uint32_t off, uint16_t v)
{
	outl(PCI_CONF_ADDR, dev.pci | (off & 0xFC));
	outw(PCI_CONF_DATA + (off & 2), v);
}

/* ---- MMIO: one plain MOV each, which any MMIO emulator decodes ------- */

static uint8_t rd8(uint32_t a)
{
	uint8_t v;

	__asm__ volatile("movb (%1), %0" : "=q"(v) : "r"(a) : "memory");
	return v;
}

static uint16_t rd16(uint32_t a)
{
	uint16_t v;

	__asm__ volatile("movw (%1), %0" : "=r"(v) : "r"(a) : "memory");
	return v;
}

static uint32_t rd32(uint32_t a)
{
	uint32_t v;

	__asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(a) : "memory");
	return v;
}

static void wr8(uint32_t a, uint8_t v)
{
	__asm__ volatile("movb %0, (%1)" : : "q"(v), "r"(a) : "memory");
}

static void wr16(uint32_t a, uint16_t v)
{
	__asm__ volatile("movw %0, (%1)" : : "r"(v), "r"(a) : "memory");
}

static void wr32(uint32_t a, uint32_t v)
{
	__asm__ volatile("movl %0, (%1)" : : "r"(v), "r"(a) : "memory");
}

/* A 64-bit field as two dwords, low first (4.1.3.1 allows it). */
static void wr64(uint32_t a, uint64_t v)
{
	wr32(a, (uint32_t)v);
	wr32(a + 4, (uint32_t)(v >> 32));
}

/* ---- finding the function -------------------------------------------- */

static bool find_function(void)
{
	for (uint32_t slot = 0; slot < 32; slot++) {
		dev.pci = 0x80000000u | slot << 11;
		if (cfg_read32(0) == (VIRTIO_NET_MODERN << 16 | VIRTIO_VENDOR))
			return true;
	}
	return false;
}

/* The BAR address plus offset of a vendor capability, or 0 when its BAR
 * is not a memory BAR below 4 GiB (ferry's is 32-bit; QEMU's, for a run
 * on bare QEMU, 64-bit). */
static uint32_t cap_addr(uint8_t cap)
{
	uint8_t bar = cfg_read8(cap + 4u);
	uint32_t b;

	if (bar >= 6)
		return 0;
	b = dev.bar[bar];
	if ((b & 1) || ((b & 6) == 4 && (bar == 5 || dev.bar[bar + 1])))
		return 0;
	return (b & ~0xFu) + cfg_read32(cap + 8u);
}

static void walk_caps(void)
{
	uint8_t cap = 0;
	int n = 0;

	if (cfg_read32(PCI_COMMAND) & PCI_STATUS_CAPS)
		cap = cfg_read8(PCI_CAP_PTR) & 0xFC;
	for (; cap && n < 48; cap = cfg_read8(cap + 1u) & 0xFC, n++) {
		if (cfg_read8(cap) != PCI_CAP_VNDR)
			continue;
		switch (cfg_read8(cap + 3u)) {
		case CAP_COMMON: dev.common = cap_addr(cap); break;
		case CAP_ISR: dev.isr = cap_addr(cap); break;
		case CAP_DEVICE: dev.device = cap_addr(cap); break;
		case CAP_NOTIFY:
			dev.notify = cap_addr(cap);
			dev.notify_mult = cfg_read32(cap + 16u);
			break;
		}
	}
}

static bool probe_device(void)
{
	if (!find_function()) {
		tg_printf("TG FAIL vq no virtio-net function (1af4:1041) on bus 0\n");
		return false;
	}
	for (int i = 0; i < 6; i++)
		dev.bar[i] = cfg_read32(PCI_BAR0 + 4u * i);
	walk_caps();
	if (!dev.common || !dev.notify || !dev.isr || !dev.device) {
		tg_printf("TG FAIL vq capabilities common=0x%x notify=0x%x isr=0x%x device=0x%x\n",
			  dev.common, dev.notify, dev.isr, dev.device);
		return false;
	}
	/* memory decoding for the BAR, bus mastering for the rings */
	cfg_write16(PCI_COMMAND, (uint16_t)cfg_read32(PCI_COMMAND) | PCI_CMD_MEM | PCI_CMD_MASTER);
	for (int i = 0; i < 6; i++)
		dev.mac[i] = rd8(dev.device + (uint32_t)i);
	tg_printf("TG vq found pci=00:%02x.0 bar0=0x%x common=0x%x notify=0x%x mult=%u isr=0x%x "
		  "device=0x%x mac=%02x:%02x:%02x:%02x:%02x:%02x\n", (dev.pci >> 11) & 31,
		  dev.bar[0], dev.common, dev.notify, dev.notify_mult, dev.isr, dev.device,
		  dev.mac[0], dev.mac[1], dev.mac[2], dev.mac[3], dev.mac[4], dev.mac[5]);
	return true;
}

/* ---- the device ------------------------------------------------------ */

static uint8_t status(void)
{
	return rd8(dev.common + CC_STATUS);
}

static void add_status(uint8_t bits)
{
	wr8(dev.common + CC_STATUS, status() | bits);
}

/* Writing 0 resets; the driver waits until it reads back 0 (4.1.4.3.2). */
static bool reset(void)
{
	wr8(dev.common + CC_STATUS, 0);
	for (int i = 0; i < 1000; i++)
		if (!status())
			return true;
	return false;
}

static uint64_t device_features(void)
{
	uint64_t f;

	wr32(dev.common + CC_DFSELECT, 0);
	f = rd32(dev.common + CC_DF);
	wr32(dev.common + CC_DFSELECT, 1);
	return f | (uint64_t)rd32(dev.common + CC_DF) << 32;
}

static bool negotiate(uint64_t want)
{
	if ((device_features() & want) != want)
		return false;
	wr32(dev.common + CC_GFSELECT, 0);
	wr32(dev.common + CC_GF, (uint32_t)want);
	wr32(dev.common + CC_GFSELECT, 1);
	wr32(dev.common + CC_GF, (uint32_t)(want >> 32));
	add_status(S_FEATURES_OK);
	return status() & S_FEATURES_OK; /* the device may refuse (3.1.1) */
}

/* Where a queue's rings go, and how big it is. */
struct qlayout {
	uint16_t size;
	uint64_t desc, avail, used;
};

static struct qlayout own_rings(int q)
{
	return (struct qlayout){ QSIZE, (uint32_t)rings[q].desc, (uint32_t)&rings[q].avail,
				 (uint32_t)&rings[q].used };
}

/* Returns what queue_enable reads back: 0 when the device refused it. */
static uint16_t setup_queue(uint16_t q, const struct qlayout *l)
{
	wr16(dev.common + CC_Q_SELECT, q);
	wr16(dev.common + CC_Q_SIZE, l->size);
	wr64(dev.common + CC_Q_DESC, l->desc);
	wr64(dev.common + CC_Q_AVAIL, l->avail);
	wr64(dev.common + CC_Q_USED, l->used);
	dev.notify_off[q] = rd16(dev.common + CC_Q_NOFF);
	wr16(dev.common + CC_Q_ENABLE, 1);
	return rd16(dev.common + CC_Q_ENABLE);
}

static void kick(uint16_t q)
{
	wr16(dev.notify + dev.notify_off[q] * dev.notify_mult, q);
}

static uint16_t used_idx(int q)
{
	return *(volatile uint16_t *)&rings[q].used.idx;
}

/* Under ferry the device has handled a doorbell when the write returns;
 * QEMU's transmits later, from its main loop.  Wait a little for the used
 * index to move from was (reading RAM only: no exits, no PAUSE, which a
 * hypervisor may count as spinning). */
static uint16_t settle(int q, uint16_t was)
{
	for (uint32_t i = 0; i < SETTLE_SPINS && used_idx(q) == was; i++)
		;
	return used_idx(q);
}

/* Offer head on the transmit queue: the ring entry, then the index. */
static void post(uint16_t head)
{
	rings[TXQ].avail.ring[tx_avail % QSIZE] = head;
	__asm__ volatile("" : : : "memory"); /* x86 keeps stores in order */
	*(volatile uint16_t *)&rings[TXQ].avail.idx = ++tx_avail;
}

/* A broadcast of the local experimental type from the NIC's own MAC
 * (the switch drops frames with another source). */
static void build_frame(void)
{
	uint8_t *f = frame + NET_HDR;

	memset(frame, 0, sizeof(frame));
	memset(f, 0xFF, 6);
	memcpy(f + 6, dev.mac, 6);
	f[12] = ETHERTYPE_LOCAL >> 8;
	f[13] = ETHERTYPE_LOCAL & 0xFF;
	memcpy(f + 14, "TG vq probe", 11);
}

static void good_desc(struct vdesc *d)
{
	*d = (struct vdesc){ (uint32_t)frame, sizeof(frame), 0, 0 };
}

/* ---- the cases ---------------------------------------------------------- */

/* Each case may change the receive queue's layout (before enabling) and
 * the features, and writes descriptors into the transmit ring (post()
 * them); NULL for none. */
struct vq_case {
	const char *name;
	uint64_t features;	/* besides VERSION_1 and MAC */
	void (*rx)(struct qlayout *l);
	void (*tx)(void);
	bool rx_wait;		/* then wait for a frame on the receive queue */
};

static uint32_t past_ram(void)
{
	return tg_boot.ram_end;
}

/* 0 -> 1 -> 0 ...: the device may walk at most the queue's size. */
static void tx_loop(void)
{
	struct vdesc *d = rings[TXQ].desc;

	good_desc(&d[0]);
	good_desc(&d[1]);
	d[0].flags = d[1].flags = D_NEXT;
	d[0].next = 1;
	d[1].next = 0;
	post(0);
}

static void tx_next_range(void)
{
	good_desc(&rings[TXQ].desc[0]);
	rings[TXQ].desc[0].flags = D_NEXT;
	rings[TXQ].desc[0].next = QSIZE + 100;
	post(0);
}

static void tx_head_range(void)
{
	post(0x1234);
}

/* The whole frame past the end of RAM. */
static void tx_buf_past_ram(void)
{
	rings[TXQ].desc[0] = (struct vdesc){ past_ram(), sizeof(frame), 0, 0 };
	post(0);
}

/* Starts in RAM, ends past it. */
static void tx_buf_straddle(void)
{
	rings[TXQ].desc[0] = (struct vdesc){ past_ram() - 16, sizeof(frame), 0, 0 };
	post(0);
}

/* The device's own registers as a buffer. */
static void tx_buf_mmio(void)
{
	rings[TXQ].desc[0] = (struct vdesc){ dev.common, sizeof(frame), 0, 0 };
	post(0);
}

/* addr + len wraps past 2^64. */
static void tx_buf_wrap(void)
{
	rings[TXQ].desc[0] = (struct vdesc){ 0xFFFFFFFFFFFFFFC0ull, 0x80, 0, 0 };
	post(0);
}

/* A length far past RAM at an address in it: too big for a frame, so
 * the device drops it unread and returns it; the queue goes on. */
static void tx_len_huge(void)
{
	rings[TXQ].desc[0] = (struct vdesc){ (uint32_t)frame, 0xFFFFFF00u, 0, 0 };
	post(0);
}

/* A device-writable buffer on the transmit queue. */
static void tx_dir(void)
{
	good_desc(&rings[TXQ].desc[0]);
	rings[TXQ].desc[0].flags = D_WRITE;
	post(0);
}

/* Readable after writable (2.6.4.2). */
static void tx_order(void)
{
	struct vdesc *d = rings[TXQ].desc;

	good_desc(&d[0]);
	good_desc(&d[1]);
	d[0].flags = D_WRITE | D_NEXT;
	d[0].next = 1;
	post(0);
}

/* Descriptor 0 points at table[0..nr). */
static void post_table(uint32_t nr_bytes, uint64_t at)
{
	rings[TXQ].desc[0] = (struct vdesc){ at, nr_bytes, D_INDIRECT, 0 };
	post(0);
}

static void tx_ind_loop(void)
{
	good_desc(&table[0]);
	good_desc(&table[1]);
	table[0].flags = table[1].flags = D_NEXT;
	table[0].next = 1;
	table[1].next = 0;
	post_table(2 * sizeof(struct vdesc), (uint32_t)table);
}

static void tx_ind_nested(void)
{
	table[0] = (struct vdesc){ (uint32_t)&table[2], 2 * sizeof(struct vdesc), D_INDIRECT, 0 };
	good_desc(&table[2]);
	good_desc(&table[3]);
	post_table(sizeof(struct vdesc), (uint32_t)table);
}

static void tx_ind_badlen(void)
{
	good_desc(&table[0]);
	post_table(sizeof(struct vdesc) + 8, (uint32_t)table);
}

static void tx_ind_past_ram(void)
{
	post_table(2 * sizeof(struct vdesc), past_ram());
}

static void tx_ind_next(void)
{
	good_desc(&table[0]);
	table[0].flags = D_NEXT;
	table[0].next = 5;
	post_table(2 * sizeof(struct vdesc), (uint32_t)table);
}

/* A good table, but the driver did not take INDIRECT_DESC. */
static void tx_ind_unnegotiated(void)
{
	good_desc(&table[0]);
	post_table(sizeof(struct vdesc), (uint32_t)table);
}

/* Receive buffers posted, then the transmit loop: the receive queue must
 * still take a frame (the test has ferry broadcast one: an ARP request). */
static void tx_loop_rx_posted(void)
{
	for (uint16_t i = 0; i < 2; i++) {
		rings[RXQ].desc[i] = (struct vdesc){ (uint32_t)rxbuf[i], RX_BUF, D_WRITE, 0 };
		rings[RXQ].avail.ring[i] = i;
	}
	__asm__ volatile("" : : : "memory");
	*(volatile uint16_t *)&rings[RXQ].avail.idx = 2;
	kick(RXQ);
	tx_loop();
}

/* The available index a long way ahead of what was offered. */
static void tx_avail_jump(void)
{
	good_desc(&rings[TXQ].desc[0]);
	rings[TXQ].avail.ring[0] = 0;
	tx_avail = 0x8000;
	*(volatile uint16_t *)&rings[TXQ].avail.idx = tx_avail;
}

/* The receive queue's rings past RAM, a size that is no power of two, a
 * descriptor table not on 16 bytes: the device refuses to enable it;
 * transmit must still work. */
static void rx_ring_past_ram(struct qlayout *l)
{
	l->desc = past_ram();
}

static void rx_size(struct qlayout *l)
{
	l->size = 3;
}

static void rx_align(struct qlayout *l)
{
	l->desc += 8;
}

static const struct vq_case cases[] = {
	{ "rx_ring_past_ram", F_INDIRECT, rx_ring_past_ram, NULL, false },
	{ "rx_size", F_INDIRECT, rx_size, NULL, false },
	{ "rx_align", F_INDIRECT, rx_align, NULL, false },
	{ "loop", F_INDIRECT, NULL, tx_loop, false },
	{ "next_range", F_INDIRECT, NULL, tx_next_range, false },
	{ "head_range", F_INDIRECT, NULL, tx_head_range, false },
	{ "buf_past_ram", F_INDIRECT, NULL, tx_buf_past_ram, false },
	{ "buf_straddle", F_INDIRECT, NULL, tx_buf_straddle, false },
	{ "buf_mmio", F_INDIRECT, NULL, tx_buf_mmio, false },
	{ "buf_wrap", F_INDIRECT, NULL, tx_buf_wrap, false },
	{ "len_huge", F_INDIRECT, NULL, tx_len_huge, false },
	{ "dir", F_INDIRECT, NULL, tx_dir, false },
	{ "order", F_INDIRECT, NULL, tx_order, false },
	{ "ind_loop", F_INDIRECT, NULL, tx_ind_loop, false },
	{ "ind_nested", F_INDIRECT, NULL, tx_ind_nested, false },
	{ "ind_badlen", F_INDIRECT, NULL, tx_ind_badlen, false },
	{ "ind_past_ram", F_INDIRECT, NULL, tx_ind_past_ram, false },
	{ "ind_next", F_INDIRECT, NULL, tx_ind_next, false },
	{ "ind_unnegotiated", 0, NULL, tx_ind_unnegotiated, false },
	{ "rx_goes_on", F_INDIRECT, NULL, tx_loop_rx_posted, true },
	{ "avail_jump", F_INDIRECT, NULL, tx_avail_jump, false },
};

/* Reset, handshake, both queues; false (said) if the device refused. */
static bool bring_up(const struct vq_case *c, uint16_t *rx_enabled)
{
	struct qlayout rx = own_rings(RXQ), tx = own_rings(TXQ);

	memset(rings, 0, sizeof(rings));
	memset(table, 0, sizeof(table));
	tx_avail = 0;
	if (!reset()) {
		tg_printf("TG FAIL vq %s: status not 0 after reset\n", c->name);
		return false;
	}
	add_status(S_ACKNOWLEDGE);
	add_status(S_DRIVER);
	if (!negotiate(F_VERSION_1 | F_MAC | c->features)) {
		tg_printf("TG FAIL vq %s: features refused\n", c->name);
		return false;
	}
	if (c->rx)
		c->rx(&rx);
	*rx_enabled = setup_queue(RXQ, &rx);
	if (!setup_queue(TXQ, &tx)) {
		tg_printf("TG FAIL vq %s: tx queue refused\n", c->name);
		return false;
	}
	add_status(S_DRIVER_OK);
	rd8(dev.isr); /* clear what the bring-up raised */
	return true;
}

/* What the receive queue's first used entry says. */
struct rx_seen {
	uint16_t used;
	uint32_t len, type;
};

/* Up to rxwait= seconds for the receive queue's first used entry: its
 * length and the frame's EtherType (after the 12-byte header). */
static struct rx_seen wait_rx(void)
{
	uint32_t start = tg_ticks, limit = tg_opt_u32("rxwait", RX_WAIT_S) * TG_HZ, id;
	struct rx_seen r = { 0, 0, 0 };

	tg_printf("TG vq waiting for a frame\n");
	while (!used_idx(RXQ) && tg_ticks - start < limit)
		tg_wait_tick_edge();
	r.used = used_idx(RXQ);
	id = rings[RXQ].used.ring[0].id;
	if (r.used && id < 2) {
		r.len = rings[RXQ].used.ring[0].len;
		r.type = (uint32_t)rxbuf[id][NET_HDR + 12] << 8 | rxbuf[id][NET_HDR + 13];
	}
	return r;
}

static void run_case(const struct vq_case *c)
{
	uint16_t rx_enabled = 0, used, probe_used;
	struct rx_seen rx = { 0, 0, 0 };
	uint8_t st, isr;

	tg_printf("TG vq TRY %s\n", c->name);
	if (!bring_up(c, &rx_enabled))
		return;
	if (c->tx) {
		c->tx();
		kick(TXQ);
	}
	used = settle(TXQ, 0);
	st = status();
	isr = rd8(dev.isr);
	good_desc(&rings[TXQ].desc[PROBE_DESC]); /* does the transmit queue still work? */
	post(PROBE_DESC);
	kick(TXQ);
	probe_used = settle(TXQ, used);
	if (c->rx_wait)
		rx = wait_rx();
	tg_printf("TG vq RESULT %s queue=%s used=%u status=0x%x isr=0x%x probe_used=%u", c->name,
		  c->rx ? "rx" : "tx", used, st, isr, probe_used);
	if (c->rx)
		tg_printf(" enabled=%u", rx_enabled);
	if (c->rx_wait)
		tg_printf(" rx_used=%u rx_len=%u rx_type=0x%04x", rx.used, rx.len, rx.type);
	tg_printf("\n");
}

static bool selected(const struct vq_case *c)
{
	const char *only = tg_opt_str("only"), *skip = tg_opt_str("skip");

	return (!only || tg_list_has(only, c->name)) && !tg_list_has(skip, c->name);
}

void mode_vqhostile(void)
{
	uint32_t tried = 0;

	if (!probe_device())
		tg_poweroff();
	build_frame();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!selected(&cases[i]))
			continue;
		run_case(&cases[i]);
		tried++;
	}
	/* leave the device reset: nothing of this guest's is in flight */
	reset();
	tg_printf("TG vq done tried=%u\n", tried);
	tg_poweroff();
}

/* ---- netflood --------------------------------------------------------- */

/*
 * testguest mode "netflood": the same driver, sending full-sized frames to
 * the wire as fast as the device takes them, for secs= seconds (10), to
 * the MAC 02:00:00:00:00:99 (no one's: the switch sends unknown unicast
 * to the wire, and a bridge floods it).  Every second
 *   TG flood sent=N
 * (frames the device has taken so far: its used index, counted past
 * wraps), and at the end TG flood done sent=N.  A device that stops
 * taking them for good leaves N where it was.
 */
#define FLOOD_LEN 1514
static uint8_t flood_frame[NET_HDR + FLOOD_LEN];

void mode_netflood(void)
{
	static const struct vq_case c = { "flood", 0, NULL, NULL, false };
	uint32_t start, secs = tg_opt_u32("secs", 10), sent = 0, next_say = TG_HZ;
	uint16_t rx_enabled, used = 0, now;
	uint8_t *f = flood_frame + NET_HDR;

	if (!probe_device() || !bring_up(&c, &rx_enabled))
		tg_poweroff();
	memset(flood_frame, 0, sizeof(flood_frame));
	memcpy(f, "\x02\x00\x00\x00\x00\x99", 6);
	memcpy(f + 6, dev.mac, 6);
	f[12] = ETHERTYPE_LOCAL >> 8;
	f[13] = ETHERTYPE_LOCAL & 0xFF;
	memcpy(f + 14, "TG flood", 8);
	for (int i = 0; i < QSIZE; i++)
		rings[TXQ].desc[i] = (struct vdesc){ (uint32_t)flood_frame, sizeof(flood_frame), 0, 0 };
	tg_printf("TG flood start secs=%u\n", secs);
	start = tg_ticks;
	while (tg_ticks - start < secs * TG_HZ) {
		now = used_idx(TXQ);
		sent += (uint16_t)(now - used);
		used = now;
		/* every descriptor the device gave back goes again */
		if ((uint16_t)(tx_avail - used) < QSIZE) {
			while ((uint16_t)(tx_avail - used) < QSIZE)
				post((uint16_t)(tx_avail % QSIZE));
			kick(TXQ);
		}
		if (tg_ticks - start >= next_say) {
			tg_printf("TG flood sent=%u\n", sent);
			next_say += TG_HZ;
		}
	}
	sent += (uint16_t)(used_idx(TXQ) - used);
	reset();
	tg_printf("TG flood done sent=%u\n", sent);
	tg_poweroff();
}

/* ---- netbeat ---------------------------------------------------------- */

/*
 * testguest mode "netbeat": the same driver, sending one UDP datagram
 * every=MS milliseconds (1) to to=IP:port (7448), from from=IP (0.0.0.0),
 * as an Ethernet broadcast (the guest knows no ARP), for secs= seconds
 * (0: for ever).  The PIT runs at 1 kHz and the guest halts between
 * beats.  The payload is "TG beat " and two big-endian 32-bit words: the
 * beat's number (from 1) and the guest's milliseconds since the start by
 * its TSC (measured against the PIT first), which runs on across a
 * migration's pause where the PIT's ticks do not, so a receiver sees gaps,
 * losses, repeats and the pause.  It prints nothing while it beats (a
 * line on the UART takes milliseconds: a gap in the beats), and with
 * secs= at the end TG beat done sent=N skipped=K.  A datagram the ring
 * has no room for (the device took none of the last 8) is skipped.
 */
#define BEAT_HZ 1000u
#define BEAT_PORT 7448
#define BEAT_PAYLOAD 16
#define BEAT_IP 20
#define BEAT_UDP 8
#define BEAT_LEN (14 + BEAT_IP + BEAT_UDP + BEAT_PAYLOAD)
static uint8_t beat_frame[QSIZE][NET_HDR + BEAT_LEN];

static void put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

/* a.b.c.d into host order; false if it is not one. */
static bool parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		uint32_t part = 0, digits = 0;

		for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
			part = part * 10 + (uint32_t)(*s - '0');
		if (!digits || part > 255 || *s != (i < 3 ? '.' : 0))
			return false;
		v = v << 8 | part;
		if (i < 3)
			s++;
	}
	*ip = v;
	return true;
}

static uint32_t opt_ip(const char *key, uint32_t def)
{
	const char *v = tg_opt_str(key);
	uint32_t ip;

	if (!v)
		return def;
	if (!parse_ip(v, &ip)) {
		tg_printf("TG WARN bad option %s=%s\n", key, v);
		return def;
	}
	return ip;
}

/* The IPv4 header's checksum (RFC 791), over its 20 bytes. */
static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < BEAT_IP; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static void build_beat(uint8_t *b, uint32_t from, uint32_t to, uint32_t port, uint32_t seq,
		       uint32_t ms)
{
	uint8_t *f = b + NET_HDR, *ip = f + 14, *udp = ip + BEAT_IP, *pl = udp + BEAT_UDP;

	memset(b, 0, NET_HDR + BEAT_LEN);
	memset(f, 0xFF, 6);
	memcpy(f + 6, dev.mac, 6);
	put_be16(f + 12, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, BEAT_IP + BEAT_UDP + BEAT_PAYLOAD);
	put_be16(ip + 4, seq);
	put_be16(ip + 6, 0x4000); /* don't fragment */
	ip[8] = 64;
	ip[9] = 17;
	put_be32(ip + 12, from);
	put_be32(ip + 16, to);
	put_be16(ip + 10, ip_csum(ip));
	put_be16(udp, port);
	put_be16(udp + 2, port);
	put_be16(udp + 4, BEAT_UDP + BEAT_PAYLOAD); /* checksum 0: none (RFC 768) */
	memcpy(pl, "TG beat ", 8);
	put_be32(pl + 8, seq);
	put_be32(pl + 12, ms);
}

void mode_netbeat(void)
{
	static const struct vq_case c = { "beat", 0, NULL, NULL, false };
	uint32_t to = opt_ip("to", 0), from = opt_ip("from", 0);
	uint32_t port = tg_opt_u32("port", BEAT_PORT), every = tg_opt_u32("every", 1);
	uint32_t secs = tg_opt_u32("secs", 0), start, next, now, sent = 0, skipped = 0;
	uint64_t per_ms, tsc0;
	uint16_t rx_enabled, used;

	if (!to || port == 0 || port > 0xFFFF || every == 0) {
		tg_printf("TG FAIL beat: needs to=IP, a port and every>0\n");
		tg_poweroff();
	}
	if (!probe_device() || !bring_up(&c, &rx_enabled))
		tg_poweroff();
	per_ms = tg_tsc_per_tick() * TG_HZ / 1000;
	if (!per_ms)
		per_ms = 1;
	tg_timer_hz(BEAT_HZ);
	tg_printf("TG beat start to=%u.%u.%u.%u port=%u every=%u ms\n", to >> 24,
		  (to >> 16) & 255, (to >> 8) & 255, to & 255, port, every);
	tg_wait_tick_edge();
	start = tg_ticks;
	tsc0 = rdtsc();
	next = 0;
	while (!secs || tg_ticks - start < secs * BEAT_HZ) {
		while (tg_ticks - start < next)
			tg_wait_tick_edge();
		now = tg_ticks - start;
		used = used_idx(TXQ);
		if ((uint16_t)(tx_avail - used) < QSIZE) {
			uint16_t head = tx_avail % QSIZE;

			build_beat(beat_frame[head], from, to, port, sent + skipped + 1,
				   (uint32_t)((rdtsc() - tsc0) / per_ms));
			rings[TXQ].desc[head] = (struct vdesc){ (uint32_t)beat_frame[head],
								NET_HDR + BEAT_LEN, 0, 0 };
			post(head);
			kick(TXQ);
			sent++;
		} else {
			skipped++;
		}
		/* after a stall, the next beat on the grid: no burst to catch up */
		next = now - now % every + every;
	}
	reset();
	tg_printf("TG beat done sent=%u skipped=%u\n", sent, skipped);
	tg_poweroff();
}
