#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): Debian 12's stock kernel with the busybox
initramfs (tools/fetch-linux.sh) under ferry (SVM, QEMU TCG) against the same
kernel, initrd and command line booted directly by QEMU (-kernel/-initrd),
the runs alternated in one go so machine noise hits both alike.

  python3 tests/bench/run.py linux
  python3 tests/bench/linux_bench.py [--pairs 3] [--no-migrate] [--affected] [--host-cpus 2]

Direct QEMU runs the guest twice per pair: with the CPU that ferry's CPUID
presents (GenuineIntel family 6 model 42, the qemu64 features; hv/cpuid.c),
which is the fair comparison, and with plain `-cpu qemu64` (AuthenticAMD
family 15) for reference.  The CPU's identity alone changes the guest's
code: on an Intel family 6 CPU Linux turns on page-table isolation (a CR3
switch, and under TCG a TLB flush, at every system call) unless
IA32_ARCH_CAPABILITIES says RDCL_NO, and picks `rep movsq` string copies
(REP_GOOD), slower under TCG than qemu64's paths.  ferry tells its guest
RDCL_NO on this AMD host (`create ... meltdown=host`); QEMU's TCG cannot
give that MSR, so the direct run on ferry's CPU gets `nopti` on its command
line instead, and each run's /sys/.../vulnerabilities/meltdown is printed
to show that neither isolates its page tables.

Figures:
- time to the guest's first shell prompt: under ferry from `start`, directly
  from starting QEMU (which includes QEMU's own start and SeaBIOS running
  the kernel's loader: ferry's host is already up);
- VM exits during that boot by reason (`stats`);
- sha256sum of 64 MiB in the guest's tmpfs, host wall clock;
- host CPU of an idle guest over 10 s: ferry's own account (time in guest +
  time in ferry, `stats`) and the QEMU process's CPU time (/proc) against the
  same host with no guest;
- downtime of a live migration of the idle guest between two QEMU hosts, seen
  from inside: the largest gap in a loop printing /proc/uptime every 20 ms
  (needs root, for the network namespace);
- the same seen from outside: the guest has a NIC (virtio-net behind ferry's
  switch) and the Linux peer on the bridge pings it every millisecond
  (`ping -D -i 0.001`); the largest gap between replies around each move,
  and in as long with no move.
Console transcripts go to build/test-logs/bench-linux-*.log.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from ferry_harness import LOGDIR, ROOT, Machine  # noqa: E402
from test_boot_shell import make_iso  # noqa: E402
from test_linux import CMDLINE, LINUX, SHELL  # noqa: E402

MEM = 256
# ferry's guest CPU (hv/cpuid.c) as QEMU can give it: TCG lacks x2APIC and
# the TSC-deadline timer, which a CPU-bound job does not use.
FERRY_CPU = "qemu64,vendor=GenuineIntel,family=6,model=42,stepping=7,-svm,-mce,-mca"
# ferry tells its guest RDCL_NO on an AMD host, which TCG cannot: a guest
# booted directly on FERRY_CPU gets this on its command line instead, so
# that neither isolates its page tables
FERRY_CPU_MORE = " nopti"
# each direct run's CPU and what its command line gets besides CMDLINE
DIRECT_CPUS = {"ferry's CPU": (FERRY_CPU, FERRY_CPU_MORE), "qemu64": ("qemu64", "")}
MELTDOWN = "cat /sys/devices/system/cpu/vulnerabilities/meltdown"
MELT_RX = r"(Not affected|Vulnerable|Mitigation: PTI|Unknown)[^\n]*"
SHA = ("dd if=/dev/zero of=/tmp/z bs=1M count=64 2>/dev/null; echo SHA-GO; "
       "sha256sum /tmp/z; echo SHA-DONE")


