#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""ferry benchmarks: print figures side by side in one run (not pass/fail).

  python3 tests/bench/run.py [boot] [...]

boot:  time from starting QEMU to the `ferry> ` prompt and ferry's own boot
       time (from its log) on 2, 8 and 16 CPUs, and ferry's memory use at
       idle (`mem`).
boot-uefi: the same power-on to prompt under UEFI (OVMF) and BIOS
       (SeaBIOS), alternated.
guest: the test guest's CPU-bound work rate under ferry vs directly on
       QEMU (the overhead ratio), and VM exits per second.
guest-vmx: the same ratio on Bochs (Intel VMX).
exits: microseconds per CPUID exit and per port write under ferry (SVM on
       QEMU); with FERRY_BASE_ISO=other.iso, alternated with that build in
       one run and given as ratios, pair by pair.
net:   ferry's nettest send vs Linux sending on the same NIC and bridge, for
       each NIC ferry drives (e1000, e1000e, virtio-net), and between two
       guests on the bridge: ferry->ferry, Linux->Linux, Linux->ferry,
       ferry->Linux, with the ratios ferry->ferry / Linux->Linux and
       Linux->ferry / ferry->Linux; all sides alternated round by round
       (tests/bench/net_vs_linux.py).
linux: Debian's kernel under ferry vs booted directly by QEMU (on the CPU
       ferry presents to guests, and on qemu64): time to the shell prompt, exits during boot, sha256sum of 64 MiB, idle host CPU,
       migration downtime seen from inside (tests/bench/linux_bench.py).
guestnet: a Linux guest's TCP throughput (64 MiB each way to a Linux peer
       on the bridge) under ferry, switched onto its e1000, vs the same
       guest on bare QEMU (on ferry's guest CPU) with virtio-net on a tap; sides alternated round
       by round, with ferry's exits and vCPU time per MiB
       (tests/bench/guestnet_bench.py).
tcpmove: the stall a Linux guest's TCP connections (an echo, a paced
       stream in, a bulk stream out) see across three live migrations,
       beside ferry's downtime (tests/bench/tcpmove_bench.py).
sched: the scheduler (issue 13): fairness at weights 1:1, 2:1, 4:1 on one
       CPU, heartbeat jitter alone and beside 3 hogs, µs per IPI beside an
       exit, a 2-vCPU against a 1-vCPU Linux guest's parallel job
       (tests/bench/sched_bench.py).
migrate: live-migration downtime, time, rounds, bytes and stream rate
       (two QEMU hosts; an idle guest and the dirty guest at 10/50/90%).
migrate-parallel: two guests migrated at once against one after the
       other, alternated (tests/bench/migrate_bench.py).
outside: the downtime seen from outside the guest (issue 16): an idle
       test guest sends a UDP datagram every ms to the Linux peer, which
       measures the longest gap across each move, sealed and insecure
       alternated (tests/bench/outside_bench.py).
pml:   PML against write-protect dirty logging on Bochs: the guest's
       write rate while logged, the log's exits, total time and downtime,
       alternated (tests/bench/pml_bench.py).
"""
import os
import re
import shutil
import statistics
import tempfile
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from ferry_harness import ROOT, Machine  # noqa: E402


def boot_once(name, cpus, firmware="bios"):
    """One boot: power-on to prompt (host clock), ferry's own boot time
    (its log) and `mem`."""
    m = Machine(name, kind="qemu", cpus=cpus, mem=512, firmware=firmware)
    t0 = time.time()
    m.start(boot_timeout=180)
    wall = time.time() - t0
    log = m.cmd("log")
    own = int(re.search(r"boot: ready in (\d+) ms", log).group(1))
    assert f"cpus: {cpus} of {cpus} online" in log, log
    mem = m.cmd("mem")
    m.close()
    return wall, own, mem


def bench_boot(runs=3, cpu_counts=(2, 8, 16)):
    """Boot time by CPU count, the counts alternated run by run so that a
    change in the machine's load falls on all of them alike."""
    walls = {c: [] for c in cpu_counts}
    selfs = {c: [] for c in cpu_counts}
    mem = None
    for i in range(runs):
        for c in cpu_counts:
            wall, own, out = boot_once(f"bench-boot-{c}cpu-{i}", c)
            walls[c].append(wall)
            selfs[c].append(own)
            mem = mem or out
    ferry = int(re.search(r"ferry:\s+(\d+) KiB", mem).group(1))
    heap = re.search(r"heap:\s+(\d+) KiB used of (\d+) KiB", mem)
    print("boot (QEMU TCG, 512 MiB), %d runs per CPU count:" % runs)
    for c in cpu_counts:
        w, s = walls[c], selfs[c]
        print("  %2d CPUs: power-on to prompt (incl. SeaBIOS+GRUB) median %.2f s (min %.2f, max %.2f);"
              " ferry's own boot (kmain to prompt) median %d ms (min %d, max %d)"
              % (c, statistics.median(w), min(w), max(w), statistics.median(s), min(s), max(s)))
    print("  ferry memory at idle: %d KiB reserved for ferry (image, heap, tables);"
          " heap in use %s KiB of %s KiB" % (ferry, heap.group(1), heap.group(2)))


