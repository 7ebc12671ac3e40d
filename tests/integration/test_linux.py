# SPDX-License-Identifier: BSD-2-Clause
"""Issue: a stock Debian kernel runs under ferry.  Debian 12's own
linux-image-amd64 (fetched by tools/fetch-linux.sh, not rebuilt) with a
busybox initramfs boots to its shell on SVM, and the operator talks to it
through `console`.  Bad images are refused at `create` and change nothing.

Linux runs as on a small PC: its local APIC (x2APIC, TSC-deadline timer)
and I/O APIC found in ferry's MP table, kvmclock as its clock, the TSC rate
from CPUID; the command line holds nothing ferry-specific."""

import os
import re
import subprocess
import time

import pytest

from ferry_harness import BUILD, PROMPT, ROOT
from test_boot_shell import make_iso

LINUX = os.path.join(BUILD, "linux")
CMDLINE = "console=ttyS0 reboot=k quiet"
SHELL = "linux# "


@pytest.fixture(scope="module")
def linux_iso(tmp_path_factory):
    subprocess.run([os.path.join(ROOT, "tools", "fetch-linux.sh"), LINUX], check=True,
                   timeout=900)
    tmp = tmp_path_factory.mktemp("linux")
    kernel = tmp / "vmlinuz"
    kernel.write_bytes(open(os.path.join(LINUX, "vmlinuz"), "rb").read())
    initrd = tmp / "initrd"
    initrd.write_bytes(open(os.path.join(LINUX, "initrd"), "rb").read())
    short = tmp / "short"
    short.write_bytes(open(os.path.join(LINUX, "vmlinuz"), "rb").read()[:200000])
    arm = tmp / "armelf"                # an ELF header for AArch64 (machine 183)
    arm.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + (183).to_bytes(2, "little") + bytes(44))
    return make_iso(tmp, guests=[str(kernel), str(initrd), str(short), str(arm)])


def talk(m, line, timeout=60):
    """Run a line in the attached guest shell; what it printed (the shell's
    echo of a long line wraps, so the end is found by a marker that only
    the output, not the echo, spells)."""
    m.send(line + "; echo @@E''ND\r")
    m.expect(r"\n@@END", timeout=timeout)
    start = m.pos
    m.expect(SHELL, timeout=timeout)
    text = m.buf[:start]
    return text[text.rfind("@@E''ND"):]


def to_shell(m, slow=1, more="", vcpus=1):
    """Create and start guest lx from Debian's kernel (256 MiB, `vcpus`
    vCPUs; `more` added to its command line), attach to its console and wait
    for its shell; timeouts times `slow`."""
    out = m.cmd(f'create lx kernel=vmlinuz initrd=initrd mem=256 vcpus={vcpus} '
                f'cmdline="{CMDLINE}{more}"', timeout=30 * slow)
    assert "error" not in out, out
    m.cmd("start lx", timeout=30 * slow)
    m.send("console lx\r")
    m.expect(r"escape character is \^\]\)", timeout=30 * slow)
    m.expect("FERRY-LINUX: init ready", timeout=180 * slow)
    m.expect(SHELL, timeout=60 * slow)


DMESG_BAD = ("dmesg | grep -i -e 'kernel panic' -e oops -e 'WARNING:' -e 'soft lockup' "
             "-e 'self-detected stall' -e 'rcu.*stall' -e 'unchecked MSR' "
             "-e 'clocksource.*unstable' -e 'TSC unstable' -e 'TSC warp' -e 'skew is too large'"
             " | grep -v 'command line'")


def dmesg_faults(m, timeout=60):
    """The lines of dmesg the issues forbid: panics, oopses, warnings,
    lockups, stalls, unknown MSRs, and a clock found to disagree (TSCs apart
    at bring-up, the TSC drifting from kvm-clock).

    One clocksource message is let pass. The watchdog reads kvm-clock, the
    TSC and kvm-clock again with interrupts off, and when each of its few
    tries (ilog2 of the CPUs + 1 in this kernel; not tunable) spans over
    ~100 us it gives up: "read-back delay of N ns, attempt K, marking
    unstable", then "Marking TSC unstable due to clocksource watchdog".
    Under TCG, where every RDTSC here exits and more emulated CPUs than
    host cores run, the host deschedules a QEMU thread for milliseconds
    (seen in CI: 1248206 ns). That is a reading that could not be taken, not
    a clock that disagrees; Linux keeps kvm-clock. A skew it did measure
    ("skew is too large") and a warp at bring-up still count."""
    out = talk(m, DMESG_BAD, timeout=timeout)
    lines = re.findall(r"^\[ *\d+\.\d+\].*", out, re.M)
    if any("read-back delay" in line and "marking unstable" in line for line in lines):
        lines = [line for line in lines
                 if not ("read-back delay" in line and "marking unstable" in line)
                 and "Marking TSC unstable due to clocksource watchdog" not in line]
    return lines


