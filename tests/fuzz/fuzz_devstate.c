/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: what a migration's destination reads after the
 * devices in a DEVICE_STATE, and the FRAMES record: hv/vmstate.c
 * vmstate_load_devices' trailer (console length and bytes, then
 * gnet_rx_snapshot's frame list) and vmstate_load_late_frames
 * (gnet_rx_late_snapshot, gnet_rx_carry_more's merge), with the real
 * hv/gnet.c behind them (tests/unit/vmstate.mk's core with gnet.mk's
 * network in place of gnet_fake.c; netif is a stand-in here).  The device
 * records themselves are the snap target's.
 *
 * Input: byte 0 = setup (bit 0: the guest has a switch port, as one with
 * a NIC does), then steps, each: u8 op, u16 len (LE), len bytes:
 *   op & 1 = 0: a DEVICE_STATE, a valid device set (saved from another
 *     guest) followed by the bytes; op & 2: its console is kept (the
 *     first load), else not (the load at COMMIT);
 *   op & 1 = 1: a FRAMES record's bytes.
 *
 * Invariants: this harness reads the trailer and frame lists itself
 * (console <= 4096 bytes; u32 n <= GNET_QLEN, then n times u16 len,
 * 14..1518, and the frame; no byte left over) and each load is accepted
 * exactly when that reading is; a refused one returns -EINVAL and changes
 * nothing (the guest's whole device save, console and waiting frames in
 * it, byte for byte); after every load the guest's save is what a
 * model says: its own device set until one is accepted, then the one sent, the console's last 4096 bytes, and
 * the frames waiting (the device state's replace the ones before, late
 * ones follow them up to GNET_QLEN, the rest counted as rx_qfull; without
 * a port none), the oldest that fit in GNET_CARRY_BYTES; the port's
 * rx_carried counts them.
 *
 * FERRY_FUZZ_MKSEEDS=dir: write seed inputs and exit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/gnet.h"
#include "hv/netif.h"
#include "hv/vm.h"
#include "hv/vmstate.h"
#include "tests/fuzz/fuzz.h"
#include "tests/unit/core_fake.h"

#define CON_KEEP	4096u		/* hv/vmstate.c CONSOLE_KEEP */
#define FRAME_LEN_MIN	14u
#define FRAME_LEN_MAX	1518u		/* hv/gnet.c FRAME_MAX */
#define STEP_MAX	(1u << 16)
#define SAVE_MAX	(1u << 20)

/* ---- netif, as tests/unit/test_gnet.c stands in for it ---- */

struct netif host_if;
static int locked;

void netif_lock(void) { CHECK(locked++ == 0); }
void netif_unlock(void) { CHECK(--locked == 0); }
uint64_t netif_now_us(void) { return 1000000; }
void netif_uplink_kick(void) { }
unsigned netif_rx_flags(void) { return 0; }
bool netif_csum_partial(void) { return false; }
bool netif_uplink_dropped(void) { return false; }
bool netif_wire_room(size_t bytes) { (void)bytes; return true; }	/* the wire never full */
bool netif_wire_stuck(void) { return false; }

bool netif_for_wire(int port, const uint8_t *frame, size_t len)
{
	CHECK(locked == 1);
	return (frame[0] & 1) ||
	       sw_unicast_port(&host_if.sw, port, frame, len) == host_if.uplink_port;
}

int netif_switch_input(int port, const void *frame, size_t len, unsigned flags)
{
	(void)flags;
	CHECK(locked == 1);
	return sw_input(&host_if.sw, port, frame, len);
}

unsigned int netif_switch_tso(int port, const struct netif_seg *seg, unsigned int n,
			      uint32_t hlen, uint32_t mss)
{
	(void)port; (void)seg; (void)n; (void)hlen; (void)mss;
	return 0;
}

static void wire_out(void *ctx, const uint8_t *f, size_t len)
{
	(void)ctx; (void)f; (void)len;
}

/* ---- the model ---- */

struct frame { uint16_t len; uint8_t data[FRAME_LEN_MAX]; };

static struct frame waiting[GNET_QLEN], incoming[GNET_QLEN];
static uint32_t n_waiting;
static uint8_t con[CON_KEEP];		/* the console's last bytes */
static uint32_t con_len;
static uint64_t qfull;			/* rx_qfull: late frames with no room */
static uint64_t carried;		/* rx_carried */

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* A frame list (u32 n, n times u16 len and bytes) at p[0..len): its end, or
 * NULL if malformed; the frames go to incoming[]. */
static const uint8_t *read_frames(const uint8_t *p, const uint8_t *end, uint32_t *n)
{
	if (end - p < 4)
		return NULL;
	*n = rd32(p);
	p += 4;
	if (*n > GNET_QLEN)
		return NULL;
	for (uint32_t i = 0; i < *n; i++) {
		if (end - p < 2)
			return NULL;
		uint16_t fl = (uint16_t)(p[0] | p[1] << 8);
		p += 2;
		if (fl < FRAME_LEN_MIN || fl > FRAME_LEN_MAX || end - p < fl)
			return NULL;
		incoming[i].len = fl;
		memcpy(incoming[i].data, p, fl);
		p += fl;
	}
	return p;
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }

/* The device save the model expects: dev, console tail, waiting frames. */
static size_t model_save(uint8_t *out, const uint8_t *dev, size_t dev_len, bool port)
{
	size_t n = 0, bytes = 0;
	uint32_t k = 0;

	memcpy(out, dev, dev_len);
	n = dev_len;
	put32(out + n, con_len);
	memcpy(out + n + 4, con, con_len);
	n += 4 + con_len;
	if (port)
		for (; k < n_waiting && (bytes += 2u + waiting[k].len) <= GNET_CARRY_BYTES; k++)
			;
	put32(out + n, k);
	n += 4;
	for (uint32_t i = 0; i < k; i++) {
		out[n] = (uint8_t)waiting[i].len;
		out[n + 1] = (uint8_t)(waiting[i].len >> 8);
		memcpy(out + n + 2, waiting[i].data, waiting[i].len);
		n += 2u + waiting[i].len;
	}
	return n;
}

/* ---- the rig ---- */

static uint8_t *dev;			/* a valid device set, saved from src */
static size_t dev_len;
static uint8_t fresh[SAVE_MAX];		/* the guest's own, before any load */
static const uint8_t *cur_dev;		/* the model's: fresh, then dev */
static size_t cur_len;
static uint8_t blob[SAVE_MAX], saved[SAVE_MAX], want[SAVE_MAX], before[SAVE_MAX];
static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0xfe, 0, 1 };

