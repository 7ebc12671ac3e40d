/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The 16550A UART: registers, interrupt priority, receive FIFO, loopback.
 * See uart.h for the model and its limits.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/portio.h"
#include "hv/vdev/uart.h"

#define UART_SNAP_VERSION 1
#define IER_MASK	0x0f
#define MCR_MASK	0x1f
#define FCR_KEPT	0xc1	/* enable + receiver trigger */
#define LSR_ERRORS	0x1e	/* OE, PE, FE, BI: cleared by reading LSR */
#define MSR_DELTAS	0x0f
#define MSR_TERMINAL	(UART_MSR_CTS | UART_MSR_DSR | UART_MSR_DCD)

/* ---- derived state ---------------------------------------------------- */

static bool fifo_on(const struct uart *u)
{
	return u->fcr & UART_FCR_ENABLE;
}

static unsigned int rx_capacity(const struct uart *u)
{
	return fifo_on(u) ? UART_FIFO_SIZE : 1;
}

/* Receiver trigger level, FCR bits 7-6 (PC16550D 8.4). */
static unsigned int rx_trigger(const struct uart *u)
{
	static const uint8_t level[4] = { 1, 4, 8, 14 };

	return level[u->fcr >> 6];
}

static uint8_t lsr_value(const struct uart *u)
{
	return (uint8_t)((u->rx_count ? UART_LSR_DR : 0) | u->lsr_err |
			 UART_LSR_THRE | UART_LSR_TEMT);
}

/* Modem inputs (MSR bits 7-4); in loopback they are MCR bits 3-0
 * (PC16550D 8.8: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD). */
static uint8_t modem_inputs(const struct uart *u)
{
	uint8_t m = u->mcr, v = 0;

	if (!(m & UART_MCR_LOOP))
		return MSR_TERMINAL;
	if (m & UART_MCR_RTS)
		v |= UART_MSR_CTS;
	if (m & UART_MCR_DTR)
		v |= UART_MSR_DSR;
	if (m & UART_MCR_OUT1)
		v |= UART_MSR_RI;
	if (m & UART_MCR_OUT2)
		v |= UART_MSR_DCD;
	return v;
}

/* Interrupt identification in priority order (PC16550D Table IV). */
static uint8_t interrupt_id(const struct uart *u)
{
	if ((u->ier & UART_IER_RLSI) && u->lsr_err)
		return UART_IIR_RLSI;
	if ((u->ier & UART_IER_RDI) && u->rx_count) {
		if (fifo_on(u) && u->rx_count < rx_trigger(u))
			return UART_IIR_TIMEOUT;
		return UART_IIR_RDI;
	}
	if ((u->ier & UART_IER_THRI) && u->thre_pending)
		return UART_IIR_THRI;
	if ((u->ier & UART_IER_MSI) && (u->msr & MSR_DELTAS))
		return UART_IIR_MSI;
	return UART_IIR_NO_INT;
}

uint8_t uart_iir(const struct uart *u)
{
	return (uint8_t)(interrupt_id(u) | (fifo_on(u) ? UART_IIR_FIFO : 0));
}

/* The PC's IRQ line: gated by OUT2, cut in loopback. */
static bool line_level(const struct uart *u)
{
	return !(interrupt_id(u) & UART_IIR_NO_INT) && (u->mcr & UART_MCR_OUT2) &&
	       !(u->mcr & UART_MCR_LOOP);
}

static void update_irq(struct uart *u)
{
	bool level = line_level(u);

	if (level == u->irq_level)
		return;
	u->irq_level = level;
	if (u->wire.irq)
		u->wire.irq(u->wire.ctx, level);
}

/* New modem inputs: set the delta bits (PC16550D 8.10; TERI on RI 1->0). */
static void update_msr(struct uart *u)
{
	uint8_t old = u->msr & 0xf0, cur = modem_inputs(u), chg = old ^ cur;
	uint8_t delta = 0;

	if (chg & UART_MSR_CTS)
		delta |= 0x01;
	if (chg & UART_MSR_DSR)
		delta |= 0x02;
	if ((old & UART_MSR_RI) && !(cur & UART_MSR_RI))
		delta |= 0x04;
	if (chg & UART_MSR_DCD)
		delta |= 0x08;
	u->msr = (uint8_t)(cur | (u->msr & MSR_DELTAS) | delta);
}

/* ---- receive FIFO ----------------------------------------------------- */

static void rx_clear(struct uart *u)
{
	u->rx_head = 0;
	u->rx_count = 0;
}

static void rx_put(struct uart *u, uint8_t byte)
{
	u->rx[(u->rx_head + u->rx_count) % UART_FIFO_SIZE] = byte;
	u->rx_count++;
	u->stats.rx_bytes++;
}

static uint8_t rx_pop(struct uart *u)
{
	uint8_t byte;

	if (!u->rx_count)
		return 0;
	byte = u->rx[u->rx_head];
	u->rx_head = (uint8_t)((u->rx_head + 1) % UART_FIFO_SIZE);
	u->rx_count--;
	return byte;
}

unsigned int uart_rx_room(const struct uart *u)
{
	if (u->mcr & UART_MCR_LOOP)
		return 0;
	return rx_capacity(u) - u->rx_count;
}

bool uart_rx_push(struct uart *u, uint8_t byte)
{
	if (!uart_rx_room(u))
		return false;
	rx_put(u, byte);
	update_irq(u);
	return true;
}

void uart_rx_wire(struct uart *u, uint8_t byte)
{
	if (u->rx_count >= rx_capacity(u)) {
		u->lsr_err |= UART_LSR_OE;
		u->stats.overruns++;
	} else {
		rx_put(u, byte);
	}
	update_irq(u);
}

/* ---- registers -------------------------------------------------------- */