def bench_boot_uefi(runs=3, cpus=2):
    """Power-on to prompt under UEFI (OVMF) against BIOS (SeaBIOS), the
    same ISO, the firmwares alternated run by run."""
    walls = {"bios": [], "uefi": []}
    selfs = {"bios": [], "uefi": []}
    for i in range(runs):
        for fw in ("bios", "uefi"):
            wall, own, _ = boot_once(f"bench-boot-{fw}-{i}", cpus, firmware=fw)
            walls[fw].append(wall)
            selfs[fw].append(own)
    print("boot by firmware (QEMU TCG, %d CPUs, 512 MiB), %d runs each, alternated:" % (cpus, runs))
    for fw in ("bios", "uefi"):
        w, s = walls[fw], selfs[fw]
        print("  %s: power-on to prompt median %.2f s %s; ferry's own boot median %d ms %s"
              % (fw, statistics.median(w), [round(x, 2) for x in w], statistics.median(s), s))
    print("  ratio uefi/bios (power-on to prompt): %.2f"
          % (statistics.median(walls["uefi"]) / statistics.median(walls["bios"])))


GUEST = os.path.join(os.path.dirname(__file__), "..", "..", "build", "guest", "testguest.elf")


def direct_guest(cmdline, timeout=180):
    """Run the test guest directly on QEMU (no ferry); its TG lines."""
    out = subprocess.run(
        ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "qemu64", "-m", "64",
         "-kernel", GUEST, "-append", cmdline, "-serial", "stdio", "-display", "none",
         "-monitor", "none", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"],
        capture_output=True, text=True, timeout=timeout).stdout
    return out


def ferry_guest(m, name, cmdline, done, timeout=300):
    m.cmd(f'create {name} kernel=testguest mem=32 cmdline="{cmdline}"')
    m.cmd(f"start {name}")
    end = time.time() + timeout
    while time.time() < end:
        m.send(f"console {name}\r")
        m.expect(r"escape character is \^\]\)\n")
        start = m.pos
        m.drain_quiet()
        m.send(b"\x1d")
        m.expect(r"Disconnected from " + name)
        text = m.buf[start:m.pos]
        m.expect("ferry> ")
        if re.search(done, text):
            m.cmd(f"destroy {name}")
            return text
    raise RuntimeError(f"{name}: no {done!r}")


def work_rate(text):
    return int(re.search(r"TG work units=\d+ ticks=\d+ rate=(\d+)", text).group(1))


def bench_guest(pairs=3):
    """Alternate direct and ferry runs so machine noise hits both alike."""
    m = Machine("bench-guest", kind="qemu", cpus=2, mem=512)
    m.start()
    direct, ferry = [], []
    for i in range(pairs):
        direct.append(work_rate(direct_guest("work secs=5")))
        ferry.append(work_rate(ferry_guest(m, f"w{i}", "work secs=5", r"TG work units=")))
    ex = ferry_guest(m, "x", "exits n=200000", r"TG exits done")
    m.close()
    exd = direct_guest("exits n=200000")
    d, f = statistics.median(direct), statistics.median(ferry)
    print("guest CPU-bound work (test guest 'work secs=5', QEMU TCG, %d alternating pairs):" % pairs)
    print(f"  directly on QEMU: median {d:.0f} units/s {direct}")
    print(f"  under ferry (SVM): median {f:.0f} units/s {ferry}")
    print(f"  ratio ferry/direct {f / d:.3f} (overhead {100 * (1 - f / d):.1f}%)")
    c = int(re.search(r"TG exits cpuid per_sec=(\d+)", ex).group(1))
    io = int(re.search(r"TG exits io per_sec=(\d+)", ex).group(1))
    cd = int(re.search(r"TG exits cpuid per_sec=(\d+)", exd).group(1))
    print(f"  VM exits under ferry: CPUID {c}/s, port I/O writes {io}/s"
          f" (CPUID directly on QEMU, no exit: {cd}/s)")


def exit_costs(iso, name):
    """µs per CPUID exit and per port write, one guest run on a fresh host."""
    m = Machine(name, kind="qemu", cpus=2, mem=512, iso=iso)
    m.start()
    try:
        ex = ferry_guest(m, "x", "exits n=200000", r"TG exits done")
    finally:
        m.close()
    c = int(re.search(r"TG exits cpuid per_sec=(\d+)", ex).group(1))
    io = int(re.search(r"TG exits io per_sec=(\d+)", ex).group(1))
    return 1e6 / c, 1e6 / io


