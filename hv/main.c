/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kmain(): the boot CPU's path from GRUB's hand-over to the shell.  Each
 * step logs what it found; a step that cannot go on says why and stops.
 */
#include <stdint.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "arch/x86/percpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/task.h"
#include "boot/mb2info.h"
#include "arch/x86/acpi.h"
#include "hv/console.h"
#include "hv/cpuid.h"
#include "hv/sched.h"
#include "hv/vmm.h"
#include "hv/lib/log.h"
#include "hv/mm/memory.h"
#include "hv/modules.h"
#include "hv/migrate/migrate.h"
#include "hv/gnet.h"
#include "hv/netif.h"
#include "hv/lib/panic.h"
#include "hv/shell/parse.h"
#include "hv/shell/repl.h"
#include "hv/lib/time.h"
#include "arch/x86/time.h"
#include "drivers/rtc.h"
#include "hv/version.h"
#include "hv/crypto/crypto.h"
#include "hv/migrate/migrate.h"

void kmain(uint32_t magic, uint32_t info_pa);

static struct mb2_info boot_info;
static struct mb2_cmdline boot_cmdline;

static void log_to_console(const char *s, size_t n)
{
	console_write(s, n);
}

static void console_irq(struct trap_frame *tf)
{
	(void)tf;
	console_poll();	/* room to transmit; the shell loop reads the bytes */
	apic_eoi();
}

/* Each CPU: turn virtualisation on, then run the guests placed on it. */
static void enable_guests_here(void)
{
	if (vmm_cpu_enable() == 0)
		sched_enable_cpu();
}

static void ap_start(void)
{
	vmm_detect_this_cpu();
	cpu_mark_online();
	enable_guests_here();
	sched_loop();
}

/* Guests see a fixed CPUID baseline: this host must have all of it. */
static void check_baseline(void)
{
	struct cpuid_regs l1 = cpuid(1, 0), x1 = cpuid(0x80000001, 0);
	uint32_t host[4] = { l1.ecx, l1.edx, x1.ecx, x1.edx }, miss[4];

	cpuid_baseline_missing(host, miss);
	if (miss[0] | miss[1] | miss[2] | miss[3])
		pr_warn("cpuid: this CPU lacks part of the guests' baseline (1.ecx %#x 1.edx %#x "
			"ext.ecx %#x ext.edx %#x): guests may fault", miss[0], miss[1], miss[2], miss[3]);
}

static void parse_boot_info(uint32_t info_pa)
{
	int err = mb2_parse(phys_to_virt(info_pa), EARLY_MAP_LIMIT - info_pa, &boot_info);

	if (err)
		panic("boot: bad multiboot2 information: %s", boot_info.errmsg);
	mb2_parse_cmdline(boot_info.cmdline, &boot_cmdline);
	if (console_init(boot_cmdline.console_port, boot_cmdline.console_baud))
		pr_warn("boot: console: no UART answers at port %#x: the console stays at %#x",
			boot_cmdline.console_port, console_port());
	log_set_level(boot_cmdline.loglevel);
	pr_info("ferry %s (git %s) booting; loader '%s', command line '%s'", ferry_version,
		ferry_gitrev, boot_info.loader_name ? boot_info.loader_name : "?",
		boot_info.cmdline ? boot_info.cmdline : "");
	for (uint32_t i = 0; i < boot_cmdline.nr_warn; i++)
		pr_warn("boot: command line: %s", boot_cmdline.warn[i]);
	for (uint32_t i = 0; i < boot_info.nr_modules; i++) {
		const struct mb2_module *m = &boot_info.modules[i];
		modules_add(m->start, m->end, m->cmdline ? m->cmdline : "");
	}
}

static void setup_memory(uint32_t info_pa)
{
	struct mem_stats s;
	int err = mem_init(&boot_info, info_pa);

	if (err)
		panic("boot: cannot set up memory (error %d): no usable memory map?", err);
	mem_get_stats(&s);
	pr_info("memory: %lu MiB usable, %lu MiB free, heap %lu MiB", s.total >> 20,
		s.free >> 20, s.heap_size >> 20);
}

