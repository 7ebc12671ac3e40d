#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): a Linux guest's TCP throughput through ferry
against the same guest under bare QEMU (issue 14), both directions, the
sides alternated round by round in one run so machine noise hits both alike.

  python3 tests/bench/run.py guestnet
  python3 tests/bench/guestnet_bench.py [--rounds 3] [--mb 64] [--vcpus 1] [--no-plain]
                                        [--vs ELF] [--qemu64] [--host-nic MODEL]

Needs root (a network namespace with a bridge, tests/integration/netns.py).
The guest is the same on both sides: Debian 12's kernel with the project's
busybox initramfs (tools/fetch-linux.sh, build/linux/), its command line
tests/integration/test_linux.py's CMDLINE, 256 MiB, --vcpus vCPUs, a
virtio-net NIC (virtio 1.x), QEMU TCG:
  - ferry: a QEMU host (2 CPUs, SVM) running ferry on its e1000 on the
    bridge (--host-nic e1000e or virtio-net for another of the NICs ferry
    drives); the guest made with `create lx ... nic=on mac=...`, its frames
    switched by ferry onto the e1000 (as test_guestnet.py);
  - bare: the kernel, initrd and command line booted by QEMU itself
    (-kernel/-initrd/-append, as linux_bench.py) on the CPU that ferry
    presents to its guests (linux_bench.FERRY_CPU; `nopti`, as ferry tells
    its guest RDCL_NO on an AMD host and TCG cannot), with -smp --vcpus and a
    virtio-net-pci (disable-legacy=on) on its own tap on the same bridge,
    with the features QEMU offers (offloads, MSI-X...);
  - bare-plain (unless --no-plain): the same, the NIC offering only what
    ferry's does (MAC, STATUS, INTx), to tell the features' share of the
    gap from the cost of going through ferry.
  - bare-qemu64 (with --qemu64): bare on QEMU's own -cpu qemu64, as this
    bench ran until December 2026: an AuthenticAMD CPU, on which Linux
    runs without page-table isolation, so it tells the CPU's share.
  - ferry-vs (with --vs ELF): a second ferry host like the first, booted
    from another build's ferry.elf, for a change measured against the
    build before it in one run (its guest at 10.200.0.53).
All guests stay up for the whole run; each round moves --mb MiB each way
on each side, the sides' order rotated every round:
  - guest -> peer: tests/integration/netpeer.py `recv` in the namespace; the
    guest runs `nc PEER PORT -e cat /tmp/z` (busybox cat sends the tmpfs
    file with sendfile(2)); timed by the peer from accept to EOF and by the
    guest (/proc/uptime around nc, connect included);
  - peer -> guest: netpeer.py `send` connects to `nc -l` in the guest, which
    runs `dd` of the first byte, then `wc -c` of the rest; timed by the peer
    from connect to EOF (the guest closes when it has counted everything)
    and by the guest from its first byte to its last.
Every transfer's byte count is checked (and the peer's crc32 of the zeros
the guest sends).  Also printed: the host CPU seconds of each side's QEMU
process per transfer, and from ferry `stats lx` around each transfer: VM
exits per MiB (by reason) and the guest's vCPU time (in the guest, in ferry
handling its exits).  Console transcripts: build/test-logs/bench-guestnet-*.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = os.path.join(HERE, "..", "integration")
sys.path.insert(0, INTEG)
sys.path.insert(0, HERE)
from ferry_harness import LOGDIR, ROOT, Machine  # noqa: E402
from netns import BRIDGE_IP, QEMU_NICS, NetNS, qemu_nic  # noqa: E402
from test_boot_shell import make_iso  # noqa: E402
from test_linux import CMDLINE, LINUX, SHELL  # noqa: E402
from test_guestnet import attach, detach  # noqa: E402
from linux_bench import FERRY_CPU, FERRY_CPU_MORE, Direct, cpu_s, stats  # noqa: E402

