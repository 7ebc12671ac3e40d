/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "smp": start the application processors, run a worker on
 * every vCPU and exchange IPIs between them.
 *   smp [secs=S] [pingpong=N] [cpus=C] [spin=1] [x2apic=1] [reset=1|2]
 * The CPUs and their local APIC ids come from the ACPI MADT (what QEMU
 * gives: SeaBIOS's MP table lists one CPU under TCG), else from the MP
 * table (MP spec 1.4, 4: a floating pointer in the EBDA's first KiB, base
 * memory's last KiB or 0xF0000-0xFFFFF), else cpus=C says there are C with
 * APIC ids 0..C-1 (ferry writes an MP table for every guest).  CPUID
 * gives no count: leaf 1 EBX[23:16] and leaf 0xB describe one package,
 * and a hypervisor may make each vCPU a package of its own (ferry does).
 * The BSP software-enables its local APIC (Intel SDM Vol. 3A 10.4.3) in
 * xAPIC mode, or with x2apic=1 (where CPUID.1:ECX[21] offers it) in
 * x2APIC mode (10.12) and every AP then too, copies smp_tramp.S to
 * TRAMP_PA and starts the APs one after the other with INIT, SIPI, SIPI
 * (8.4.4.1); each AP comes up in 32-bit protected mode with the BSP's
 * GDT and IDT and a stack of its own, enables its APIC and says it is
 * up.  Then:
 *  - every vCPU runs the `work` loop for S seconds (default 2), counting
 *    units;
 *  - the BSP sends itself N (default 200) fixed IPIs of VEC_PONG, then
 *    pings each AP N times with a fixed IPI of VEC_PING; the AP's handler
 *    answers with VEC_PONG; each round trip is timed by the TSC
 *    (calibrated against the PIT), the BSP halting until the answer and
 *    the AP halting between pings (spin=1: both spin instead, interrupts
 *    on): with two vCPUs on one host CPU, a round trip is two vCPU
 *    switches;
 *  - BCASTS fixed IPIs of VEC_BCAST to all-excluding-self, each of which
 *    every AP must count before the next is sent.
 * Output (the APs print nothing):
 *   TG smp cpus=N src=madt|mptable|cmdline bsp_apic=A tramp=0x8000 x2apic=0|1
 *   TG smp self rtt_us=X.XX min_us=X.XX rounds=R lost=L tsc_per_us=T
 *   TG smp ping cpu=K rounds=R lost=L min_cycles=C avg_cycles=C (an AP)
 *   TG smp ipi rtt_us=X.XX min_us=X.XX rounds=R lost=L tsc_per_us=T
 *   TG smp bcast sent=B
 *   TG smp cpu=K apic=A units=U                  (one a vCPU)
 *   TG smp up=N of=N
 * then `TG PASS smp`, or one `TG FAIL smp <reason>` a failure (an AP
 * that did not come up, did no work, a ping without answer, a broadcast
 * an AP missed: all bounded by timeouts), and power off.
 * reset=1: once every AP is up (`TG smp reset`), every vCPU pulls the
 * reset line at once (0xFE to the keyboard controller's port 0x64), and
 * the guest comes back as it booted, to do it again: a reset storm.
 * reset=2: only the last AP pulls it, and then every vCPU halts with
 * interrupts off, the BSP already halted so: the BSP must still reboot
 * the guest, which must not be taken for powered off.
 */
#include "guest/testguest/apic.h"
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define MAX_CPUS	16
#define TRAMP_PA	0x8000u		/* SIPI vector TRAMP_PA >> 12 */
#define AP_STACK	4096
#define VEC_PING	0x2C
#define VEC_PONG	0x2D
#define VEC_BCAST	TG_IPI_VECTOR
#define VEC_SPURIOUS	0x2F		/* low nibble 0xF, as P6 APICs need */
#define KBD_CMD		0x64
#define KBD_PULSE_RESET	0xFE
#define BCASTS		8
#define UP_TICKS	(5 * TG_HZ)	/* an AP has this long to come up */
#define IPI_TICKS	TG_HZ		/* and to answer */

/* MP spec 1.4, 4.1 and 4.2 (Figure 4-1, 4-2, 4-3). */
#define BDA_EBDA_SEG	0x40E
#define TG_XSTR(x)	#x
#define TG_STR(x)	TG_XSTR(x)
#define MP_ENT_CPU	0
#define MP_CPU_EN	(1u << 0)
#define MP_CPU_BP	(1u << 1)

struct mp_float {
	char sig[4];		/* "_MP_" */
	uint32_t config;	/* the configuration table; 0: a default one */
	uint8_t len;		/* in 16-byte units */
	uint8_t rev, sum, feature1, feature2, rsv[3];
} __attribute__((packed));

struct mp_config {
	char sig[4];		/* "PCMP" */
	uint16_t len;
	uint8_t rev, sum;
	char oem[8], product[12];
	uint32_t oem_table;
	uint16_t oem_size, count;
	uint32_t lapic;
	uint16_t ext_len;
	uint8_t ext_sum, rsv;
} __attribute__((packed));

struct mp_cpu {
	uint8_t type, apic_id, apic_ver, flags;
	uint32_t signature, features, rsv[2];
} __attribute__((packed));

/* ACPI 6.4, 5.2.5.3 (RSDP), 5.2.6 (table header), 5.2.12 (MADT). */
#define MADT_LAPIC	0
#define MADT_LAPIC_EN	(1u << 0)

struct acpi_rsdp {
	char sig[8];		/* "RSD PTR " */
	uint8_t sum;		/* over these 20 bytes */
	char oem[6];
	uint8_t rev;
	uint32_t rsdt;
} __attribute__((packed));

struct acpi_sdt {
	char sig[4];
	uint32_t len;
	uint8_t rev, sum;
	char oem[6], oem_table[8];
	uint32_t oem_rev, creator, creator_rev;
} __attribute__((packed));

struct smp_cpu {
	uint32_t apic;			/* from the MADT, MP table or cpus= */
	volatile uint32_t up, done, units, pings, bcasts;
	volatile uint32_t id_reg;	/* what its own APIC says */
	volatile uint32_t sum;		/* of its work, so that it is done */
};

static struct smp_cpu cpus[MAX_CPUS];
static uint32_t ncpus, bsp, fails;
static volatile uint32_t phase;		/* 0 wait, 1 work, 2 answer IPIs */
static volatile uint32_t starting;	/* the AP being started */
static volatile uint32_t pongs;
static bool spin;			/* wait by PAUSE, not HLT */
static bool x2;				/* x2APIC mode, every vCPU */
static volatile uint32_t reset_mode;	/* reset=1|2: the APs wait to reset */
static volatile uint32_t reset_go;	/* every vCPU resets now */
static volatile uint32_t reset_ap;	/* reset=2: the one AP that does */

/* Every vCPU at once (reset=1), or AP reset_ap alone (2): the reset line,
 * then nothing. */
static void __attribute__((noreturn)) reset_together(uint32_t me)
{
	while (!reset_go)
		cpu_relax();
	if (reset_mode == 2 && me == reset_ap)	/* the BSP most likely asleep by then */
		for (unsigned int i = 0; i < 20000; i++)
			cpu_relax();
	if (reset_mode == 1 || me == reset_ap)
		outb(KBD_CMD, KBD_PULSE_RESET);
	if (reset_mode == 2)
		cli();
	for (;;) {
		if (reset_mode == 2)
			__asm__ volatile("hlt");
		else
			cpu_relax();
	}
}
static struct {
	uint16_t limit;
	uint32_t base;
} __attribute__((packed)) idt_ptr;
static uint8_t stacks[MAX_CPUS][AP_STACK] __attribute__((aligned(16)));

static uint32_t apic_id(void)
{
	return x2 ? (uint32_t)rdmsr(MSR_X2(REG_ID)) : *apic_reg(REG_ID) >> 24;
}

/* Fixed, INIT or SIPI to one APIC id or a shorthand.  xAPIC: waits
 * (bounded) for the previous one to have left (10.6.1: Delivery Status);
 * x2APIC: one WRMSR, which has no such bit (10.12.9). */
static void icr(uint32_t dest, uint32_t lo)
{
	if (x2) {
		wrmsr(MSR_X2(REG_ICR_LO), (uint64_t)dest << 32 | lo);
		return;
	}
	for (int i = 0; i < 100000 && (*apic_reg(REG_ICR_LO) & ICR_PENDING); i++)
		cpu_relax();
	*apic_reg(REG_ICR_HI) = dest << 24;
	*apic_reg(REG_ICR_LO) = lo;
}

static void eoi(void)
{
	if (x2)
		wrmsr(MSR_X2(REG_EOI), 0);
	else
		*apic_reg(REG_EOI) = 0;
}

/* Software-enabled, in x2APIC mode with x2apic=1 (from xAPIC mode, which
 * keeps the registers: 10.12.5); on the BSP LINT0 stays the 8259's
 * virtual wire (the PIT's ticks), on an AP it stays masked. */
static void apic_enable(bool is_bsp)
{
	apic_xapic_on(VEC_SPURIOUS, is_bsp);
	if (x2)
		wrmsr(APIC_BASE_MSR, rdmsr(APIC_BASE_MSR) | APIC_BASE_EN | APIC_BASE_EXTD);
}

/* Which vCPU this is, from its stack (an AP's is stacks[k], the BSP's the
 * boot stack): reading the APIC ID would be one more exit in every IPI
 * handler, and so in every round trip timed. */
static uint32_t my_index(void)
{
	uint32_t sp = (uint32_t)__builtin_frame_address(0), base = (uint32_t)stacks;

	if (sp >= base && sp < base + sizeof(stacks))
		return (sp - base) / AP_STACK;
	return bsp;
}

/* Every vCPU's IPI handler: an AP answers a ping, the BSP counts the
 * answer, an AP counts a broadcast. */
static void on_ipi(int vector)
{
	struct smp_cpu *c = &cpus[my_index()];

	if (vector == VEC_PING) {
		c->pings++;
		icr(cpus[bsp].apic, ASSERT | DM_FIXED | VEC_PONG);
	} else if (vector == VEC_PONG) {
		pongs++;
	} else if (vector == VEC_BCAST) {
		c->bcasts++;
	} else {
		return;		/* an NMI: nothing to acknowledge */
	}
	eoi();
}

static void fail(const char *what, uint32_t k)
{
	tg_printf("TG FAIL smp %s cpu=%u apic=%u\n", what, k, cpus[k].apic);
	fails++;
}

/* Waits until *v >= want or `ticks` PIT ticks passed (false then):
 * halting, testing with interrupts off so that STI;HLT cannot miss the
 * wake-up, or with spin=1 spinning with interrupts on, so that the vCPU
 * stays on its host CPU.  Returns with interrupts on. */
static bool wait_for(volatile uint32_t *v, uint32_t want, uint32_t ticks)
{
	uint32_t t0 = tg_ticks;
	bool ok;

	for (;;) {
		if (!spin)
			cli();
		ok = *v >= want;
		if (ok || tg_ticks - t0 >= ticks)
			break;
		if (spin)
			cpu_relax();
		else
			sti_hlt();
	}
	sti();
	return ok;
}

static void delay_cycles(uint64_t n)
{
	uint64_t t0 = rdtsc();

	while (rdtsc() - t0 < n)
		cpu_relax();
}

static uint8_t sum_bytes(const void *p, uint32_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	while (n--)
		s += *b++;
	return s;
}

static const struct mp_float *scan_float(uint32_t from, uint32_t len)
{
	for (uint32_t a = from; a + sizeof(struct mp_float) <= from + len; a += 16) {
		const struct mp_float *f = (const void *)a;

		if (!memcmp(f->sig, "_MP_", 4) && f->len &&
		    !sum_bytes(f, f->len * 16u))
			return f;
	}
	return NULL;
}

/* The EBDA's address from the BIOS data area; 0 when there is none. */
static uint32_t ebda_base(void)
{
	uint32_t ebda;

	/* (asm: gcc takes a pointer made from a small constant for an error) */
	__asm__ volatile("movzwl " TG_STR(BDA_EBDA_SEG) ", %0" : "=r"(ebda));
	ebda <<= 4;
	return ebda >= 0x80000 && ebda < 0xA0000 ? ebda : 0;
}

/* MP spec 4: the EBDA's first KiB, the last KiB of base memory, the BIOS
 * ROM area. */
static const struct mp_float *find_float(uint32_t ebda)
{
	const struct mp_float *f = NULL;

	if (ebda)
		f = scan_float(ebda, 1024);
	if (!f && tg_boot.have_mem && tg_boot.mem_lower_kib >= 1)
		f = scan_float(tg_boot.mem_lower_kib * 1024 - 1024, 1024);
	return f ? f : scan_float(0xF0000, 0x10000);
}

static void add_cpu(uint32_t apic, bool is_bsp)
{
	if (ncpus == MAX_CPUS) {
		tg_printf("TG WARN smp more than %u CPUs, apic=%u left out\n", MAX_CPUS, apic);
		return;
	}
	if (is_bsp)
		bsp = ncpus;
	cpus[ncpus++].apic = apic;
}

static const struct acpi_rsdp *find_rsdp(uint32_t from, uint32_t len)
{
	for (uint32_t a = from; a + sizeof(struct acpi_rsdp) <= from + len; a += 16) {
		const struct acpi_rsdp *r = (const void *)a;

		if (!memcmp(r->sig, "RSD PTR ", 8) && !sum_bytes(r, sizeof(*r)))
			return r;
	}
	return NULL;
}

/* The MADT through the RSDT (ACPI 5.2.5.1: the RSDP in the EBDA's first
 * KiB or in 0xE0000-0xFFFFF). */
static const struct acpi_sdt *find_madt(uint32_t ebda)
{
	const struct acpi_rsdp *r = ebda ? find_rsdp(ebda, 1024) : NULL;
	const struct acpi_sdt *rsdt;
	const uint32_t *tab;

	r = r ? r : find_rsdp(0xE0000, 0x20000);
	if (!r || !r->rsdt || r->rsdt >= TG_RAM_LIMIT)
		return NULL;
	rsdt = (const void *)r->rsdt;
	if (memcmp(rsdt->sig, "RSDT", 4) || sum_bytes(rsdt, rsdt->len))
		return NULL;
	tab = (const uint32_t *)(rsdt + 1);
	for (uint32_t i = 0; i < (rsdt->len - sizeof(*rsdt)) / 4; i++) {
		const struct acpi_sdt *t = (const void *)tab[i];

		if (tab[i] && tab[i] < TG_RAM_LIMIT && !memcmp(t->sig, "APIC", 4) &&
		    !sum_bytes(t, t->len))
			return t;
	}
	return NULL;
}

/* The MADT's enabled Processor Local APIC entries (5.2.12.2), after its
 * 8 bytes of local APIC address and flags; the BSP is the one running. */
static bool parse_madt(const struct acpi_sdt *t, uint32_t my_apic)
{
	const uint8_t *e = (const uint8_t *)(t + 1) + 8, *end = (const uint8_t *)t + t->len;

	for (; e + 2 <= end && e[1] >= 2; e += e[1])
		if (e[0] == MADT_LAPIC && e[1] >= 8 && (e[4] & MADT_LAPIC_EN))
			add_cpu(e[3], e[3] == my_apic);
	return ncpus > 0;
}

/* The processor entries of the configuration table (4.3.1); a default
 * configuration (feature byte 1 non-zero, 5) has two CPUs, ids 0 and 1. */
static bool parse_mptable(const struct mp_float *f)
{
	const struct mp_config *c = (const void *)f->config;
	const uint8_t *e, *end;

	if (!f->config) {
		add_cpu(0, true);
		add_cpu(1, false);
		return f->feature1 != 0;
	}
	if (memcmp(c->sig, "PCMP", 4) || sum_bytes(c, c->len))
		return false;
	e = (const uint8_t *)(c + 1);
	end = (const uint8_t *)c + c->len;
	for (uint32_t i = 0; i < c->count && e < end; i++) {
		const struct mp_cpu *p = (const void *)e;

		if (*e != MP_ENT_CPU) {
			e += 8;
			continue;
		}
		if (p->flags & MP_CPU_EN)
			add_cpu(p->apic_id, p->flags & MP_CPU_BP);
		e += sizeof(*p);
	}
	return ncpus > 0;
}

/* The CPUs: the MADT's, else the MP table's, else cpus=C with ids
 * 0..C-1.  Returns the source's name, NULL when there is none. */
static const char *find_cpus(void)
{
	uint32_t ebda = ebda_base(), n = tg_opt_u32("cpus", 0);
	const struct acpi_sdt *madt = find_madt(ebda);
	const struct mp_float *f;

	if (madt && parse_madt(madt, apic_id()))
		return "madt";
	ncpus = bsp = 0;
	f = find_float(ebda);
	if (f && parse_mptable(f))
		return "mptable";
	ncpus = bsp = 0;
	if (!n)
		return NULL;
	for (uint32_t k = 0; k < n; k++)
		add_cpu(k, k == 0);
	return "cmdline";
}

/* An AP, after smp_tramp.S: the BSP's IDT, its APIC, then the phases. */
void tg_smp_ap_main(void)
{
	struct smp_cpu *c = &cpus[starting];
	uint32_t state = 0x12345678, sum = 0;

	__asm__ volatile("lidt %0" : : "m"(idt_ptr));
	apic_enable(false);
	c->id_reg = apic_id();
	c->up = 1;
	if (reset_mode)
		reset_together(starting);
	sti();
	while (!phase)
		cpu_relax();
	while (phase == 1) {
		sum ^= tg_work_unit(&state) + c->units;
		c->units++;
	}
	c->sum = sum;
	c->done = 1;
	for (;;) {
		if (spin)
			cpu_relax();
		else
			sti_hlt();
	}
}

/* The trampoline goes to TRAMP_PA, which must be base memory. */
static bool install_trampoline(void)
{
	uint32_t len = (uint32_t)(tg_tramp_end - tg_tramp_start);

	if (tg_boot.have_mem && TRAMP_PA + TG_PAGE > tg_boot.mem_lower_kib * 1024u) {
		tg_printf("TG FAIL smp no base memory at 0x%x (mem_lower_kib=%u)\n",
			  TRAMP_PA, tg_boot.mem_lower_kib);
		return false;
	}
	memcpy((void *)TRAMP_PA, tg_tramp_start, len);
	__asm__ volatile("sgdt (%0)" : : "r"(TRAMP_PA + (tg_tramp_gdt - tg_tramp_start))
			 : "memory");
	__asm__ volatile("sidt %0" : "=m"(idt_ptr));
	return true;
}

/* INIT, 10 ms, SIPI, 200 µs, SIPI (SDM Vol. 3A 8.4.4.1); then up to
 * UP_TICKS for the AP to say it is up. */
static void start_ap(uint32_t k, uint64_t tsc_per_tick)
{
	uint32_t id = cpus[k].apic;

	starting = k;
	tg_smp_ap_stack = (uint32_t)stacks[k] + AP_STACK;
	icr(id, ASSERT | LEVEL | DM_INIT);
	icr(id, LEVEL | DM_INIT);	/* de-assert, for the 82489DX's sake */
	tg_wait_ticks(2);		/* at least 10 ms */
	for (int i = 0; i < 2 && !cpus[k].up; i++) {
		icr(id, DM_SIPI | (TRAMP_PA >> 12));
		delay_cycles(tsc_per_tick / 50);	/* 200 µs */
	}
	if (!wait_for(&cpus[k].up, 1, UP_TICKS))
		fail("ap never came up", k);
	else if (cpus[k].id_reg != id)
		fail("ap has another apic id", k);
}

static void run_work(uint32_t secs)
{
	uint32_t state = 0x12345678, sum = 0, t0;
	struct smp_cpu *c = &cpus[bsp];

	tg_wait_tick_edge();
	t0 = tg_ticks;
	phase = 1;
	while (tg_ticks - t0 < secs * TG_HZ) {
		sum ^= tg_work_unit(&state) + c->units;
		c->units++;
	}
	phase = 2;
	c->sum = sum;
	c->done = 1;
	for (uint32_t k = 0; k < ncpus; k++)
		if (cpus[k].up && !wait_for(&cpus[k].done, 1, IPI_TICKS))
			fail("ap did not stop working", k);
}

struct rtt {
	uint64_t sum, min;
	uint32_t rounds, lost;
};

/* rounds fixed IPIs of vector to dest, one at a time, each timed until
 * the BSP counted its pong (or IPI_TICKS passed: lost). */
static void time_rounds(uint32_t dest, uint32_t vector, uint32_t rounds, struct rtt *r)
{
	for (uint32_t i = 0; i < rounds; i++) {
		uint32_t want = pongs + 1;
		uint64_t t0 = rdtsc(), d;

		icr(dest, ASSERT | DM_FIXED | vector);
		if (!wait_for(&pongs, want, IPI_TICKS)) {
			r->lost++;
			continue;
		}
		d = rdtsc() - t0;
		r->sum += d;
		r->min = d < r->min ? d : r->min;
		r->rounds++;
	}
}

/* Pings to AP k, added to *all. */
static void ping(uint32_t k, uint32_t rounds, struct rtt *all)
{
	struct rtt r = { 0, ~0ull, 0, 0 };

	time_rounds(cpus[k].apic, VEC_PING, rounds, &r);
	tg_printf("TG smp ping cpu=%u rounds=%u lost=%u min_cycles=%llu avg_cycles=%llu\n",
		  k, r.rounds, r.lost, r.rounds ? r.min : 0, r.rounds ? r.sum / r.rounds : 0);
	if (r.lost || cpus[k].pings != rounds)
		fail("ping lost", k);
	all->sum += r.sum;
	all->min = r.min < all->min ? r.min : all->min;
	all->rounds += r.rounds;
	all->lost += r.lost;
}

/* Cycles as microseconds with two decimals. */
static void print_us(const char *key, uint64_t cycles, uint64_t tsc_per_tick)
{
	uint64_t cus = tsc_per_tick ? cycles * 100 * (1000000 / TG_HZ) / tsc_per_tick : 0;

	tg_printf(" %s=%llu.%02llu", key, cus / 100, cus % 100);
}

static void print_rtt(const char *what, const struct rtt *r, uint64_t tsc_per_tick)
{
	tg_printf("TG smp %s", what);
	print_us("rtt_us", r->rounds ? r->sum / r->rounds : 0, tsc_per_tick);
	print_us("min_us", r->rounds ? r->min : 0, tsc_per_tick);
	tg_printf(" rounds=%u lost=%u tsc_per_us=%llu\n", r->rounds, r->lost,
		  tsc_per_tick / (1000000 / TG_HZ));
}

/* The BSP's IPIs to itself (no other vCPU involved: the ICR write's exit,
 * the injection and the EOI's exit), then its pings to every AP. */
static void ping_all(uint32_t rounds, uint64_t tsc_per_tick)
{
	struct rtt self = { 0, ~0ull, 0, 0 }, all = { 0, ~0ull, 0, 0 };

	time_rounds(cpus[bsp].apic, VEC_PONG, rounds, &self);
	print_rtt("self", &self, tsc_per_tick);
	if (self.lost)
		fail("self ipi lost", bsp);
	for (uint32_t k = 0; k < ncpus; k++)
		if (k != bsp && cpus[k].up)
			ping(k, rounds, &all);
	print_rtt("ipi", &all, tsc_per_tick);
}

/* BCASTS broadcasts, each counted by every AP that is up before the next. */
static void broadcast(void)
{
	uint32_t sent;

	for (sent = 1; sent <= BCASTS; sent++) {
		icr(0, SH_OTHERS | ASSERT | DM_FIXED | VEC_BCAST);
		for (uint32_t k = 0; k < ncpus; k++) {
			if (k == bsp || !cpus[k].up || wait_for(&cpus[k].bcasts, sent, IPI_TICKS))
				continue;
			fail("broadcast lost", k);
			goto out;
		}
	}
out:
	tg_printf("TG smp bcast sent=%u\n", sent - 1);
}

static void report(void)
{
	uint32_t up = 0;

	for (uint32_t k = 0; k < ncpus; k++) {
		tg_printf("TG smp cpu=%u apic=%u units=%u\n", k, cpus[k].apic, cpus[k].units);
		if (k != bsp && cpus[k].up && !cpus[k].units)
			fail("ap did no work", k);
		up += k == bsp || cpus[k].up;
	}
	tg_printf("TG smp up=%u of=%u\n", up, ncpus);
}

void mode_smp(void)
{
	uint32_t secs = tg_opt_u32("secs", 2), rounds = tg_opt_u32("pingpong", 200);
	uint64_t tpt = tg_tsc_per_tick();
	const char *src;

	spin = tg_opt_u32("spin", 0);
	x2 = tg_opt_u32("x2apic", 0);
	if (x2 && !(cpuid(1, 0).ecx & CPUID1_X2APIC)) {
		tg_printf("TG WARN smp no x2APIC (CPUID.1:ECX[21]), using the xAPIC\n");
		x2 = false;
	}
	apic_enable(true);
	src = find_cpus();
	if (!src) {
		tg_printf("TG FAIL smp no MP table and no cpus=\n");
		tg_poweroff();
	}
	tg_printf("TG smp cpus=%u src=%s bsp_apic=%u tramp=0x%x x2apic=%u\n", ncpus, src,
		  apic_id(), TRAMP_PA, x2);
	if (apic_id() != cpus[bsp].apic) {
		tg_printf("TG FAIL smp the BSP is not apic=%u\n", cpus[bsp].apic);
		tg_poweroff();
	}
	if (!install_trampoline())
		tg_poweroff();
	if (ncpus < 2) {
		tg_printf("TG FAIL smp one CPU only\n");
		tg_poweroff();
	}
	tg_apic_handler = on_ipi;
	reset_mode = tg_opt_u32("reset", 0);
	reset_ap = bsp == ncpus - 1 ? ncpus - 2 : ncpus - 1;
	for (uint32_t k = 0; k < ncpus; k++)
		if (k != bsp)
			start_ap(k, tpt);
	if (reset_mode) {
		tg_printf("TG smp reset\n");
		reset_go = 1;
		reset_together(bsp);
	}
	run_work(secs);
	ping_all(rounds, tpt);
	broadcast();
	report();
	if (!fails)
		tg_printf("TG PASS smp\n");
	tg_poweroff();
}