class Direct:
    """The kernel booted by QEMU itself, its serial console on a pipe."""

    def __init__(self, name, cpu="qemu64", more=""):
        self.buf, self.cv = "", threading.Condition()
        self.log = open(os.path.join(LOGDIR, f"{name}.log"), "w", errors="replace")
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            ["qemu-system-x86_64", "-accel", "tcg", "-cpu", cpu, "-m", str(MEM),
             "-kernel", os.path.join(LINUX, "vmlinuz"), "-initrd", os.path.join(LINUX, "initrd"),
             "-append", CMDLINE + more, "-nic", "none", "-serial", "stdio", "-display", "none",
             "-monitor", "none"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        while True:
            data = os.read(self.proc.stdout.fileno(), 4096)
            if not data:
                return
            text = data.decode(errors="replace").replace("\r", "")
            self.log.write(text)
            with self.cv:
                self.buf += text
                self.cv.notify_all()

    def expect(self, pattern, start=0, timeout=300):
        rx = re.compile(pattern)
        with self.cv:
            end = time.time() + timeout
            while not rx.search(self.buf, start):
                if time.time() > end:
                    raise TimeoutError(f"direct QEMU: no {pattern!r}")
                self.cv.wait(0.5)
            return rx.search(self.buf, start)

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\r")
        self.proc.stdin.flush()

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def cpu_s(pid):
    """User + system CPU seconds of a host process."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def stats(m, name):
    out = m.cmd(f"stats {name}")
    exits = dict((k, int(v)) for k, v in re.findall(r"^(\S[^\n:]*?)\s+(\d+)$", out, re.M))
    pv = re.search(r"ended by PV EOI \(no exit\): (\d+)", out)
    exits["_pv_eoi"] = int(pv.group(1)) if pv else 0   # not an exit: an EOI spared one
    t = re.search(r"time in guest: ([\d.]+) s .* in ferry: ([\d.]+) s", out)
    return exits, float(t.group(1)), float(t.group(2))


def sha_time(send, expect, start):
    """Host seconds for the sha256sum of 64 MiB in the guest's tmpfs."""
    send(SHA)
    go = expect(r"\nSHA-GO", start, 120)
    t0 = time.time()
    expect(r"[0-9a-f]{64}\s+/tmp/z", go.end(), 600)
    return time.time() - t0


def ferry_run(m, i, res, more=""):
    name = f"lx{i}{'a' if more else ''}"
    out = m.cmd(f'create {name} kernel=vmlinuz initrd=initrd mem={MEM} {more} '
                f'cmdline="{CMDLINE}"', timeout=60)
    assert "error" not in out, out
    m.send(f"start {name}\r")
    t0 = time.time()
    m.expect(f"started {name}")
    m.send(f"console {name}\r")
    m.expect(SHELL, timeout=300)
    res["boot"].append(time.time() - t0)
    m.send(b"\x1d")
    m.expect("ferry> ")
    exits, _, _ = stats(m, name)
    res["exits"].append(exits)
    m.send(f"console {name}\r")
    m.expect(r"escape character is \^\]\)")
    start = m.pos = len(m.buf)

    def expect(p, s, t):
        m.pos = s
        m.expect(p, timeout=t)
        return re.compile(p).search(m.buf, s)
    m.send(MELTDOWN + "\r")
    res["melt"] = expect(MELT_RX, start, 60).group(0).strip()
    start = m.pos
    res["sha"].append(sha_time(lambda line: m.send(line + "\r"), expect, start))
    m.send(b"\x1d")
    m.expect("ferry> ")
    # idle: 10 s with the shell waiting on its console
    _, g0, h0 = stats(m, name)
    c0 = cpu_s(m.proc.pid)
    time.sleep(10)
    c1 = cpu_s(m.proc.pid)
    _, g1, h1 = stats(m, name)
    res["idle"].append(((g1 - g0) + (h1 - h0), c1 - c0))
    m.cmd(f"destroy {name}")
    c0 = cpu_s(m.proc.pid)
    time.sleep(10)
    res["idle_host"].append(cpu_s(m.proc.pid) - c0)


def direct_run(i, res, cpu, more):
    d = Direct(f"bench-linux-direct{i}-{cpu.split(',')[0]}{len(cpu)}", cpu, more)
    try:
        d.expect(re.escape(SHELL))
        res["boot"].append(time.time() - d.t0)
        start = len(d.buf)

        def expect(p, s, t):
            return d.expect(p, s, t)
        d.send(MELTDOWN)
        m = expect(MELT_RX, start, 60)
        res["melt"], start = m.group(0).strip(), m.end()
        res["sha"].append(sha_time(d.send, expect, start))
        c0 = cpu_s(d.proc.pid)
        time.sleep(10)
        res["idle"].append(cpu_s(d.proc.pid) - c0)
    finally:
        d.close()


def uptimes(h, settle=1.0):
    """The loop's /proc/uptime values in the guest's console history (the
    last few seconds) and what it prints for `settle` s more."""
    import test_linux_migrate as lm
    start = lm.attach(h, "lx")
    h.m.expect(r"\nT \d+\.\d+\n", timeout=30)
    time.sleep(settle)
    h.m._recv(0.5)
    ts = [float(x) for x in re.findall(r"\nT (\d+\.\d+)(?=\n)", h.m.buf[start:])]
    lm.detach(h, "lx")
    return ts


def largest_step(ts):
    return max(b - a for a, b in zip(ts, ts[1:])) * 1000


def migrate_downtime(rounds=3):
    """Largest step seen inside the idle guest in the seconds around each
    move, and in as many seconds with no move (the host's own noise)."""
    import test_linux_migrate as lm
    from test_migrate import migrate_ok
    gaps, quiet, said = [], [], []
    with lm.linux_hosts(Path(tempfile.mkdtemp(prefix="bench-lxmig-"))) as n:
        lm.boot_linux(n.a)
        hosts = [n.a, n.b]
        lm.attach(n.a, "lx")
        n.a.m.send("while :; do read u x < /proc/uptime; echo \"T $u\"; usleep 20000; done &\r")
        lm.detach(n.a, "lx")
        for r in range(rounds):
            src, dst = hosts[r % 2], hosts[(r + 1) % 2]
            time.sleep(3)
            quiet.append(largest_step(uptimes(src)))
            time.sleep(2)
            said.append(migrate_ok(src, "lx", dst).downtime_ms)
            time.sleep(1)
            gaps.append(largest_step(uptimes(dst)))
    return gaps, quiet, said


GUEST_IP = "10.200.0.50"


def reply_times(path):
    """The peer's reply timestamps (ping -D) in its output so far."""
    with open(path) as f:
        return [float(t) for t in re.findall(r"^\[(\d+\.\d+)\] \d+ bytes from", f.read(),
                                             re.M)]


def largest_gap_ms(ts, t0, t1):
    """Largest gap between replies that bracket [t0, t1] (wall clock)."""
    inside = [t for t in ts if t0 <= t <= t1]
    return max((b - a for a, b in zip(inside, inside[1:])), default=float("inf")) * 1000


def outside_downtime(rounds=3):
    """The peer pings the guest every ms across each move: the longest
    silence it sees, and the longest in as long a window with no move."""
    import test_linux_migrate as lm
    from test_migrate import migrate_ok
    gaps, quiet, said = [], [], []
    with lm.linux_hosts(Path(tempfile.mkdtemp(prefix="bench-lxout-"))) as n:
        a = n.a
        out = a.cmd(f'create lx kernel=vmlinuz initrd=initrd mem={lm.GUEST_MB} nic=on '
                    f'mac=52:54:00:aa:00:09 cmdline="{lm.CMDLINE}"', timeout=60)
        assert "error" not in out, out
        a.cmd("start lx")
        start = lm.attach(a, "lx")
        lm.wait_clean(a.m, start, "FERRY-LINUX: init ready", 180)
        a.m.send("\r")
        a.m.expect(SHELL, timeout=60)
        lm.talk(a.m, f"ip addr add {GUEST_IP}/24 dev eth0; ip link set eth0 up; sleep 2")
        lm.detach(a, "lx")
        log = tempfile.mktemp(prefix="bench-ping-")
        cap = None
        if os.environ.get("FERRY_PCAP"):	# the bridge's frames, for tools/gap_trace.py
            cap = subprocess.Popen(["ip", "netns", "exec", n.ns.name, "tcpdump", "-i", "br0",
                                    "-n", "-s", "96", "-w", os.environ["FERRY_PCAP"]],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(log, "w") as f:
            ping = subprocess.Popen(["ip", "netns", "exec", n.ns.name, "ping", "-D", "-i",
                                     "0.001", "-W", "1", GUEST_IP], stdout=f,
                                    stderr=subprocess.STDOUT)
        try:
            hosts = [n.a, n.b]
            for r in range(rounds):
                src, dst = hosts[r % 2], hosts[(r + 1) % 2]
                t0 = time.time()
                time.sleep(4)
                quiet.append(largest_gap_ms(reply_times(log), t0, time.time()))
                t0 = time.time()
                said.append(migrate_ok(src, "lx", dst).downtime_ms)
                time.sleep(1)
                gaps.append(largest_gap_ms(reply_times(log), t0, time.time()))
        finally:
            ping.terminate()
            ping.wait(timeout=10)
            if cap:
                cap.terminate()
                cap.wait(timeout=10)
    return gaps, quiet, said


def migrations(a):
    """The migration downtimes, from inside and outside the guest."""
    if os.geteuid() != 0:
        print("  migration downtime: skipped (needs root for the network namespace)")
        return
    if not a.outside_only:
        gaps, quiet, said = migrate_downtime()
        print(f"  live migration of the idle guest, QEMU -> QEMU, {len(gaps)} moves: largest "
              f"step of a 20 ms /proc/uptime loop seen inside around each move "
              f"{[round(g) for g in gaps]} ms, in as long with no move "
              f"{[round(q) for q in quiet]} ms; downtime ferry reports "
              f"{[round(s, 1) for s in said]} ms")
    gaps, quiet, said = outside_downtime()
    print(f"  the same seen from outside (the Linux peer pings the guest's NIC every ms): "
          f"longest gap between replies around each move {[round(g, 1) for g in gaps]} ms, "
          f"in as long with no move {[round(q, 1) for q in quiet]} ms; downtime ferry "
          f"reports {[round(s, 1) for s in said]} ms")


def versus(what, key, fer, dirs):
    """ferry's median seconds for one figure, then each direct run's and the ratio."""
    f = statistics.median(fer[key])
    print(f"  {what}: ferry {f:.2f} s {[round(x, 2) for x in fer[key]]}")
    for k, d in dirs.items():
        x = statistics.median(d[key])
        print(f"    QEMU direct, {k}: {x:.2f} s {[round(y, 2) for y in d[key]]},"
              f" ferry/direct {f / x:.3f}")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--no-migrate", action="store_true")
    ap.add_argument("--migrate-only", action="store_true",
                    help="only the migration downtimes (skip the boot/sha/idle pairs)")
    ap.add_argument("--outside-only", action="store_true",
                    help="only the downtime seen from outside")
    ap.add_argument("--host-cpus", type=int, default=2,
                    help="CPUs of ferry's QEMU host (1: the shell's CPU runs the guest)")
    ap.add_argument("--affected", action="store_true",
                    help="also ferry's guest created meltdown=affected (page-table "
                         "isolation on), in the rotation")
    a = ap.parse_args(argv)
    if a.migrate_only or a.outside_only:
        migrations(a)
        return
    subprocess.run([os.path.join(ROOT, "tools", "fetch-linux.sh"), LINUX], check=True,
                   timeout=900)
    os.makedirs(LOGDIR, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-linux-"))
    iso = make_iso(tmp, guests=[os.path.join(LINUX, "vmlinuz"), os.path.join(LINUX, "initrd")])
    m = Machine("bench-linux-ferry", kind="qemu", cpus=a.host_cpus, mem=512, iso=iso).start()
    fer = {"boot": [], "exits": [], "sha": [], "idle": [], "idle_host": []}
    aff = {"boot": [], "exits": [], "sha": [], "idle": [], "idle_host": []}
    dirs = {k: {"boot": [], "sha": [], "idle": []} for k in DIRECT_CPUS}
    try:
        for i in range(a.pairs):
            # rotate the runs so that no one always follows the same
            runs = [lambda: ferry_run(m, i, fer)] + [
                (lambda k=k, c=c: direct_run(i, dirs[k], *c)) for k, c in DIRECT_CPUS.items()]
            if a.affected:
                runs.append(lambda: ferry_run(m, i, aff, "meltdown=affected"))
            for run in runs[i % len(runs):] + runs[:i % len(runs)]:
                run()
    finally:
        m.close()
    med = statistics.median
    print(f"Linux guest (Debian 12 kernel, busybox initramfs, {MEM} MiB, 1 vCPU, "
          f"cmdline '{CMDLINE}'), QEMU TCG, ferry's host {a.host_cpus} CPUs, {a.pairs} rounds, "
          "the runs rotated:")
    print(f"  Meltdown, as each guest's kernel sees it: ferry '{fer.get('melt')}'; " +
          "; ".join(f"direct on {k} ({DIRECT_CPUS[k][1].strip() or 'no extra option'}) "
                    f"'{d.get('melt')}'" for k, d in dirs.items()))
    versus("to the first shell prompt", "boot", fer, dirs)
    ex = dict(fer["exits"][-1])
    pv = ex.pop("_pv_eoi", 0)
    print("  VM exits during boot (last run): " +
          ", ".join(f"{k} {v}" for k, v in sorted(ex.items(), key=lambda kv: -kv[1])) +
          f"; interrupts ended by PV EOI, no exit: {pv}")
    versus("sha256sum 64 MiB in tmpfs", "sha", fer, dirs)
    if a.affected:
        for what, key in (("to the first shell prompt", "boot"), ("sha256sum", "sha")):
            x, y = med(fer[key]), med(aff[key])
            print(f"  {what}, ferry's guest created meltdown=affected ('{aff.get('melt')}'):"
                  f" {y:.2f} s {[round(v, 2) for v in aff[key]]}; meltdown=host / affected "
                  f"{x / y:.3f}")
    acct = med(x[0] for x in fer["idle"])
    proc = med(x[1] for x in fer["idle"])
    base = med(fer["idle_host"])
    print(f"  idle guest over 10 s: ferry's account (guest + ferry time) {acct * 100 / 10:.2f} %"
          f" of one CPU; the QEMU process running ferry {proc * 10:.1f} % with the guest, "
          f"{base * 10:.1f} % with no guest; QEMU direct with the idle guest "
          f"{med(dirs[next(iter(dirs))]['idle']) * 10:.1f} % ({next(iter(dirs))})")
    if not a.no_migrate:
        migrations(a)

if __name__ == "__main__":
    main(sys.argv[1:])
