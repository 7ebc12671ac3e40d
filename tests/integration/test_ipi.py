# SPDX-License-Identifier: BSD-2-Clause
"""Issue 13: what a vCPU does with its APIC stays contained.  A guest that
floods IPIs (to absent APIC ids, broadcasts, NMIs to itself, INIT and SIPI
storms; the test guest's `ipiflood` mode) slows only itself: a CPU-bound
guest beside it on the same host CPU keeps its fair share, the shell
answers, and the flooder can be destroyed.  SVM on QEMU only: on Bochs the
measurement would take minutes."""
import re
import time

import pytest

from test_vm import listed, top_rows, wait_console

WINDOW = 6          # seconds of each measurement


def cpu_rates(m, names, secs=WINDOW):
    """Each guest's CPU time per wall-clock second over `secs` (`list`)."""
    c0, t0 = {n: listed(m, n)["cpu"] for n in names}, time.time()
    time.sleep(secs)
    c1, t1 = {n: listed(m, n)["cpu"] for n in names}, time.time()
    return {n: (c1[n] - c0[n]) / (t1 - t0) for n in names}


def flood_progress(m):
    """The flooder's last progress line: (seconds, rounds, self IPIs, NMIs)."""
    _, text = wait_console(m, "flood", r"TG ipi sec=\d+ rounds=\d+ self=\d+ nmi=\d+ x2apic=")
    last = re.findall(r"TG ipi sec=(\d+) rounds=(\d+) self=(\d+) nmi=(\d+) x2apic=", text)[-1]
    return tuple(int(x) for x in last)


def got(row):
    """The part of a runnable vCPU's time in one `top` interval that it ran
    (use against use + steal): both from the same window and the same
    clock, so a loaded build machine that slows QEMU changes neither side
    alone.  0 when it neither ran nor waited."""
    return row["use"] / max(row["use"] + row["steal"], 0.1)


@pytest.mark.parametrize("vcpus,cmdline", [(1, "ipiflood"), (2, "ipiflood sibling=1")],
                         ids=["alone", "sibling"])
def test_ipi_flood_is_contained(machine_factory, vcpus, cmdline):
    """A `work` guest alone on host CPU 1 runs whenever it can (it barely
    waits); beside an `ipiflood` guest of equal weight pinned to the same
    CPU it must run at least 40 % of the time it is runnable and get at
    least 40 % of the two guests' CPU time, both measured in one window
    (its fair share is 50 %; a flooder that took the CPU by its exits or by
    host IPIs would leave it far less).  With two vCPUs the flooder's
    second one is an AP it never starts, parked in wait-for-SIPI and
    flooded with NMIs, IPIs and INITs: it must stay asleep (spinning, it
    would take a third of the CPU).  The shell
    answers, `top` shows the flooder's exits, and once it is destroyed the
    worker has its CPU back: it waits no more than it did alone.

    No rate is compared across windows (a CPU rate per wall second before
    and after varies with the build machine's load): every bound is a
    ratio of times from one `top` or `list` window."""
    m = machine_factory("qemu", cpus=2, mem=256)
    m.cmd('create bench kernel=testguest mem=16 cmdline="work secs=600"')
    m.cmd("start bench")
    assert "on CPU 1" in m.cmd("pin bench 0 1")
    time.sleep(1)
    out = m.cmd("top -n 1", timeout=30)
    alone = top_rows(out)[("bench", 0)]
    assert alone["cpu"] == 1 and alone["use"] > 0 and got(alone) >= 0.9, out

    m.cmd(f'create flood kernel=testguest mem=16 vcpus={vcpus} cmdline="{cmdline}"')
    m.cmd("start flood")
    for v in range(vcpus):
        assert "on CPU 1" in m.cmd(f"pin flood {v} 1")
    wait_console(m, "flood", r"TG ipi sec=2 ")
    sec0, rounds0, self0, nmi0 = flood_progress(m)
    rates = cpu_rates(m, ["bench", "flood"])
    shared = rates["bench"]
    sec1, rounds1, self1, nmi1 = flood_progress(m)
    print(f"bench beside the flooder {shared:.3f}, flooder {rates['flood']:.3f}, "
          f"{rounds1 - rounds0} rounds in {sec1 - sec0} s")
    assert shared > 0 and shared >= 0.4 * (shared + rates["flood"]), rates
    # the flooder is running, not stuck: more rounds, its own IPIs and NMIs
    assert sec1 > sec0 and rounds1 > rounds0, (sec0, sec1, rounds0, rounds1)
    assert self1 > self0 and nmi1 > nmi0, (self0, self1, nmi0, nmi1)

    # the host shell answers during the flood: a shell the flood held
    # would miss m.cmd's 30 s.  A tighter bound is not asserted: a shell
    # command's wall-clock latency on a shared 2-core build machine
    # measures the machine more than ferry.
    for line in ("cpus", "list", "mem"):
        assert m.cmd(line, timeout=30).strip(), line
    out = m.cmd("top -n 1", timeout=30)
    rows = top_rows(out)
    assert rows[("flood", 0)]["cpu"] == rows[("bench", 0)]["cpu"] == 1, out
    assert rows[("flood", 0)]["eps"] >= 1000, out
    assert got(rows[("bench", 0)]) >= 0.4, out
    if vcpus == 2:
        assert rows[("flood", 1)]["use"] < 10, out
    stats = m.cmd("stats flood")
    print(stats)
    assert int(re.search(r"^total\s+(\d+)$", stats, re.M).group(1)) >= 10000, stats

    m.cmd("destroy flood")
    assert "flood" not in [ln.split()[0] for ln in m.cmd("list").splitlines() if ln.strip()]
    assert listed(m, "bench")["state"].startswith("running"), m.cmd("list")
    out = m.cmd("top -n 1", timeout=30)
    rows = top_rows(out)
    assert set(rows) == {("bench", 0)}, out
    assert rows[("bench", 0)]["use"] > 0 and got(rows[("bench", 0)]) >= 0.9, out
    m.cmd("destroy bench")