static void setup_acpi(void)
{
	int err = acpi_init(boot_info.rsdp, boot_info.rsdp_len);
	const struct acpi_info *a = acpi_get();

	if (err)
		pr_warn("acpi: no usable ACPI tables (error %d): one CPU, no power-off", err);
	else
		pr_info("acpi: %u CPUs, I/O APIC %s, power-off %s", a->n_cpus,
			a->ioapic_pa ? "present" : "absent", a->s5_valid ? "via S5" : "unavailable");
}

static void setup_console_irq(void)
{
	uint16_t port = console_port();
	unsigned int irq = (port == 0x2f8 || port == 0x2e8) ? 3 : 4;

	irq_register(VEC_IRQ_BASE + irq, console_irq);
	ioapic_route_isa(irq, VEC_IRQ_BASE + irq, this_cpu()->apic_id);
	console_enable_irq();
}

static void report_cpus(void)
{
	char feat[128];

	virt_describe(&cpus[0].caps, feat, sizeof(feat));
	pr_info("cpus: %u of %u online; virtualization: %s", cpus_online(), cpu_count, feat);
	if (cpus[0].caps.kind == VIRT_NONE || !cpus[0].caps.usable)
		pr_warn("cpus: no usable hardware virtualization: guests cannot run on this machine");
}

/* What the shell CPU does between keystrokes. */
static enum repl_work shell_cpu_work(void)
{
	enum mig_in_work in;
	enum task_poll bg;

	console_poll();
	netif_poll();
	in = mig_in_poll();
	bg = task_run_all();		/* background migrations out */
	mig_doubt_poll(host_if.present ? &host_if.stack : NULL, !repl_in_command());
	if (!repl_in_command())
		vm_watch_poll();	/* between commands: those may be using a guest */
	if (sched_poll() || in == MIG_IN_BUSY || bg == TASK_SOME_BUSY || gnet_tx_backlog())
		return REPL_BUSY;	/* (a 1-CPU host's guest can run; guests'
					 * frames wait for the wire: polled) */
	return in == MIG_IN_WAITING || bg == TASK_ALL_WAIT ? REPL_WAIT_NET : REPL_IDLE;
}

static void setup_network(void)
{
	char err[128];
	uint32_t ip, gw = 0;
	unsigned int len;

	if (netif_init(boot_cmdline.nic) || !boot_cmdline.ip[0])
		return;
	if (parse_ipv4_prefix(boot_cmdline.ip, &ip, &len) ||
	    (boot_cmdline.gw[0] && parse_ipv4(boot_cmdline.gw, &gw)))
		pr_err("net: ip=%s gw=%s from the command line: not ADDR/LEN and ADDR",
		       boot_cmdline.ip, boot_cmdline.gw);
	else if (netif_configure(ip, len, gw, err, sizeof(err)))
		pr_err("net: ip=%s from the command line: %s", boot_cmdline.ip, err);
}

void kmain(uint32_t magic, uint32_t info_pa)
{
	percpu_setup(0);
	time_init();
	console_init(0x3f8, 115200);
	log_set_sink(log_to_console);
	pic_disable();
	idt_init();
	idt_load();
	if (magic != 0x36d76289)
		panic("boot: not started by a multiboot2 loader (magic %#x)", magic);
	parse_boot_info(info_pa);
	setup_memory(info_pa);
	setup_acpi();
	if (host_rtc_init(acpi_get()->century_reg))
		pr_warn("rtc: the host's CMOS clock is unreadable: guests' clocks start at a fixed date");
	cpu_init_this();
	vmm_detect_this_cpu();
	cpu_mark_online();
	apic_calibrate();
	sched_init();
	if (vmm_init() == 0) {
		enable_guests_here();
		check_baseline();
	}
	smp_start(ap_start);
	setup_console_irq();
	report_cpus();
	mig_identity_init(crypto_selftest() == 0);
	pr_info("boot: ready in %lu ms", time_now_us() / 1000);
	setup_network();
	repl_set_background(shell_cpu_work);
	repl_run_boot_script();
	repl_loop();
}