def scan_dmesg(m, timeout=60):
    """dmesg holds none of the messages the issues forbid."""
    bad = dmesg_faults(m, timeout)
    assert not bad, "\n".join(bad)


def test_debian_kernel_boots_to_its_shell(machine_factory, linux_iso):
    m = machine_factory("qemu", cpus=2, mem=512, iso=linux_iso)
    to_shell(m)
    uname = talk(m, "uname -a")
    assert re.search(r"Linux \S+ 6\.1\.\S+-amd64 .* x86_64", uname), uname
    cpu = talk(m, "grep -m1 'model name' /proc/cpuinfo")
    assert "ferry virtual CPU" in cpu, cpu
    # the guest's CPU says what this host's (AMD) does of Meltdown, RDCL_NO
    # in IA32_ARCH_CAPABILITIES: Linux runs without page-table isolation
    melt = talk(m, "cat /sys/devices/system/cpu/vulnerabilities/meltdown")
    assert "Not affected" in melt, melt
    # sleep 1 takes about a second by the guest's clock and the host's
    t0 = time.time()
    timed = talk(m, "cut -d' ' -f1 /proc/uptime; sleep 1; cut -d' ' -f1 /proc/uptime")
    up = [float(x) for x in re.findall(r"^(\d+\.\d+)$", timed, re.M)]
    assert len(up) == 2 and 0.9 <= up[1] - up[0] < 3, timed
    assert time.time() - t0 < 20
    scan_dmesg(m)
    # the time of day from the CMOS clock, within a few seconds of the host's
    guest_now = int(re.search(r"^(\d{9,})$", talk(m, "date +%s"), re.M).group(1))
    assert abs(guest_now - time.time()) < 30, guest_now
    # the CMOS clock's interrupts (rtc-cmos on IRQ 8) as hwclock waits for
    # them: update interrupts turned on by ioctl, each at a second's edge
    rtc = talk(m, "rtcwait 3; grep rtc0 /proc/interrupts")
    waited = re.search(r"rtcwait: 3 interrupts, (\d+) ms", rtc)
    assert waited and 1500 <= int(waited.group(1)) <= 6000, rtc
    fired = re.search(r"^\s*8:\s+(\d+)\s+IO-APIC\s+8-edge\s+rtc0", rtc, re.M)
    assert fired and int(fired.group(1)) >= 3, rtc
    irqs = talk(m, "cat /proc/interrupts")
    assert re.search(r"IO-APIC\s+4-edge\s+ttyS0", irqs), irqs
    assert int(re.search(r"LOC:\s+(\d+)", irqs).group(1)) > 0, irqs
    clock = talk(m, "cat /sys/devices/system/clocksource/clocksource0/current_clocksource")
    assert "kvm-clock" in clock, clock
    # reboot -f restarts the guest from its kernel, the console still attached
    m.send("reboot -f\r")
    m.expect("FERRY-LINUX: init ready", timeout=180)
    m.expect(SHELL, timeout=60)
    m.send(b"\x1d")
    m.expect("Disconnected from lx", timeout=30)
    m.expect(PROMPT, timeout=30)
    assert re.search(r"^lx\s+running", m.cmd("list"), re.M)
    assert re.search(r"reboots:\s+1$", m.cmd("info lx"), re.M)
    # poweroff -f (no ACPI: every CPU halts with interrupts off) stops it
    m.send("console lx\r")
    m.expect(r"escape character is \^\]\)", timeout=30)
    m.send("\r")
    m.expect(SHELL, timeout=30)
    m.send("poweroff -f\r")
    m.send(b"\x1d")
    m.expect(PROMPT, timeout=30)
    deadline = time.time() + 60
    while "stopped" not in m.cmd("list") and time.time() < deadline:
        time.sleep(1)
    assert re.search(r"^lx\s+stopped .*powered off", m.cmd("list"), re.M), m.cmd("list")
    m.cmd("destroy lx")
    assert "lx" not in m.cmd("list")