def bench_exits(pairs=4):
    base = os.environ.get("FERRY_BASE_ISO")
    this = os.path.join(ROOT, "build", "ferry.iso")
    rows = []
    for i in range(pairs):
        b = exit_costs(base, f"bench-exits-base{i}") if base else None
        t = exit_costs(this, f"bench-exits-this{i}")
        rows.append((b, t))
    print("exit cost under ferry (SVM, QEMU TCG), test guest 'exits n=200000', µs per exit:")
    for b, t in rows:
        line = f"  this build: CPUID {t[0]:.2f}, port write {t[1]:.2f}"
        if b:
            line += (f"   base: CPUID {b[0]:.2f}, port write {b[1]:.2f}"
                     f"   ratio this/base {t[0] / b[0]:.3f}, {t[1] / b[1]:.3f}")
        print(line)
    med = lambda k, j: statistics.median(r[k][j] for r in rows)  # noqa: E731
    print(f"  median this build: CPUID {med(1, 0):.2f} µs, port write {med(1, 1):.2f} µs")
    if base:
        print(f"  median base ({base}): CPUID {med(0, 0):.2f} µs, port write {med(0, 1):.2f} µs")


def direct_guest_bochs(cmdline, timeout=600):
    """The test guest booted by GRUB (multiboot1) directly in Bochs, no ferry."""
    tmp = tempfile.mkdtemp(prefix="bench-bochs-")
    iso_dir = os.path.join(tmp, "iso", "boot", "grub")
    os.makedirs(iso_dir)
    shutil.copy(GUEST, os.path.join(tmp, "iso", "boot", "testguest.elf"))
    with open(os.path.join(iso_dir, "grub.cfg"), "w") as f:
        f.write("set timeout=0\nmenuentry tg {\n multiboot /boot/testguest.elf %s\n}\n" % cmdline)
    iso = os.path.join(tmp, "tg.iso")
    subprocess.run(["grub-mkrescue", "-o", iso, os.path.join(tmp, "iso")],
                   check=True, capture_output=True, timeout=120)
    out = os.path.join(tmp, "com1.out")
    with open(os.path.join(tmp, "rc"), "w") as f:
        f.write(f"""megs: 128
cpu: model=corei7_skylake_x, count=2, ips=200000000
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path={iso}, status=inserted
boot: cdrom
display_library: rfb, options="timeout=0"
com1: enabled=1, mode=file, dev={out}
log: {tmp}/bochs.log
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
""")
    p = subprocess.Popen(["bochs", "-q", "-f", os.path.join(tmp, "rc")], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    p.stdin.write(b"c\n")
    p.stdin.flush()
    end, text = time.time() + timeout, ""
    try:
        while time.time() < end and "TG poweroff" not in text:
            time.sleep(1)
            if os.path.exists(out):
                text = open(out, errors="replace").read()
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return text


def bench_guest_vmx(pairs=2):
    """The same overhead ratio on Intel VMX: Bochs directly vs ferry on Bochs."""
    m = Machine("bench-guest-vmx", kind="bochs", cpus=2, mem=128)
    m.start()
    direct, ferry = [], []
    for i in range(pairs):
        direct.append(work_rate(direct_guest_bochs("work secs=5")))
        ferry.append(work_rate(ferry_guest(m, f"w{i}", "work secs=5", r"TG work units=", timeout=600)))
    m.close()
    d, f = statistics.median(direct), statistics.median(ferry)
    print("guest CPU-bound work on Bochs (Intel VMX), %d alternating pairs:" % pairs)
    print(f"  directly on Bochs: median {d:.0f} units/s {direct}")
    print(f"  under ferry (VMX): median {f:.0f} units/s {ferry}")
    print(f"  ratio ferry/direct {f / d:.3f} (overhead {100 * (1 - f / d):.1f}%)")


BENCHES = {"boot": bench_boot, "boot-uefi": bench_boot_uefi, "guest": bench_guest, "guest-vmx": bench_guest_vmx,
           "exits": bench_exits,
           "net": lambda: __import__("net_vs_linux").main([]),
           "migrate": lambda: __import__("migrate_bench").main([]),
           "migrate-parallel": lambda: __import__("migrate_bench").main_parallel([]),
           "outside": lambda: __import__("outside_bench").main([]),
           "pml": lambda: __import__("pml_bench").main([]),
           "channel": lambda: __import__("channel_bench").main([]),
           "linux": lambda: __import__("linux_bench").main([]),
           "guestnet": lambda: __import__("guestnet_bench").main([]),
           "tcpmove": lambda: __import__("tcpmove_bench").main([]),
           "sched": lambda: __import__("sched_bench").main([])}

if __name__ == "__main__":
    names = sys.argv[1:] or list(BENCHES)
    for n in names:
        BENCHES[n]()