static long save(struct vm *vm, uint8_t *out)
{
	long n = vmstate_save_devices(vm, out, SAVE_MAX);

	CHECK(n > 0);
	return n;
}

static void rig_init(void)
{
	static const uint8_t host[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	struct vm *src;
	long n;

	fake_reset();
	fake_sched_reset();
	sw_init(&host_if.sw);
	host_if.local_port = -1;
	host_if.uplink_port = sw_add_port(&host_if.sw, SW_UPLINK, host, 0, wire_out, NULL);
	src = fake_vm_new("src", VM_PAUSED);
	fake_guest_timer(src);
	n = save(src, blob);
	/* no console, no port: the trailer is two zero counts */
	CHECK(n >= 8 && !memcmp(blob + n - 8, "\0\0\0\0\0\0\0\0", 8));
	dev_len = (size_t)n - 8;
	dev = malloc(dev_len);
	memcpy(dev, blob, dev_len);
	fake_vm_free(src);
}

static void check_stats(struct vm *vm, bool port)
{
	struct gnet_stats st;

	if (!port)
		return;
	CHECK(gnet_stats(vm, &st) == 0);
	CHECK(st.rx_carried == carried && st.rx_qfull == qfull);
}

static void one(struct vm *vm, bool port, uint8_t op, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len, *q;
	uint32_t n = 0;
	size_t blen, wlen;
	long bl = save(vm, before);
	int rc;

	if (!(op & 1)) {		/* DEVICE_STATE: the devices, then p */
		memcpy(blob, dev, dev_len);
		memcpy(blob + dev_len, p, len);
		blen = dev_len + len;
		bool console = op & 2;
		rc = vmstate_load_devices(vm, blob, blen, console);
		uint32_t cl = len >= 4 ? rd32(p) : 0;
		bool ok = len >= 4 && cl <= CON_KEEP && len - 4 >= cl &&
			  (q = read_frames(p + 4 + cl, end, &n)) && q == end;
		CHECK(rc == (ok ? 0 : -EINVAL));
		if (ok) {
			cur_dev = dev;
			cur_len = dev_len;
			if (console && cl) {
				/* the ring keeps more: the save shows the last 4096 */
				uint32_t keep = con_len + cl > CON_KEEP ? CON_KEEP - cl : con_len;
				memmove(con, con + con_len - keep, keep);
				memcpy(con + keep, p + 4, cl);
				con_len = keep + cl;
			}
			if (port && n) {	/* they replace what came before */
				carried = carried - n_waiting + n;
				memcpy(waiting, incoming, n * sizeof(incoming[0]));
				n_waiting = n;
			}
		}
	} else {			/* FRAMES */
		rc = vmstate_load_late_frames(vm, p, len);
		bool ok = (q = read_frames(p, end, &n)) && q == end;
		CHECK(rc == (ok ? 0 : -EINVAL));
		if (ok && port && n) {
			uint32_t take = n_waiting + n > GNET_QLEN ? GNET_QLEN - n_waiting : n;
			memcpy(waiting + n_waiting, incoming, take * sizeof(incoming[0]));
			n_waiting += take;
			carried += take;
			qfull += n - take;
		}
	}
	if (rc) {
		long al = save(vm, saved);
		CHECK(al == bl && !memcmp(saved, before, (size_t)bl));
	}
	wlen = model_save(want, cur_dev, cur_len, port);
	long sl = save(vm, saved);
	CHECK((size_t)sl == wlen && !memcmp(saved, want, wlen));
	check_stats(vm, port);
}

static void run(const uint8_t *data, size_t size)
{
	struct vm *vm;
	bool port;

	if (size < 1)
		return;
	port = data[0] & 1;
	data++, size--;
	vm = fake_vm_new("dst", VM_INCOMING);
	memcpy(vm->mac, MAC, 6);
	vm->nic = port;
	if (port)
		CHECK(gnet_attach(vm) == 0);
	n_waiting = 0;
	con_len = 0;
	long fl = save(vm, fresh);
	CHECK(fl >= 8 && !memcmp(fresh + fl - 8, "\0\0\0\0\0\0\0\0", 8));
	cur_dev = fresh;
	cur_len = (size_t)fl - 8;
	qfull = carried = 0;
	while (size >= 3) {
		uint8_t op = data[0];
		size_t len = (size_t)(data[1] | data[2] << 8);
		data += 3, size -= 3;
		if (len > size)
			len = size;
		one(vm, port, op, data, len);
		data += len, size -= len;
	}
	if (port)
		gnet_detach(vm);
	fake_vm_free(vm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dev)
		rig_init();
	run(data, size);
	return 0;
}

/* ---- seeds ---- */

static size_t frames_into(uint8_t *p, uint32_t n, uint16_t fl, uint8_t tag)
{
	size_t at = 4;

	put32(p, n);
	for (uint32_t i = 0; i < n; i++) {
		p[at] = (uint8_t)fl;
		p[at + 1] = (uint8_t)(fl >> 8);
		memset(p + at + 2, (uint8_t)(tag + i), fl);
		memcpy(p + at + 2, MAC, 6);
		at += 2u + fl;
	}
	return at;
}

static void step(FILE *f, uint8_t op, const uint8_t *p, size_t len)
{
	CHECK(len < STEP_MAX);
	fputc(op, f);
	fputc((int)(len & 0xff), f);
	fputc((int)(len >> 8), f);
	fwrite(p, 1, len, f);
}

static void mkseeds(const char *dir)
{
	static uint8_t t[STEP_MAX];
	static const struct { uint32_t dev_n, late_n; uint16_t fl; } v[] = {
		{ 2, 3, 64 }, { 0, 2, 60 }, { 200, 100, 14 }, { 21, 3, 1518 },
	};
	char path[4096];

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(path, sizeof(path), "%s/devstate-%u", dir, i);
		FILE *f = fopen(path, "wb");
		CHECK(f);
		fputc(1, f);				/* with a port */
		/* console "hi", the frames; then the same at COMMIT; then late */
		put32(t, 2);
		memcpy(t + 4, "hi", 2);
		size_t n = 6 + frames_into(t + 6, v[i].dev_n, v[i].fl, 1);
		step(f, 2, t, n);
		step(f, 0, t, n);
		step(f, 1, t, frames_into(t, v[i].late_n, v[i].fl, 100));
		fclose(f);
	}
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)