BAD = [
    ("kernel=short initrd=initrd mem=64", r"'short' cannot boot: truncated"),
    ("kernel=armelf mem=64", r"an ELF file for another architecture"),
    ("kernel=vmlinuz initrd=initrd mem=24", r"the kernel runs at \d+ MiB and needs \d+ MiB "
                                            r"there: more RAM than the guest has"),
    ("kernel=vmlinuz initrd=nosuch mem=64", r"no module named 'nosuch' for the initrd"),
    ("kernel=testguest initrd=initrd mem=16", r"initrd= is for Linux kernels"),
]


def test_bad_linux_images_are_refused(machine_factory, linux_iso):
    """A truncated kernel, a kernel for another architecture, an initrd that
    does not fit, a missing initrd, an initrd for a multiboot kernel: each
    refused with its reason, no guest left, all memory back."""
    m = machine_factory("qemu", cpus=1, mem=256, iso=linux_iso)
    free = re.search(r"free:\s+(\d+) KiB", m.cmd("mem")).group(1)
    # RAM where the kernel fits (it runs at pref_address and needs init_size
    # there: boot protocol header at 0x258 and 0x260) and leaves less than
    # the initrd beside it
    hdr = open(os.path.join(LINUX, "vmlinuz"), "rb").read(0x264)
    end = int.from_bytes(hdr[0x258:0x260], "little") + int.from_bytes(hdr[0x260:0x264], "little")
    mem_mb = -(-end >> 20)
    assert (mem_mb << 20) - end < os.path.getsize(os.path.join(LINUX, "initrd"))
    bad = BAD + [(f"kernel=vmlinuz initrd=initrd mem={mem_mb}",
                  r"the initrd \(\d+ KiB\) does not fit in the guest's RAM beside the kernel")]
    for args, reason in bad:
        out = m.cmd(f"create bad {args}")
        assert re.search(r"error: create: .*(" + reason + ")", out), out
        assert not re.search(r"^bad ", m.cmd("list"), re.M)
        assert re.search(r"free:\s+" + free + " KiB", m.cmd("mem")), "memory not returned"


def test_linux_with_four_vcpus(machine_factory, linux_iso):
    """Issue 13: a 4-vCPU Debian guest on a 3-CPU host (two CPUs for
    guests: overcommitted) finds its CPUs in the MP table, starts them by
    INIT-SIPI-SIPI, and runs work on all of them: IPIs for rescheduling,
    function calls and TLB shootdowns flow, and no stall or lockup shows."""
    m = machine_factory("qemu", cpus=3, mem=512, iso=linux_iso)
    # with a TSC of 1.5 GHz on QEMU's ~2.1 GHz: every vCPU's RDTSC exits and
    # ferry answers with the scaled TSC (hv/tsc.h); Linux must see one rate
    # everywhere, its TSCs in step, and time pass at the right pace
    out = m.cmd(f'create smp kernel=vmlinuz initrd=initrd mem=256 vcpus=4 tsc_khz=1500000 '
                f'cmdline="{CMDLINE}"')
    assert "error" not in out, out
    m.cmd("start smp")
    m.send("console smp\r")
    m.expect(r"escape character is \^\]\)", timeout=30)
    m.expect("FERRY-LINUX: init ready", timeout=240)
    m.expect(SHELL, timeout=60)
    assert re.search(r"^4$", talk(m, "nproc"), re.M)
    detected = talk(m, "dmesg | grep 'tsc: Detected'")
    assert re.search(r"tsc: Detected 1(499\.99|500\.00)\d MHz", detected), detected
    t0 = time.time()
    up = talk(m, "cut -d' ' -f1 /proc/uptime; sleep 2; cut -d' ' -f1 /proc/uptime")
    took = time.time() - t0
    a, b = [float(x) for x in re.findall(r"^(\d+\.\d+)$", up, re.M)]
    assert 2 <= b - a < 3 and b - a <= took + 0.1, (up, took)
    talk(m, "for i in 1 2 3 4; do (dd if=/dev/zero bs=1M count=16 2>/dev/null | sha256sum "
            ">/dev/null) & done; wait", timeout=240)
    irqs = talk(m, "grep -e LOC -e RES -e CAL -e TLB /proc/interrupts")
    counts = {k: [int(x) for x in re.search(k + r":((?:\s+\d+){4})", irqs).group(1).split()]
              for k in ("LOC", "RES", "CAL", "TLB")}
    assert all(n > 0 for n in counts["LOC"]), irqs          # every CPU's timer runs
    assert sum(counts["RES"]) + sum(counts["CAL"]) + sum(counts["TLB"]) > 0, irqs
    scan_dmesg(m)
    m.send(b"\x1d")
    m.expect(PROMPT, timeout=30)
    info = m.cmd("info smp")
    assert len(re.findall(r"^vcpu \d:\s+on CPU [12],", info, re.M)) == 4, info
    assert re.search(r"^tsc:\s+1500000 kHz, scaled on RDTSC exits", info, re.M), info
    stats = m.cmd("stats smp")
    rdtsc = re.search(r"^rdtsc\s+(\d+)$", stats, re.M)
    assert rdtsc and int(rdtsc.group(1)) > 1000, stats
    # the stock kernel took KVM's PV EOI: most interrupts end with no exit
    pv = re.search(r"ended by PV EOI \(no exit\): (\d+)", stats)
    assert pv and int(pv.group(1)) > 1000, stats
    m.cmd("destroy smp")