PEER = ["/usr/bin/python3", os.path.join(INTEG, "netpeer.py")]
MEM = 256
HOST_IP, HOST_MAC = "10.200.0.2", "52:54:00:12:00:02"      # ferry on its e1000
FERRY_IP, FERRY_MAC = "10.200.0.50", "52:54:00:aa:00:01"   # the guest under ferry
# The guests on bare QEMU: "bare" with QEMU's virtio-net as it comes
# (checksum and segmentation offloads, mergeable receive buffers, MSI-X,
# event index), "bare-plain" with only what ferry's virtio-net offers
# (VERSION_1, MAC, STATUS; INTx; hv/vdev/virtio_net.c), which tells the
# features' share of the gap from the rest
PLAIN = ("vectors=0,csum=off,guest_csum=off,gso=off,guest_tso4=off,guest_tso6=off,"
         "guest_ecn=off,guest_ufo=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,"
         "mrg_rxbuf=off,event_idx=off,indirect_desc=off,ctrl_vq=off,ctrl_rx=off,ctrl_vlan=off,"
         "ctrl_rx_extra=off,ctrl_mac_addr=off,ctrl_guest_offloads=off,guest_announce=off,mq=off")
# ferry hosts: (host MAC, host address, guest MAC); the guests' addresses
FERRIES = {"ferry": (HOST_MAC, HOST_IP, FERRY_MAC),
           "ferry-vs": ("52:54:00:12:00:03", "10.200.0.3", "52:54:00:aa:00:04")}
FERRY_IPS = {"ferry": FERRY_IP, "ferry-vs": "10.200.0.53"}
# (address, MAC, NIC properties, -cpu): the CPU is ferry's guest CPU
# (linux_bench.FERRY_CPU: Linux picks its code paths, page-table isolation
# among them, by the CPU's identity; with FERRY_CPU_MORE, as ferry's guest
# runs without isolation), or qemu64 for the figures before it
BARES = {"bare": ("10.200.0.51", "52:54:00:aa:00:02", "", FERRY_CPU),
         "bare-plain": ("10.200.0.52", "52:54:00:aa:00:03", PLAIN, FERRY_CPU),
         "bare-qemu64": ("10.200.0.54", "52:54:00:aa:00:05", "", "qemu64")}
TX_PORT, RX_PORT = 5101, 5102
XFER_TIMEOUT = 600     # seconds for one transfer
BOOT_TIMEOUT = 300     # seconds for a guest to its shell


class BenchError(RuntimeError):
    pass


class Bare(Direct):
    """linux_bench's Direct with a virtio-net NIC on tap, in the namespace."""

    def __init__(self, ns, tap, name, vcpus, mac, props, cpu):
        self.buf, self.cv = "", threading.Condition()
        self.logpath = os.path.join(LOGDIR, f"{name}.log")
        self.log = open(self.logpath, "w", errors="replace")
        self.t0 = time.time()
        nic = qemu_nic(tap, mac, "virtio-net")
        if props:
            nic[-1] += "," + props
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns.name, "qemu-system-x86_64", "-accel", "tcg",
             "-cpu", cpu, "-smp", str(vcpus), "-m", str(MEM),
             "-kernel", os.path.join(LINUX, "vmlinuz"), "-initrd", os.path.join(LINUX, "initrd"),
             "-append", CMDLINE + (FERRY_CPU_MORE if cpu == FERRY_CPU else ""), "-serial", "stdio", "-display", "none", "-monitor", "none",
             "-no-reboot"] + nic,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._pump, daemon=True).start()

    def talk(self, line, timeout=60):
        start = len(self.buf)
        self.send(bracketed(line))
        end = self.expect(r"\n@@END\n", start, timeout)
        self.expect(re.escape(SHELL), end.end(), timeout)
        return output(self.buf[start:end.start() + 1])


class FerrySide:
    """The guest under ferry; talk() attaches to its console and detaches."""

    def __init__(self, m):
        self.m = m

    def talk(self, line, timeout=60):
        attach(self.m)
        try:
            start = self.m.pos
            self.m.send(bracketed(line) + "\r")
            end = self.m.expect(r"\n@@END\n", timeout=timeout)
            self.m.expect(SHELL, timeout=timeout)
            return output(self.m.buf[start:end.start() + 1])
        finally:
            detach(self.m)


def bracketed(line):
    """A shell line whose output comes between @@BEGIN and @@END lines: the
    quotes keep the console's echo from spelling either, also where it
    wraps a long line (test_linux.talk's marker does not survive that)."""
    return f"echo @@B''EGIN; {line}; echo @@E''ND"


