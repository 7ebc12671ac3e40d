# SPDX-License-Identifier: BSD-2-Clause
"""The scheduler's figures (issue 13), `python3 tests/bench/run.py sched`.

One QEMU host with 3 CPUs (CPU 0 runs the shell, CPUs 1 and 2 guests);
every test guest is pinned to CPU 1 (`pin NAME 0 1`) so that the guests
under test share one CPU. Figures are printed, never asserted:

fairness  two test guests in the `share` mode (CPU-bound work in short
          chunks timed by the TSC) at weights 256:256, 512:256, 1024:256;
          their chunk rates over the same seconds of their own clocks
          (seconds 3 to the last both printed, after pin and weights took
          hold): measured ratio and |measured / expected - 1|.
jitter    `heartbeat every=1` (a line per 10 ms PIT tick, with the TSC)
          alone on the CPU and beside 3 `work` hogs on it, alternated; the
          99th percentile of |TSC between two lines - ticks x 10 ms|.  And
          `every=10` beside the hogs: a line's serial output costs some
          4.6 ms of its CPU under TCG, so every=1 wants half a CPU, more
          than its fair share beside 3 hogs, and drops ticks for want of
          credit; a line every 100 ms is the light guest whose wake-up
          latency the figure is about.
ipi       `ipiflood sibling=1` with 2 vCPUs (vCPU 0 on CPU 1): 9 ICR
          writes a round, 3 of them to the sibling vCPU, which is parked in
          wait-for-SIPI; µs per IPI = 1 s / (rounds per second x 9), xAPIC
          and x2APIC seconds apart: the sender's whole cost, its exit
          included, no receiver.
exit      `exits n=200000` on the same CPU: µs per CPUID exit round trip.
switch    `smp cpus=2 pingpong=1000` with 2 vCPUs (the test guest starts
          its AP; see guest/testguest/README.md): the BSP sends a fixed IPI
          to the AP and halts, the AP (halted too) answers with one, the
          guest times each round trip by its TSC.  vCPUs pinned to CPUs 1
          and 2, both to CPU 1, (spin=1, both spinning instead of halting)
          to CPUs 1 and 2, and (x2apic=1) to CPUs 1 and 2 and both to CPU
          1 again, alternated, 3 rounds.  On one CPU every
          round trip is two vCPU switches (the halting sender out, the
          woken receiver in, and back), so a switch costs about
          (round trip on one CPU - round trip on two) / 2; but on two CPUs
          a halted vCPU is switched in too (from its CPU's idle loop,
          after a host IPI), so a second figure: (round trip on one CPU) / 2
          - the BSP's IPI to itself (ICR exit, injection, EOI exit, no
          other vCPU) - one exit round trip (the HLT).
parallel  Debian's kernel (the busybox initramfs of run.py linux), 1 and 2
          vCPUs, unpinned on CPUs 1-2, alternated: two sha256sum of 32 MiB
          in tmpfs at once, host wall clock; the 1-vCPU time over the
          2-vCPU time (aim >= 1.8).  Another host, its ISO carrying the
          kernel; skipped if build/linux is not fetched.

Alone: `python3 tests/bench/sched_bench.py [fairness] [jitter] [ipi] [parallel]`
(`ipi` is ipi, exit and switch).
"""
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))

from ferry_harness import Machine
from migrate_bench import beats, console_text

GUEST_CPU = 1
SHARE_LINE = re.compile(r"TG share sec=(\d+) tsc=(\d+) chunks=(\d+) run=(\d+) exit=(\d+) "
                        r"exits=(\d+) away=(\d+) aways=(\d+)")
FIRST_SEC = 3           # pin and weights are set within a second of start


def run_pinned(m, name, cmdline, vcpus=1, cpu=GUEST_CPU):
    m.cmd(f'create {name} kernel=testguest mem=16 vcpus={vcpus} cmdline="{cmdline}"')
    m.cmd(f"start {name}")
    out = m.cmd(f"pin {name} 0 {cpu}")
    assert f"on CPU {cpu}" in out, out


def share_window(text):
    """A share guest's lines: {second: [tsc, chunks, run, exit, exits, away, aways]}."""
    return {int(r[0]): [int(x) for x in r[1:]] for r in SHARE_LINE.findall(text)}


def share_lines(m, name):
    """Its lines, once it printed more than FIRST_SEC (None after 10 s more:
    a guest that got next to no CPU)."""
    for _ in range(5):
        rows = share_window(console_text(m, name))
        if len(rows) > FIRST_SEC + 1:
            return rows
        time.sleep(2)
    print(f"  ({name}: only seconds {sorted(rows)} printed)")
    return None


