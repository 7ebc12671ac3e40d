# SPDX-License-Identifier: BSD-2-Clause
"""Issue 13: a guest with 4 vCPUs starts its application processors
(INIT-SIPI-SIPI through ferry's local APIC), runs a worker on each, pings
each AP with fixed IPIs that it answers and sends broadcasts every AP must
count: the test guest's `smp` mode, which checks all that itself and
prints `TG PASS smp`.  Once with the vCPUs spread as ferry places them,
once all four pinned to one host CPU (the scheduler must run every one,
and a ping-pong there is two vCPU switches).  SVM on QEMU only.

The guest finds its CPUs in the MP table ferry writes for every guest
(no `cpus=` on its command line)."""
import re
import time

import pytest

from test_guest_direct import Guest
from test_vm import listed, top_rows, wait_console

VCPUS = 4
# whole lines only: a line still arriving must not be taken for a result
CPU_LINE = re.compile(r"^TG smp cpu=(\d+) apic=(\d+) units=(\d+)\r?\n", re.M)
END = re.compile(r"^TG (PASS|FAIL) smp[^\n]*\n", re.M)


def run_smp(m, pin_to=None, x2apic=0, secs=3):
    """Create, start (and pin) an `smp` guest; its console once it ended."""
    m.cmd(f'create t kernel=testguest mem=16 vcpus={VCPUS} '
          f'cmdline="smp secs={secs} pingpong=50 x2apic={x2apic}"')
    m.cmd("start t")
    if pin_to is not None:
        for v in range(VCPUS):
            out = m.cmd(f"pin t {v} {pin_to}")
            assert f"on CPU {pin_to}" in out, out
    # pinned: all four on that CPU at once; spread: over both guest CPUs
    # 1 and 2, where placement or, at the latest, the balancer puts them
    want = {pin_to} if pin_to is not None else {1, 2}
    end = time.time() + 30 * getattr(m, "slow", 1)
    while True:
        top = m.cmd("top -n 1")
        print(top)
        where = {top_rows(top)[("t", v)]["cpu"] for v in range(VCPUS)}
        if where == want or time.time() > end:
            break
    assert where == want, top
    _, text = wait_console(m, "t", r"\nTG poweroff\r?\n", timeout=50)
    return text


def check_console(text, rounds=50):
    """The guest's own verdict and every line it is made of; returns the
    units of each vCPU and the mean IPI round trip in µs."""
    assert "TG FAIL" not in text, text
    assert re.search(r"^TG PASS smp\r?\n", text, re.M), text
    assert re.search(rf"^TG smp up={VCPUS} of={VCPUS}\r?\n", text, re.M), text
    cpus = {int(k): (int(a), int(u)) for k, a, u in CPU_LINE.findall(text)}
    assert sorted(cpus) == list(range(VCPUS)), text
    for k, (apic, units) in cpus.items():
        assert apic == k and units > 0, (k, apic, units, text)
    ipi = re.search(r"^TG smp ipi rtt_us=([\d.]+) min_us=[\d.]+ rounds=(\d+) lost=(\d+) "
                    r"tsc_per_us=\d+\r?\n", text, re.M)
    assert ipi, text
    assert int(ipi.group(2)) == rounds * (VCPUS - 1) and int(ipi.group(3)) == 0, ipi.group(0)
    assert re.search(r"^TG smp bcast sent=8\r?\n", text, re.M), text
    return [cpus[k][1] for k in sorted(cpus)], float(ipi.group(1))


def check(m, text):
    units, rtt = check_console(text)
    print(f"units {units}, IPI round trip {rtt} µs")
    # the host is unharmed: the guest is gone, the shell answers, a new guest runs
    assert "powered off" in listed(m, "t")["reason"] + listed(m, "t")["state"], m.cmd("list")
    m.cmd("destroy t")
    m.cmd('create h kernel=testguest mem=16 cmdline="hello"')
    m.cmd("start h")
    wait_console(m, "h", r"\nTG hello from testguest\r?\n", timeout=30)
    m.cmd("destroy h")


@pytest.mark.parametrize("pin_to,x2apic", [(None, 0), (1, 0), (None, 1)],
                         ids=["spread", "one_cpu", "x2apic"])