def output(text):
    """What a bracketed line printed, from the console text up to @@END."""
    i = text.rfind("\n@@BEGIN\n")
    if i < 0:
        raise BenchError(f"no @@BEGIN line in {text[-500:]!r}")
    return text[i + len("\n@@BEGIN\n"):]


# ---- the guests ------------------------------------------------------------
def setup_guest(side, ip, mb):
    """Address eth0, check it is virtio-net and up, and fill /tmp/z."""
    out = side.talk(f"ip addr add {ip}/24 dev eth0; ip link set eth0 up; sleep 2; "
                    f"dd if=/dev/zero of=/tmp/z bs=1M count={mb} 2>/dev/null; "
                    "basename $(readlink /sys/class/net/eth0/device/driver); "
                    "cat /sys/class/net/eth0/operstate; wc -c < /tmp/z", timeout=120)
    if not re.search(r"^virtio_net\s*$", out, re.M) or not re.search(r"^up\s*$", out, re.M) \
            or not re.search(rf"^{mb << 20}\s*$", out, re.M):
        raise BenchError(f"guest at {ip}: eth0 not virtio_net/up or no /tmp/z: {out!r}")
    ping = side.talk(f"ping -c 2 -W 3 {BRIDGE_IP}", timeout=60)
    if " 0% packet loss" not in ping:
        raise BenchError(f"guest at {ip} does not reach the peer: {ping!r}")


def boot_ferry(ns, iso, vcpus, name="ferry", host_nic="e1000"):
    host_mac, host_ip, mac = FERRIES[name]
    m = Machine(f"bench-guestnet-{name}", kind="qemu", cpus=2, mem=768, iso=iso,
                extra=qemu_nic(ns.add_tap(), host_mac, host_nic),
                netns=ns.name).start(boot_timeout=120)
    if "ipv4 address" not in m.cmd(f"net ip {host_ip}/24", timeout=60):
        raise BenchError(f"{name}: net ip failed; see {m.logpath}")
    out = m.cmd(f"create lx kernel=vmlinuz initrd=initrd mem={MEM} vcpus={vcpus} nic=on "
                f'mac={mac} cmdline="{CMDLINE}"', timeout=60)
    if "error" in out:
        raise BenchError(f"ferry: create: {out}")
    m.cmd("start lx")
    m.send("console lx\r")
    m.expect(r"escape character is \^\]\)", timeout=30)
    m.expect("FERRY-LINUX: init ready", timeout=BOOT_TIMEOUT)
    m.expect(SHELL, timeout=60)
    detach(m)
    return m


def boot_bare(ns, vcpus, name):
    _, mac, props, cpu = BARES[name]
    d = Bare(ns, ns.add_tap(), f"bench-guestnet-{name}", vcpus, mac, props, cpu)
    d.expect("FERRY-LINUX: init ready", 0, BOOT_TIMEOUT)
    d.expect(re.escape(SHELL), 0, 60)
    return d