def share_delta(rows, last):
    """Seconds FIRST_SEC..last: cycles, chunks, busy share (chunks and the
    guest's own exits), long gaps a second."""
    a, b = rows[FIRST_SEC], rows[last]
    tsc, chunks = b[0] - a[0], b[1] - a[1]
    busy = (b[2] + b[3]) - (a[2] + a[3])
    return {"tsc": tsc, "chunks": chunks, "busy": busy / tsc,
            "aways": (b[6] - a[6]) / (last - FIRST_SEC)}


def share_run(m, weights, secs=9):
    """Guests of the given weights, all pinned to GUEST_CPU, `secs` seconds."""
    names = [f"s{i}" for i in range(len(weights))]
    for n in names:
        run_pinned(m, n, "share")
    for n, w in zip(names, weights):
        m.cmd(f"sched {n} weight={w}")
    time.sleep(secs)
    rows = [share_lines(m, n) for n in names]
    info = [m.cmd(f"info {n}") + m.cmd(f"stats {n}") for n in names] if None in rows else []
    for n in names:
        m.cmd(f"destroy {n}")
    if info:
        print("  a guest starved, weights %s:\n%s" % (weights, "\n".join(info)))
        return None
    last = min(max(r) for r in rows)
    return [share_delta(r, last) for r in rows]


def fairness(m, ratios=(1, 2, 4), rounds=3):
    res = {k: [] for k in ratios}
    for _ in range(rounds):
        for k in ratios:
            run = share_run(m, [256 * k, 256])
            if run:
                res[k].append(run)
    print("fairness: two `share` guests pinned to one host CPU, weights k*256:256,"
          " chunk rates over the same seconds, %d rounds alternated:" % rounds)
    for k, runs in res.items():
        if not runs:
            print(f"  {k}:1 no run where both guests printed")
            continue
        got = [(a["chunks"] / a["tsc"]) / (b["chunks"] / b["tsc"]) for a, b in runs]
        print(f"  {k}:1 measured " + ", ".join(f"{g:.3f} (error {abs(g / k - 1) * 100:.1f}%)"
                                               for g in got)
              + f"; median {statistics.median(got):.3f}, error"
              f" {abs(statistics.median(got) / k - 1) * 100:.1f}%")
        for a, b in runs:
            print(f"      seen from inside: CPU shares {a['busy']:.3f} / {b['busy']:.3f},"
                  f" {a['aways'] + b['aways']:.1f} long gaps a second (switches and the host's"
                  f" own stalls), {(1 - a['busy'] - b['busy']) * 100:.1f}% of the CPU lost")