def test_smp_guest(machine_factory, pin_to, x2apic):
    """Every vCPU comes up and works, every ping gets its answer, every
    broadcast arrives: spread over the host's guest CPUs 1 and 2 (CPU 0
    is the shell's), with all four vCPUs overcommitted on CPU 1, and
    spread with every vCPU's APIC in x2APIC mode (ICR and EOI by WRMSR)."""
    m = machine_factory("qemu", cpus=3, mem=256)
    t0 = time.time()
    text = run_smp(m, pin_to, x2apic)
    print(f"guest finished in {time.time() - t0:.1f} s")
    assert re.search(rf"^TG smp cpus={VCPUS} src=mptable bsp_apic=0 tramp=0x8000 "
                     rf"x2apic={x2apic}\r?\n", text, re.M), text
    check(m, text)


def test_reset_by_an_application_processor_reboots_from_the_bsp(machine_factory):
    """Only an AP pulls the reset line, and then every vCPU halts with
    interrupts off, the BSP first (`smp reset=2`).  The BSP reboots the
    guest into its entry state with the APs waiting for its SIPI.  When
    the AP that pulled the line rebooted the guest itself, the BSP was
    left at the reset vector (no firmware there: the guest stopped), and
    a guest whose every vCPU halted with interrupts off before the reboot
    would have been taken for powered off."""
    m = machine_factory("qemu", cpus=2, mem=256)
    m.cmd(f'create t kernel=testguest mem=16 vcpus={VCPUS} cmdline="smp reset=2"')
    m.cmd("start t")
    m.expect(r"vm t: rebooted \(8\)", timeout=180)
    assert listed(m, "t")["state"].startswith(("running", "rebooting")), m.cmd("list")
    m.cmd("destroy t", timeout=30)


def test_smp_direct_qemu():
    """The reference: the same ELF directly on QEMU (TCG, -smp 4), where
    the CPUs come from SeaBIOS's ACPI MADT (no cpus= given)."""
    g = Guest("smp secs=2 pingpong=50", extra=("-smp", str(VCPUS)))
    try:
        status, lines = g.finish(timeout=50)
    finally:
        g.close()
    text = "\n".join(lines) + "\n"
    assert status == 1 and lines[-1] == "TG poweroff", text
    assert re.search(rf"^TG smp cpus={VCPUS} src=madt ", text, re.M), text
    units, rtt = check_console(text)
    print(f"units {units}, IPI round trip {rtt} µs")


def test_reset_storm_leaves_the_host_unharmed(machine_factory):
    """Every vCPU of a 4-vCPU guest pulls the reset line at the same
    moment, again after each reboot (`smp reset=1`).  One of them reboots
    the guest and the others leave it (once two vCPUs each waited for the
    other for ever, and the host CPUs with them).  Meanwhile the operator's
    pause either takes or is refused because the guest is rebooting, and
    destroy ends it."""
    m = machine_factory("qemu", cpus=3, mem=256)
    m.cmd(f'create t kernel=testguest mem=16 vcpus={VCPUS} cmdline="smp reset=1"')
    m.cmd("start t")
    m.expect(r"vm t: rebooted \(4\)", timeout=120)
    for _ in range(6):
        out = m.cmd("pause t", timeout=30)
        assert re.search(r"paused t|cannot pause 't': it is rebooting", out), out
        if "paused t" in out:
            # a vCPU still in its exit may reboot the paused guest: it is
            # then "rebooting" for a moment, and resume waits for that
            for _ in range(20):
                out = m.cmd("resume t", timeout=30)
                if "resumed t" in out:
                    break
                assert "cannot resume 't': it is rebooting" in out, out
                time.sleep(0.2)
            assert "resumed t" in out, out
    m.expect(r"vm t: rebooted \(16\)", timeout=180)
    assert listed(m, "t")["state"].startswith(("running", "rebooting")), m.cmd("list")
    m.cmd("destroy t", timeout=30)
    assert "t " not in m.cmd("list")
    m.cmd('create h kernel=testguest mem=16 cmdline="hello"')
    m.cmd("start h")
    wait_console(m, "h", r"\nTG hello from testguest\r?\n", timeout=30)