# ---- one transfer each way -------------------------------------------------
class Peer:
    """netpeer.py in the namespace, each line of its output stamped with the
    host's clock as it arrives (the end of a transfer is when it prints)."""

    def __init__(self, ns, *args):
        self.p = subprocess.Popen(["ip", "netns", "exec", ns.name] + PEER +
                                  [str(x) for x in args],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines, self.what, self.done = [], args[0], False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append((time.time(), line))
        self.done = True

    def wait(self, pattern, timeout=XFER_TIMEOUT):
        """(match, host time) of the first line matching pattern."""
        end = time.time() + timeout
        while time.time() < end:
            done = self.done
            for t, line in list(self.lines):
                r = re.search(pattern, line)
                if r:
                    return r, t
            if done:
                break
            time.sleep(0.05)
        self.p.kill()
        self.p.wait(10)
        raise BenchError(f"peer ({self.what}): no {pattern!r}: {self.lines!r}")

    def result(self):
        """(bytes, crc32, seconds, host time of the end) of the transfer."""
        r, t = self.wait(r"(?:sent|received) (\d+) crc32 ([0-9a-f]{8}) seconds ([\d.]+)")
        self.p.wait(30)
        return int(r.group(1)), r.group(2), float(r.group(3)), t


class CpuSampler:
    """A host process's CPU seconds sampled every 50 ms, for the CPU it used
    over any stretch of host time."""

    def __init__(self, pid):
        self.pid, self.samples, self.running = pid, [], True
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while self.running:
            try:
                self.samples.append((time.time(), cpu_s(self.pid)))
            except OSError:
                return
            time.sleep(0.05)

    def at(self, t):
        """CPU seconds at host time t, interpolated between samples."""
        s = list(self.samples)
        for (t0, c0), (t1, c1) in zip(s, s[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c0
        raise BenchError(f"no CPU samples around {t}")

    def between(self, t0, t1):
        time.sleep(0.1)             # a sample after t1
        return self.at(t1) - self.at(t0)

    def stop(self):
        self.running = False


def guest_to_peer(ns, side, mb):
    """(peer s, guest s, host time of the end): the guest sends /tmp/z to
    netpeer.py recv."""
    p = Peer(ns, "recv", TX_PORT, XFER_TIMEOUT)
    p.wait(r"^listening", 30)
    out = side.talk(f"read a x < /proc/uptime; nc {BRIDGE_IP} {TX_PORT} -e cat /tmp/z; "
                    "read b x < /proc/uptime; echo \"TX $a $b\"", timeout=XFER_TIMEOUT)
    n, crc, secs, end = p.result()
    want = f"{zlib.crc32(bytes(mb << 20)):08x}"
    if n != mb << 20 or crc != want:
        raise BenchError(f"peer received {n} bytes crc32 {crc}, sent {mb << 20} crc32 {want}")
    t = re.search(r"TX ([\d.]+) ([\d.]+)", out)
    if not t:
        raise BenchError(f"guest: no TX line: {out!r}")
    return secs, float(t.group(2)) - float(t.group(1)), end


RX_SCRIPT = ("dd bs=1 count=1 of=/dev/null 2>/dev/null; cut -d\" \" -f1 /proc/uptime > /tmp/t0; "
             "wc -c > /tmp/n; cut -d\" \" -f1 /proc/uptime > /tmp/t1")


def peer_to_guest(ns, side, ip, mb):
    """(peer s, guest s, host time of the end): netpeer.py send to `nc -l`
    in the guest."""
    out = side.talk(f"rm -f /tmp/t0 /tmp/t1 /tmp/n; (nc -l -p {RX_PORT} -e sh -c '{RX_SCRIPT}' "
                    "< /dev/null > /dev/null 2>&1 &); sleep 1; netstat -ltn", timeout=60)
    if not re.search(rf":{RX_PORT}\s", out):
        raise BenchError(f"guest at {ip}: nc does not listen: {out!r}")
    n, _, secs, end = Peer(ns, "send", ip, RX_PORT, mb << 20).result()
    out = side.talk("i=0; while [ ! -s /tmp/t1 ] && [ $i -lt 60 ]; do sleep 1; i=$((i+1)); "
                    "done; echo \"RX $(cat /tmp/n) $(cat /tmp/t0) $(cat /tmp/t1)\"", timeout=120)
    r = re.search(r"RX (\d+) ([\d.]+) ([\d.]+)", out)
    # the guest counted all but the first byte
    if n != mb << 20 or not r or int(r.group(1)) + 1 != n:
        raise BenchError(f"peer sent {n} bytes, guest at {ip} says {out!r}")
    return secs, float(r.group(3)) - float(r.group(2)), end


def measured(fn, cpu, m=None):
    """fn()'s (peer s, guest s), the QEMU process's CPU seconds over the
    transfer as the peer timed it, and ferry's `stats lx` difference over
    the whole of fn (console commands included) when m is ferry's Machine:
    (exits by reason, seconds in the guest, seconds in ferry)."""
    s0 = stats(m, "lx") if m else None
    peer_s, guest_s, end = fn()
    used = cpu.between(end - peer_s, end)
    if not m:
        return (peer_s, guest_s), used, None
    s1 = stats(m, "lx")
    exits = {k: s1[0][k] - s0[0].get(k, 0) for k in s1[0]}
    return (peer_s, guest_s), used, (exits, s1[1] - s0[1], s1[2] - s0[2])


# ---- the run -----------------------------------------------------------------
def rates(mb, secs):
    """Median MB/s and each round's, 10^6 bytes per second."""
    return mb * 1.048576 / statistics.median(secs), [round(mb * 1.048576 / x, 1) for x in secs]


def rate_line(label, res, d, key, mb):
    meds = {}
    parts = []
    for side in res:
        meds[side], each = rates(mb, res[side][d][key])
        parts.append(f"{side} {meds[side]:.1f} MB/s {each}")
    ratios = ", ".join(f"ferry/{b} {meds['ferry'] / meds[b]:.3f}" for b in res if b != "ferry")
    print(f"  {label}: " + "; ".join(parts) + f"; throughput ratio {ratios}")


def cpu_line(res, d, mb):
    med = statistics.median
    parts = []
    for side in res:
        c = res[side][d]["cpu"]
        u = [x / w for x, w in zip(c, res[side][d]["peer"])]
        parts.append(f"{side} {1000 * med(c) / mb:.0f} ms/MiB, {100 * med(u):.0f}% of one CPU "
                     f"{[round(100 * x) for x in u]}")
    print("    host CPU of the QEMU process while the peer timed the transfer: " +
          "; ".join(parts))


def ferry_lines(res, d, mb, side="ferry"):
    med = statistics.median
    st = res[side][d]["stats"]
    tot = [s[0].get("total", 0) / mb for s in st]
    g = [s[1] for s in st]
    h = [s[2] for s in st]
    print(f"    under {side} (`stats lx` around the transfer and its console commands): "
          f"VM exits per MiB {med(tot):.0f} {[round(x) for x in tot]}; the guest's vCPU "
          f"{1000 * med(g) / mb:.0f} ms/MiB in the guest + {1000 * med(h) / mb:.0f} ms/MiB in "
          f"ferry handling its exits (the transfer itself: "
          f"{1000 * med(res[side][d]['peer']) / mb:.0f} ms/MiB)")
    by = {}
    for s in st:
        for k, v in s[0].items():
            if k != "total" and not k.startswith("_"):
                by.setdefault(k, []).append(v / mb)
    top = sorted(((med(v), k) for k, v in by.items()), reverse=True)[:6]
    pv = med([s[0].get("_pv_eoi", 0) / mb for s in st])
    print("    exits per MiB by reason (median): " +
          ", ".join(f"{k} {v:.0f}" for v, k in top if v >= 0.5) +
          f"; interrupts ended by PV EOI, no exit: {pv:.0f} per MiB")


def report(res, mb, vcpus, rounds, host_nic="e1000"):
    print(f"guest network throughput: Debian 12 kernel + busybox initramfs, {MEM} MiB, {vcpus} "
          f"vCPU(s), virtio-net; {mb} MiB per transfer; QEMU TCG; {rounds} rounds, the sides' "
          f"order rotated every round (ferry: QEMU -smp 2 host, the guest switched onto "
          f"ferry's {host_nic}; bare: QEMU -smp {vcpus}, virtio-net-pci on a tap, as QEMU gives it"
          + ("; bare-plain: the same with only ferry's virtio features, INTx"
             if "bare-plain" in res else "")
          + ("; bare-qemu64: bare on -cpu qemu64" if "bare-qemu64" in res else "")
          + f"; the bare guests' CPU: {FERRY_CPU}, ferry's guest CPU as QEMU gives it)")
    for d, label in (("tx", "guest -> peer"), ("rx", "peer -> guest")):
        rate_line(label + ", timed by the peer", res, d, "peer", mb)
        rate_line(label + ", timed by the guest", res, d, "guest", mb)
        cpu_line(res, d, mb)
        for f in ("ferry", "ferry-vs"):
            if f in res:
                ferry_lines(res, d, mb, f)


def linux_iso(prefix):
    """ferry's ISO with Debian's kernel and the initramfs as modules (both
    fetched or built first, as tests/integration/test_linux.py does)."""
    subprocess.run([os.path.join(ROOT, "tools", "fetch-linux.sh"), LINUX], check=True,
                   timeout=900)
    os.makedirs(LOGDIR, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    return make_iso(tmp, guests=[os.path.join(LINUX, "vmlinuz"), os.path.join(LINUX, "initrd")])


def bench(rounds, mb, vcpus, bares, vs=None, host_nic="e1000"):
    iso = linux_iso("bench-guestnet-")
    ferries = ["ferry"] + (["ferry-vs"] if vs else [])
    isos = {"ferry": iso}
    if vs:      # the same ISO with the other build's ferry.elf
        isos["ferry-vs"] = iso[:-4] + "-vs.iso"
        subprocess.run([os.path.join(ROOT, "tools", "mkiso.sh"), isos["ferry-vs"], vs,
                        " ".join(os.path.join(LINUX, f) for f in ("vmlinuz", "initrd"))],
                       check=True, timeout=300, stdout=subprocess.DEVNULL)
    res = {s: {d: {"peer": [], "guest": [], "cpu": [], "stats": []} for d in ("tx", "rx")}
           for s in ferries + bares}
    ms, vms, cpus = [], [], []
    with NetNS(f"gnb{os.getpid()}") as ns:
        try:
            sides = []
            for f in ferries:
                ms.append(boot_ferry(ns, isos[f], vcpus, f, host_nic))
                setup_guest(FerrySide(ms[-1]), FERRY_IPS[f], mb)
                sides.append((f, FerrySide(ms[-1]), FERRY_IPS[f], CpuSampler(ms[-1].proc.pid),
                              ms[-1]))
            for b in bares:
                vms.append(boot_bare(ns, vcpus, b))
                setup_guest(vms[-1], BARES[b][0], mb)
                sides.append((b, vms[-1], BARES[b][0], CpuSampler(vms[-1].proc.pid), None))
            cpus = [s[3] for s in sides]
            for r in range(rounds):
                k = r % len(sides)
                for side in sides[k:] + sides[:k]:
                    one_side(ns, side, mb, res, r)
        finally:
            for c in cpus:
                c.stop()
            for vm in vms:
                vm.close()
            for m in ms:
                m.close()
    report(res, mb, vcpus, rounds, host_nic)


def one_side(ns, side, mb, res, r):
    """One transfer each way on one side, its figures into res."""
    name, guest, ip, cpu_of, mach = side
    for d, fn in (("tx", lambda: guest_to_peer(ns, guest, mb)),
                  ("rx", lambda: peer_to_guest(ns, guest, ip, mb))):
        (p, g), cpu, st = measured(fn, cpu_of, mach)
        e = res[name][d]
        e["peer"].append(p)
        e["guest"].append(g)
        e["cpu"].append(cpu)
        if st:
            e["stats"].append(st)
        print(f"guestnet: round {r + 1} {name} {d}: peer {p:.2f} s, guest {g:.2f} s, QEMU CPU "
              f"{cpu:.2f} s" + (f", exits {st[0].get('total', 0)}" if st else ""), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each side once each way (3)")
    ap.add_argument("--mb", type=int, default=64, help="MiB per transfer (64)")
    ap.add_argument("--vcpus", type=int, default=1, help="the guest's vCPUs on both sides (1)")
    ap.add_argument("--vs", metavar="ELF",
                    help="also a ferry host booted from this ferry.elf (another build)")
    ap.add_argument("--no-plain", action="store_true",
                    help="leave out bare-plain (bare QEMU with only ferry's virtio features)")
    ap.add_argument("--qemu64", action="store_true",
                    help="also bare-qemu64: bare QEMU's guest on -cpu qemu64 (AuthenticAMD), "
                         "not on ferry's guest CPU")
    ap.add_argument("--host-nic", default="e1000", choices=sorted(QEMU_NICS),
                    help="the ferry host's NIC, the guest's uplink (e1000)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("guestnet: needs root (network namespace)")
        return
    if not 1 <= a.mb <= 100:
        sys.exit("guestnet: --mb must be 1..100 (the guest holds the file in its tmpfs)")
    # a SIGTERM still deletes the namespace and stops the emulators
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("guestnet: terminated"))
    if a.vs and not os.path.isfile(a.vs):
        sys.exit(f"guestnet: --vs {a.vs}: no such file")
    bares = ["bare"] + ([] if a.no_plain else ["bare-plain"]) + (["bare-qemu64"] if a.qemu64 else [])
    bench(a.rounds, a.mb, a.vcpus, bares,
          os.path.abspath(a.vs) if a.vs else None, a.host_nic)


if __name__ == "__main__":
    main(sys.argv[1:])