def hb_jitter(m, hz, hogs, secs=8, every=1):
    run_pinned(m, "hb", f"heartbeat every={every}")
    for i in range(hogs):
        run_pinned(m, f"hog{i}", "work secs=600")
    time.sleep(2)
    text = console_text(m, "hb", seconds=secs)
    for n in ["hb"] + [f"hog{i}" for i in range(hogs)]:
        m.cmd(f"destroy {n}")
    hb = beats(text)        # whole lines only: the console may be left mid-line
    errs = [abs((c1 - c0) / hz - (t1 - t0) * 0.01) for (t0, c0), (t1, c1) in zip(hb, hb[1:])]
    errs.sort()
    (t0, c0), (t1, c1) = hb[0], hb[-1]
    mean = (c1 - c0) / hz / (t1 - t0)
    return errs[int(0.99 * (len(errs) - 1))], errs[len(errs) // 2], len(errs), mean


def jitter(m, hz, rounds=2):
    res = {0: [], 3: [], "light": []}
    for _ in range(rounds):
        for hogs in (0, 3):
            res[hogs].append(hb_jitter(m, hz, hogs))
        res["light"].append(hb_jitter(m, hz, 3, secs=20, every=10))
    print("heartbeat jitter: `heartbeat every=1` (10 ms), |line spacing - ticks x 10 ms|,"
          " %d alternated rounds of 8 s:" % rounds)
    for hogs, rows in res.items():
        what = ("alone on its CPU" if not hogs else
                f"beside {hogs} CPU hogs on its CPU" if hogs != "light" else
                "`every=10` (a line a 100 ms: a light guest, where every=1's lines cost"
                " it half a CPU under TCG), 20 s beside 3 hogs")
        print(f"  {what}: p99 " + ", ".join(f"{p * 1e3:.2f} ms (median {q * 1e3:.2f},"
                                             f" {n} gaps, mean tick {t * 1e3:.2f} ms)"
                                             for p, q, n, t in rows))


def finished(m, name, done, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        text = console_text(m, name)
        if re.search(done, text):
            m.cmd(f"destroy {name}")
            return text
        time.sleep(1)
    raise RuntimeError(f"{name}: no {done!r}")


def ipi_and_exit(m):
    run_pinned(m, "ipi", "ipiflood sibling=1 secs=7", vcpus=2)
    text = finished(m, "ipi", r"TG ipi done")
    rows = [tuple(int(x) for x in r)
            for r in re.findall(r"TG ipi sec=(\d+) rounds=(\d+) self=\d+ nmi=\d+ x2apic=(\d)", text)]
    per = {0: [], 1: []}
    for (_, r0, _), (_, r1, x2) in zip(rows, rows[1:]):
        per[x2].append(1e6 / ((r1 - r0) * 9))
    run_pinned(m, "ex", "exits n=200000")
    ex = finished(m, "ex", r"TG exits done")
    cpuid = 1e6 / int(re.search(r"TG exits cpuid per_sec=(\d+)", ex).group(1))
    io = 1e6 / int(re.search(r"TG exits io per_sec=(\d+)", ex).group(1))
    print(f"exit round trip on CPU {GUEST_CPU}: CPUID {cpuid:.2f} µs, port write {io:.2f} µs")
    smp_switch(m, cpuid)
    print("IPI to the sibling vCPU (`ipiflood sibling=1`, 2 vCPUs, 9 ICR writes a round),"
          " µs per IPI sent, per second:")
    for x2, v in per.items():
        if v:
            print(f"  {'x2APIC (WRMSR)' if x2 else 'xAPIC (MMIO)'}: median {statistics.median(v):.2f}"
                  f" {[round(x, 2) for x in v]}, {statistics.median(v) / cpuid:.2f} CPUID exits")


SMP_RTT = r"^TG smp {} rtt_us=([\d.]+) min_us=([\d.]+) rounds=(\d+) lost=(\d+) "


def smp_rtt(m, cpus, opts, rounds=1000):
    """A 2-vCPU `smp` guest, vCPU v pinned to cpus[v] (the pins are in
    before its 3 s of work end): the mean and least IPI round trip to the
    AP, and to itself, in µs."""
    m.cmd(f'create pp kernel=testguest mem=16 vcpus=2 '
          f'cmdline="smp secs=3 pingpong={rounds} cpus=2 {opts}"')
    m.cmd("start pp")
    for v, cpu in enumerate(cpus):
        out = m.cmd(f"pin pp {v} {cpu}")
        assert f"on CPU {cpu}" in out, out
    text = finished(m, "pp", r"\nTG poweroff\r?\n")
    ipi = re.search(SMP_RTT.format("ipi"), text, re.M)
    self_ = re.search(SMP_RTT.format("self"), text, re.M)
    if not ipi or not self_ or "TG PASS smp" not in text:
        raise RuntimeError(f"smp guest on {cpus} failed:\n{text}")
    return [float(x) for x in (ipi.group(1), ipi.group(2), self_.group(1), self_.group(2))]


TWO, ONE = (GUEST_CPU, GUEST_CPU + 1), (GUEST_CPU, GUEST_CPU)
SMP_CASES = (("two", TWO, "", f"halting, vCPUs on CPUs {TWO[0]} and {TWO[1]}"),
             ("one", ONE, "", f"halting, both on CPU {ONE[0]}"),
             ("spin", TWO, "spin=1", f"spinning, vCPUs on CPUs {TWO[0]} and {TWO[1]}"),
             ("two_x2", TWO, "x2apic=1", f"x2APIC, halting, on CPUs {TWO[0]} and {TWO[1]}"),
             ("one_x2", ONE, "x2apic=1", f"x2APIC, halting, both on CPU {ONE[0]}"))


def switch_cost(d, own, cpuid, x2=""):
    """The two estimates of a vCPU switch (see the module's text)."""
    return (f"(one CPU - two CPUs) / 2 = {(d['one' + x2] - d['two' + x2]) / 2:.1f} µs;"
            f" one CPU / 2 - self IPI - one exit (the HLT) = "
            f"{d['one' + x2] / 2 - own - cpuid:.1f} µs")


def smp_switch(m, cpuid, rounds=3):
    """Means swing with the host's stalls of QEMU's threads (a loaded
    2-core machine); the least round trips of a run hardly do."""
    res = {k: [] for k, *_ in SMP_CASES}
    for _ in range(rounds):
        for k, cpus, opts, _ in SMP_CASES:
            res[k].append(smp_rtt(m, cpus, opts))
    mean = {k: statistics.median(r[0] for r in v) for k, v in res.items()}
    least = {k: statistics.median(r[1] for r in v) for k, v in res.items()}
    own = {x2: [statistics.median(r[i] for k, v in res.items() if k.endswith("_x2") == bool(x2)
                                  for r in v) for i in (2, 3)] for x2 in ("", "_x2")}
    print("IPI round trip between two vCPUs (`smp cpus=2 pingpong=1000`: a fixed IPI"
          " to the AP, its answer back), µs, %d alternated runs, each: mean [least]:" % rounds)
    for k, _, _, what in SMP_CASES:
        print(f"  {what}: medians {mean[k]:.1f} [{least[k]:.1f}]: "
              + ", ".join(f"{r[0]:.1f} [{r[1]:.1f}]" for r in res[k]))
    for x2, name in (("", "xAPIC"), ("_x2", "x2APIC")):
        print(f"  {name}: the BSP's IPI to itself (ICR write exit, injection, EOI exit):"
              f" medians {own[x2][0]:.1f} [{own[x2][1]:.1f}]; exit round trip (CPUID) {cpuid:.2f}")
        print(f"    vCPU switch from the means: {switch_cost(mean, own[x2][0], cpuid, x2)}")
        print(f"    vCPU switch from the least: {switch_cost(least, own[x2][1], cpuid, x2)}")
    print(f"  one-way IPI to a running vCPU on another CPU (spinning / 2):"
          f" {mean['spin'] / 2:.1f} [{least['spin'] / 2:.1f}] µs; to a halted one"
          f" (halting / 2): {mean['two'] / 2:.1f} [{least['two'] / 2:.1f}] µs")


JOBS = ("dd if=/dev/zero of=/tmp/z bs=1M count=32 2>/dev/null; echo PAR-GO; "
        "sha256sum /tmp/z > /tmp/a & sha256sum /tmp/z > /tmp/b & wait; echo PAR-DONE")


def linux_jobs(m, vcpus, i):
    """Host seconds for the two jobs in a fresh guest of vcpus vCPUs."""
    from test_linux import CMDLINE, SHELL
    name = f"par{i}"
    out = m.cmd(f'create {name} kernel=vmlinuz initrd=initrd mem=256 vcpus={vcpus} '
                f'cmdline="{CMDLINE}"', timeout=60)
    if "error" in out:
        raise RuntimeError(out)
    m.cmd(f"start {name}")
    m.send(f"console {name}\r")
    m.expect(SHELL, timeout=600)
    m.send(JOBS + "\r")
    m.expect(r"\nPAR-GO", timeout=120)
    t0 = time.time()
    m.expect(r"\nPAR-DONE", timeout=600)
    took = time.time() - t0
    m.send(b"\x1d")
    m.expect("ferry> ", timeout=30)
    m.cmd(f"destroy {name}")
    return took


def parallel(rounds=2):
    from test_boot_shell import make_iso
    from test_linux import LINUX
    kernel, initrd = os.path.join(LINUX, "vmlinuz"), os.path.join(LINUX, "initrd")
    if not (os.path.exists(kernel) and os.path.exists(initrd)):
        print("parallel: skipped (no build/linux: `python3 tests/bench/run.py linux` fetches it)")
        return
    iso = make_iso(Path(tempfile.mkdtemp(prefix="bench-sched-")), guests=[kernel, initrd])
    m = Machine("bench-sched-linux", kind="qemu", cpus=3, mem=1024, iso=iso).start()
    res = {1: [], 2: []}
    try:
        for r in range(rounds):
            for v in (1, 2):
                res[v].append(linux_jobs(m, v, f"{r}{v}"))
    finally:
        m.close()
    one, two = statistics.median(res[1]), statistics.median(res[2])
    print(f"parallel: two sha256sum of 32 MiB at once in a Linux guest, host seconds "
          f"(medians of {rounds}): 1 vCPU {one:.2f} s {[round(x, 2) for x in res[1]]}, "
          f"2 vCPUs {two:.2f} s {[round(x, 2) for x in res[2]]}: {one / two:.2f}x (aim 1.8x)")


def main(argv):
    parts = set(argv) or {"fairness", "jitter", "ipi", "parallel"}
    m = Machine("bench-sched", kind="qemu", cpus=3, mem=512)
    m.start()
    try:
        hz = float(re.search(r"timer: TSC (\d+\.\d+) MHz", m.buf).group(1)) * 1e6
        print("sched: QEMU TCG host with 3 CPUs (-smp 3; CPU 0 the shell's, guests pinned"
              " to CPU 1), on a 2-core machine")
        if "fairness" in parts:
            fairness(m)
        if "jitter" in parts:
            jitter(m, hz)
        if "ipi" in parts:
            ipi_and_exit(m)
    finally:
        m.close()
    if "parallel" in parts:
        parallel()


if __name__ == "__main__":
    main(sys.argv[1:])