def test_guest_panic_leaves_the_host_unharmed(machine_factory, linux_iso):
    """A forced panic (sysrq c) in a Linux guest: the guest's kernel says so
    on its console and reports it through pvpanic (its initramfs loaded
    pvpanic-pci), ferry logs it and stops the guest with the reason "panic";
    the host's shell answers, other guests go on, and the panicked guest is
    destroyed with all its memory back.  It runs with panic=1, where the
    report comes before Linux's reboot timer: the guest stops all the same
    (no reboot).
    A panic before the initramfs loads pvpanic-pci (no init, no root file
    system) is seen by the last line of its report on the console."""
    m = machine_factory("qemu", cpus=2, mem=512, iso=linux_iso)
    free = re.search(r"free:\s+(\d+) KiB", m.cmd("mem")).group(1)
    m.cmd('create other kernel=testguest mem=16 cmdline="heartbeat"')
    m.cmd("start other")
    # with panic=1 Linux would reset itself a second after the panic
    # notifiers ran (the keyboard controller, reboot=k): pvpanic's comes
    # first and the guest stays stopped, so the panic is not hidden
    to_shell(m, more=" panic=1")
    drivers = talk(m, "ls /sys/bus/pci/drivers/pvpanic-pci/")
    assert "0000:00:02.0" in drivers, drivers
    m.send("echo c > /proc/sysrq-trigger\r")
    m.expect(r"Kernel panic - not syncing: sysrq triggered crash", timeout=60)
    m.expect(r"vm lx: the guest's kernel panicked \(pvpanic\)", timeout=60)
    time.sleep(3)
    m.send(b"\x1d")
    m.expect("Disconnected from lx", timeout=30)
    m.expect(PROMPT, timeout=30)
    assert "ferry" in m.cmd("version")
    listing = m.cmd("list")
    assert re.search(r"^lx\s+stopped\s.*\s\spanic \(reported through pvpanic\)", listing,
                     re.M), listing
    info = m.cmd("info lx")
    assert "stopped:    panic (reported through pvpanic)" in info, info
    assert re.search(r"reboots:\s+0$", info, re.M), info
    assert re.search(r"^pvpanic:\s+at pci:00:02\.0, 0 crash-kernel loads reported$", info,
                     re.M), info
    # the other guest's heartbeat goes on
    ticks = []
    for _ in range(2):
        m.send("console other\r")
        m.expect(r"escape character is \^\]\)", timeout=30)
        start = m.pos
        m.drain_quiet(1.5, 10)
        # the trailing space: the read may end inside the number being printed
        ticks += [int(x) for x in re.findall(r"TG hb tick=(\d+) ", m.buf[start:])]
        m.send(b"\x1d")
        m.expect(PROMPT, timeout=30)
        time.sleep(2)
    assert len(ticks) >= 2 and ticks[-1] > ticks[0], ticks
    m.cmd("destroy lx")
    m.cmd(f'create lx kernel=vmlinuz initrd=initrd mem=256 '
          f'cmdline="{CMDLINE} rdinit=/none root=/dev/none"')
    m.cmd("start lx")
    m.expect(r"vm lx: the guest's kernel panicked \(seen on its console\): VFS: Unable to "
             r"mount root fs on ", timeout=180)
    m.expect(PROMPT, timeout=30)
    info = m.cmd("info lx")
    assert "stopped:    panic (seen on its console): VFS: Unable to mount root fs" in info, info
    assert re.search(r"reboots:\s+0$", info, re.M), info
    m.cmd("destroy lx")
    m.cmd("destroy other")
    assert m.cmd("list").count("\n") <= 2, m.cmd("list")
    assert re.search(r"free:\s+" + free + " KiB", m.cmd("mem")), "memory not returned"
