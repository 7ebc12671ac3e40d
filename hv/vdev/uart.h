/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A 16550A UART (8 ports from a configurable base, COM1 = 0x3F8) as Linux's
 * 8250 driver and the test guest use it.
 *
 * Reference: National Semiconductor PC16550D data sheet (June 1995):
 * Table II (registers), Table IV (interrupt control), 8.4 FCR, 8.6 LSR,
 * 8.8 MCR loopback, 8.10 MSR.
 *
 * The transmitter is infinitely fast: a byte written to THR goes out
 * through tx() at once, so LSR.THRE and LSR.TEMT always read 1 and the
 * THR-empty interrupt is pending again after every write.  THR-empty
 * interrupt rules (what Linux's 8250 driver tests at start-up):
 *   - setting IER.ETBEI (from 0) makes it pending, THR being empty;
 *   - reading IIR when it is the reported source clears it;
 *   - writing THR makes it pending again (the byte left at once).
 * The receiver has a 16-byte FIFO (1 byte with FIFOs disabled).  Data
 * below the FIFO trigger level reports a character time-out (IIR 0xCC)
 * at once rather than after four character times.
 *
 * Interrupt line: on a PC the IRQ is wired through MCR.OUT2 and is cut in
 * loopback mode, so irq() sees: an interrupt is pending (IIR bit 0 = 0)
 * AND OUT2 AND NOT LOOP.  irq() is called only when that level changes.
 * Outside loopback the modem inputs read as a connected terminal: CTS,
 * DSR, DCD high, RI low.  Not modelled: parity/framing errors, break,
 * baud rate (the divisor is kept for read-back), DMA mode signals.
 *
 * Memory use is fixed: a guest that never reads cannot make it grow.
 * Not thread-safe: the owner serializes calls.
 */
#ifndef FERRY_HV_VDEV_UART_H
#define FERRY_HV_VDEV_UART_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define UART_COM1_BASE	0x3F8
#define UART_NR_PORTS	8
#define UART_FIFO_SIZE	16

/* Register offsets and bits (PC16550D Table II). */
#define UART_RBR 0	/* read, DLAB=0 */
#define UART_THR 0	/* write, DLAB=0 */
#define UART_DLL 0	/* DLAB=1 */
#define UART_IER 1	/* DLAB=0 */
#define UART_DLM 1	/* DLAB=1 */
#define UART_IIR 2	/* read */
#define UART_FCR 2	/* write */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI	0x01	/* received data available */
#define UART_IER_THRI	0x02	/* THR empty */
#define UART_IER_RLSI	0x04	/* receiver line status */
#define UART_IER_MSI	0x08	/* modem status */
#define UART_IIR_NO_INT	0x01
#define UART_IIR_MSI	0x00
#define UART_IIR_THRI	0x02
#define UART_IIR_RDI	0x04
#define UART_IIR_RLSI	0x06
#define UART_IIR_TIMEOUT 0x0C
#define UART_IIR_FIFO	0xC0	/* FIFOs enabled */
#define UART_FCR_ENABLE	0x01
#define UART_FCR_CLEAR_RX 0x02
#define UART_FCR_CLEAR_TX 0x04
#define UART_LCR_DLAB	0x80
#define UART_MCR_DTR	0x01
#define UART_MCR_RTS	0x02
#define UART_MCR_OUT1	0x04
#define UART_MCR_OUT2	0x08
#define UART_MCR_LOOP	0x10
#define UART_LSR_DR	0x01
#define UART_LSR_OE	0x02
#define UART_LSR_THRE	0x20
#define UART_LSR_TEMT	0x40
#define UART_MSR_CTS	0x10
#define UART_MSR_DSR	0x20
#define UART_MSR_RI	0x40
#define UART_MSR_DCD	0x80

/* Set at uart_init, never saved: the wiring to the rest of ferry. */
struct uart_wiring {
	void (*irq)(void *ctx, int level);	/* the interrupt line changed */
	void (*tx)(void *ctx, uint8_t byte);	/* a byte was transmitted */
	void *ctx;
};

struct uart_stats {
	uint64_t tx_bytes;	/* through tx() */
	uint64_t rx_bytes;	/* received into the FIFO */
	uint64_t overruns;	/* bytes lost to a full FIFO (LSR.OE) */
};

struct uart {
	uint16_t base;			/* first port (c) */
	struct uart_wiring wire;	/* (c) callbacks */
	uint8_t ier;			/* bits 3-0 */
	uint8_t lcr, mcr, scr;		/* mcr: bits 4-0 */
	uint8_t dll, dlm;		/* divisor latch */
	uint8_t fcr;			/* ENABLE and trigger bits 7-6 as written */
	uint8_t lsr_err;		/* LSR bits 4-1 pending (OE) */
	uint8_t msr;			/* modem status: inputs 7-4, deltas 3-0 */
	bool thre_pending;		/* THR-empty interrupt pending */
	bool irq_level;			/* what irq() was last told */
	uint8_t rx[UART_FIFO_SIZE];	/* receive FIFO, ring */
	uint8_t rx_head, rx_count;	/* oldest byte; bytes held */
	struct uart_stats stats;	/* host-side counters, not saved */
};

/* Reset state at port base.  irq and tx may be NULL. */
void uart_init(struct uart *u, uint16_t base, void (*irq)(void *ctx, int level),
	       void (*tx)(void *ctx, uint8_t byte), void *ctx);

/* Guest port access in [base, base+8), size 1, 2 or 4 (split into
 * bytes).  Returns 0, or -ENOENT if port is not the UART's. */
int uart_io(struct uart *u, uint16_t port, uint8_t size, bool in, uint32_t *val);

/*
 * The console sends a byte to the guest, with flow control: false when
 * it cannot be taken now (FIFO full, or loopback mode, where the line is
 * disconnected); the caller keeps it and tries again later.
 */
bool uart_rx_push(struct uart *u, uint8_t byte);

/* A byte arrives on the wire with no flow control: when the FIFO is full
 * it is lost and LSR.OE is set.  (Loopback uses this path.) */
void uart_rx_wire(struct uart *u, uint8_t byte);

/* Bytes the FIFO can take now (0 in loopback mode). */
unsigned int uart_rx_room(const struct uart *u);

/* The current IIR value (no side effect). */
uint8_t uart_iir(const struct uart *u);

/*
 * Save or restore.  The base port is saved and must match on restore.
 * Restore does not call irq(): the line level is part of the state, and
 * the interrupt controller's saved state holds the same level.  A refused
 * restore leaves u unchanged.
 */
int uart_snapshot(struct uart *u, struct snap *s);

/* Internal consistency (used by restore, and by tests). */
bool uart_valid(const struct uart *u);

#endif