static void transmit(struct uart *u, uint8_t byte)
{
	if (u->mcr & UART_MCR_LOOP) {
		uart_rx_wire(u, byte);
	} else {
		u->stats.tx_bytes++;
		if (u->wire.tx)
			u->wire.tx(u->wire.ctx, byte);
	}
	u->thre_pending = true;		/* THR emptied again at once */
}

static void write_ier(struct uart *u, uint8_t val)
{
	uint8_t old = u->ier;

	u->ier = val & IER_MASK;
	if ((u->ier & UART_IER_THRI) && !(old & UART_IER_THRI))
		u->thre_pending = true;	/* THR is empty */
	else if (!(u->ier & UART_IER_THRI))
		u->thre_pending = false;
}

/* FCR (PC16550D 8.4): bit 0 must be set for the other bits to count;
 * changing it clears the FIFOs. */
static void write_fcr(struct uart *u, uint8_t val)
{
	if (!(val & UART_FCR_ENABLE)) {
		if (fifo_on(u))
			rx_clear(u);
		u->fcr = 0;
		return;
	}
	if (!fifo_on(u) || (val & UART_FCR_CLEAR_RX))
		rx_clear(u);
	u->fcr = val & FCR_KEPT;
}

static void write_reg(struct uart *u, unsigned int off, uint8_t val)
{
	bool dlab = u->lcr & UART_LCR_DLAB;

	switch (off) {
	case UART_THR: if (dlab) u->dll = val; else transmit(u, val); break;
	case UART_IER: if (dlab) u->dlm = val; else write_ier(u, val); break;
	case UART_FCR: write_fcr(u, val); break;
	case UART_LCR: u->lcr = val; break;
	case UART_MCR: u->mcr = val & MCR_MASK; update_msr(u); break;
	case UART_SCR: u->scr = val; break;
	default: break;		/* LSR, MSR: factory test writes, ignored */
	}
}

static uint8_t read_iir(struct uart *u)
{
	uint8_t iir = uart_iir(u);

	if ((iir & 0x0f) == UART_IIR_THRI)
		u->thre_pending = false;
	return iir;
}

static uint8_t read_reg(struct uart *u, unsigned int off)
{
	bool dlab = u->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (off) {
	case UART_RBR: return dlab ? u->dll : rx_pop(u);
	case UART_IER: return dlab ? u->dlm : u->ier;
	case UART_IIR: return read_iir(u);
	case UART_LCR: return u->lcr;
	case UART_MCR: return u->mcr;
	case UART_LSR:
		v = lsr_value(u);
		u->lsr_err = 0;
		return v;
	case UART_MSR:
		v = u->msr;
		u->msr &= (uint8_t)~MSR_DELTAS;
		return v;
	default: return u->scr;
	}
}

static bool uart_byte(void *dev, uint16_t port, bool in, uint8_t *val)
{
	struct uart *u = dev;
	unsigned int off = (unsigned int)port - u->base;

	if (port < u->base || off >= UART_NR_PORTS)
		return false;
	if (in)
		*val = read_reg(u, off);
	else
		write_reg(u, off, *val);
	update_irq(u);
	return true;
}

int uart_io(struct uart *u, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	return portio_split(u, uart_byte, port, size, in, val);
}

void uart_init(struct uart *u, uint16_t base, void (*irq)(void *ctx, int level),
	       void (*tx)(void *ctx, uint8_t byte), void *ctx)
{
	memset(u, 0, sizeof(*u));
	u->base = base;
	u->wire.irq = irq;
	u->wire.tx = tx;
	u->wire.ctx = ctx;
	u->dll = 1;		/* 115200 baud */
	u->msr = modem_inputs(u);
}

/* ---- snapshot --------------------------------------------------------- */

/* The FIFO in order, oldest first (restored with rx_head = 0). */
static void fifo_fields(struct uart *t, struct snap *s)
{
	uint8_t lin[UART_FIFO_SIZE];

	snap_u8(s, &t->rx_count);
	if (s->err || t->rx_count > UART_FIFO_SIZE) {
		snap_invalid(s);
		return;
	}
	for (unsigned int i = 0; i < t->rx_count; i++)
		lin[i] = t->rx[(t->rx_head + i) % UART_FIFO_SIZE];
	snap_bytes(s, lin, t->rx_count);
	memcpy(t->rx, lin, t->rx_count);
	t->rx_head = 0;
}

bool uart_valid(const struct uart *u)
{
	return !(u->ier & ~IER_MASK) && !(u->mcr & ~MCR_MASK) &&
	       !(u->fcr & ~FCR_KEPT) && !(u->lsr_err & ~LSR_ERRORS) &&
	       u->rx_head < UART_FIFO_SIZE && u->rx_count <= rx_capacity(u) &&
	       (u->msr & 0xf0) == modem_inputs(u) && u->irq_level == line_level(u);
}

int uart_snapshot(struct uart *u, struct snap *s)
{
	struct uart t = *u;
	uint16_t base = u->base;

	if (snap_version(s, UART_SNAP_VERSION))
		return s->err;
	snap_u16(s, &base);
	snap_u8(s, &t.ier);
	snap_u8(s, &t.lcr);
	snap_u8(s, &t.mcr);
	snap_u8(s, &t.scr);
	snap_u8(s, &t.dll);
	snap_u8(s, &t.dlm);
	snap_u8(s, &t.fcr);
	snap_u8(s, &t.lsr_err);
	snap_u8(s, &t.msr);
	snap_bool(s, &t.thre_pending);
	snap_bool(s, &t.irq_level);
	fifo_fields(&t, s);
	if (!s->restore || s->err)
		return s->err;
	if (base != u->base || !uart_valid(&t))
		return snap_invalid(s);
	*u = t;
	return 0;
}
