#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): ferry's network throughput against Debian's Linux
kernel on the same emulated NIC (QEMU TCG) and the same bridge, every side
measured in one run, for each NIC model ferry drives: e1000 (82540EM),
e1000e (82574L) and virtio-net (virtio 1.x, modern only).

  python3 tests/bench/net_vs_linux.py [--pairs 3] [--mb 64] [--mode file|pipe] [--cpus 2]
                                      [--nics e1000,e1000e,virtio-net]
  python3 tests/bench/run.py net            (the same with the defaults)

Needs root (a network namespace with a bridge, as tests/integration/test_net.py).
Each round (--pairs of them per NIC) runs every side once, in turn, so that
machine noise hits all of them alike; every run sends --mb MiB (64):
  - to the bridge: ferry's `nettest send`, then Linux sending, to
    tests/integration/netpeer.py `recv PORT` inside the namespace (the
    "ferry / Linux" table);
  - between two guests on the bridge, each on its own tap: ferry -> ferry
    (`nettest listen` on one host, `nettest send` on the other, as
    test_net.py::test_two_ferry_hosts), Linux -> Linux, Linux -> ferry and
    ferry -> Linux; the ratios ferry->ferry / Linux->Linux and
    Linux->ferry / ferry->Linux follow the medians.
The figure compared is always the receiver's, on its own clock: netpeer.py
and ferry's `nettest listen` from accept to EOF, a Linux guest from the first
byte to EOF (its uptime, in 10 ms steps).  Every receiver's byte count and
checksum is checked against what was sent: ferry sends nettest's
reproducible stream (hv/net/nettest.h; its crc32 and md5 are computed here),
Linux sends zeros; ferry and netpeer.py give crc32, a Linux receiver md5.

Linux side: the real package behind linux-image-amd64 is downloaded with
`apt-get download` and only its kernel and network modules are extracted into
build/bench/linux/ (nothing is installed in /boot); busybox-static and cpio are
installed with apt-get when missing; tools/mkinitramfs.sh builds
build/bench/initramfs.cpio.gz, whose /init loads e1000, e1000e, virtio_pci and
virtio_net (modules in Debian's kernel; only the one whose card is there
binds), configures eth0 and, as QEMU boots the kernel directly with bench.*
options, either sends with busybox nc (--mode file: `cat` of a tmpfs file
into the socket, which busybox does with sendfile(2): Linux at its best, the
default; --mode pipe: `dd if=/dev/zero | nc`, which measures busybox nc's
1024-byte write(2)s more than the kernel) or receives (bench.mode=recv:
`nc -l` running cat into tmpfs, then "BENCH: received N bytes uptime T0 T1
md5 HEX").  Every emulator run has a timeout; a failure raises BenchError
naming its console transcript, build/test-logs/bench-net-*.log.
"""
import argparse
import contextlib
import glob
import hashlib
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = os.path.join(HERE, "..", "integration")
sys.path.insert(0, INTEG)
from ferry_harness import ISO, LOGDIR, ROOT, Machine  # noqa: E402
from netns import BRIDGE_IP, QEMU_NICS, NetNS, qemu_nic  # noqa: E402

BENCH = os.path.join(ROOT, "build", "bench")
KROOT = os.path.join(BENCH, "linux")
INITRD = os.path.join(BENCH, "initramfs.cpio.gz")
MKINITRAMFS = os.path.join(ROOT, "tools", "mkinitramfs.sh")
MODULES = ["e1000", "e1000e", "virtio_pci", "virtio_net"]   # Linux's drivers for the NICs
KTREES = ["./lib/modules/*/kernel/drivers/net/*", "./lib/modules/*/kernel/drivers/virtio/*",
          "./lib/modules/*/kernel/net/core/*"]           # failover.ko is in net/core
PEER = ["/usr/bin/python3", os.path.join(INTEG, "netpeer.py")]
FERRY_IP, FERRY_MAC = "10.200.0.2", "52:54:00:12:00:02"
LINUX_IP, LINUX_MAC = "10.200.0.3", "52:54:00:12:00:03"
FERRY_RX_IP, FERRY_RX_MAC = "10.200.0.4", "52:54:00:12:00:04"   # the receiving side
LINUX_RX_IP, LINUX_RX_MAC = "10.200.0.5", "52:54:00:12:00:05"   # between two guests
MEM = 256
RUN_TIMEOUT = 600      # seconds for one emulator run, boot to end of the send
BOOT_TIMEOUT = 300     # seconds to ferry's prompt or a Linux receiver's listening socket


class BenchError(RuntimeError):
    pass


# ---- what the Linux side needs -------------------------------------------
def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                       capture_output=True, text=True)
    return "install ok installed" in r.stdout


def ensure_packages(pkgs=("busybox-static", "cpio")):
    missing = [p for p in pkgs if not installed(p)]
    if not missing:
        return
    print("net: installing with apt-get: " + " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
                   check=True, env=env, timeout=900)


def kernel_package():
    """The versioned package that linux-image-amd64 (a metapackage) depends on."""
    out = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"Depends:\s+(linux-image-[0-9][^\s]*-amd64)\b", out)
    if not m:
        raise BenchError("apt-cache depends linux-image-amd64 names no kernel:\n" + out)
    return m.group(1)


def vmlinuz():
    found = sorted(glob.glob(os.path.join(KROOT, "boot", "vmlinuz-*")))
    return found[-1] if found else None


def have_modules():
    return bool(glob.glob(os.path.join(KROOT, "lib", "modules", "*", "kernel", "drivers",
                                       "virtio", "virtio_pci.ko*")))


def ensure_kernel():
    """Extract Debian's kernel and its network and virtio modules into
    build/bench/linux/."""
    if vmlinuz() and have_modules():
        return vmlinuz()
    pkg = kernel_package()
    print(f"net: downloading {pkg} with apt-get download and extracting its kernel and"
          f" network modules into {os.path.relpath(KROOT, ROOT)}/ (not installed)", flush=True)
    os.makedirs(KROOT, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BENCH) as tmp:
        subprocess.run(["apt-get", "download", "-qq", "-o", "APT::Sandbox::User=root", pkg],
                       cwd=tmp, check=True, timeout=900)
        deb = glob.glob(os.path.join(tmp, "*.deb"))[0]
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", KROOT, "--wildcards", "./boot/*"] + KTREES,
                       stdin=tar.stdout, check=True, timeout=300)
        tar.stdout.close()
        if tar.wait(60):
            raise BenchError(f"dpkg-deb could not read {deb}")
    if not vmlinuz():
        raise BenchError(f"no boot/vmlinuz-* in {pkg}")
    return vmlinuz()


def ensure_initramfs():
    """The initramfs, built again when the script or the module list changed."""
    stamp = INITRD + ".modules"
    try:
        with open(stamp) as f:
            same = f.read().split() == MODULES
    except OSError:
        same = False
    if same and os.path.exists(INITRD) and \
            os.path.getmtime(INITRD) >= os.path.getmtime(MKINITRAMFS):
        return INITRD
    subprocess.run([MKINITRAMFS, KROOT, INITRD] + MODULES, check=True, timeout=300)
    with open(stamp, "w") as f:
        f.write(" ".join(MODULES) + "\n")
    return INITRD


def ensure_iso():
    if not os.path.exists(ISO):
        print("net: build/ferry.iso missing: make iso", flush=True)
        subprocess.run(["make", "-C", ROOT, "iso"], check=True, timeout=1800)


# ---- the receiver ----------------------------------------------------------
def receiver(ns, port):
    p = subprocess.Popen(["ip", "netns", "exec", ns.name] + PEER + ["recv", str(port), "300"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline().strip()
    if line != "listening":
        stop(p)
        raise BenchError(f"receiver did not start: {line}")
    return p


def received(p, timeout=120):
    """(bytes, crc, seconds) printed by the receiver."""
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(p)
        raise BenchError("receiver printed no result")
    m = re.search(r"received (\d+) crc32 ([0-9a-f]{8}) seconds ([\d.]+)", out)
    if not m:
        raise BenchError(f"receiver: {out!r}")
    return int(m.group(1)), m.group(2), float(m.group(3))


def stop(p, timeout=10):
    if p and p.poll() is None:
        p.kill()
        p.wait(timeout)


def rate(nbytes, secs):
    """MB/s, 10^6 bytes per second as ferry's nettest prints it."""
    return nbytes / secs / 1e6 if secs > 0 else float("inf")


# ---- the machines ----------------------------------------------------------
def ferry_host(ns, tap, ip, mac, model, cpus, iso, name):
    """A ferry host booted on tap with its address set; its Machine."""
    m = Machine(name, kind="qemu", cpus=cpus, mem=MEM, iso=iso,
                extra=qemu_nic(tap, mac, model), netns=ns.name)
    try:
        with transcript(m.logpath):
            m.start(boot_timeout=BOOT_TIMEOUT)
            net = m.cmd("net")
            if not re.search(rf"nic:\s+{re.escape(model)} \(", net):
                raise BenchError(f"ferry: not on its {model}: {net}; see {m.logpath}")
            out = m.cmd(f"net ip {ip}/24", timeout=60)
            if "ipv4 address" not in out:
                raise BenchError(f"ferry: net ip: {out}; see {m.logpath}")
    except BaseException:
        m.close()
        raise
    return m


@contextlib.contextmanager
def transcript(log):
    """The harness's timeouts and emulator exits as a BenchError naming the
    transcript."""
    try:
        yield
    except AssertionError as e:
        raise BenchError(f"{e}\nsee {log}") from e


TX_LINE = r"nettest: sent (\d+) bytes in (\d+\.\d+) s: [\d.]+ MB/s, crc32 ([0-9a-f]{8})"
RX_LINE = r"nettest: received (\d+) bytes in (\d+\.\d+) s: [\d.]+ MB/s, crc32 ([0-9a-f]{8})"


def ferry_send(m, ip, port, mb):
    """`nettest send`: (bytes, seconds, crc32) as ferry prints them, and the
    host's wall time of the whole command (connect included)."""
    t0 = time.time()
    with transcript(m.logpath):
        out = m.cmd(f"nettest send {ip} {port} {mb}", timeout=RUN_TIMEOUT)
    wall = time.time() - t0
    own = re.search(TX_LINE, out)
    if not own:
        raise BenchError(f"ferry: nettest send: {out}; see {m.logpath}")
    return int(own.group(1)), float(own.group(2)), own.group(3), wall


def ferry_listen(m, port):
    with transcript(m.logpath):
        m.send(f"nettest listen {port}\r")
        m.expect(f"listening on port {port}", timeout=60)


def ferry_received(m, timeout=120):
    """(bytes, seconds from accept to end, crc32) of `nettest listen`."""
    with transcript(m.logpath):
        g = m.expect(RX_LINE, timeout=timeout).groups()
    return int(g[0]), float(g[1]), g[2]


class LinuxVM:
    """Debian's kernel booted directly by QEMU with the bench initramfs,
    bench.* options from opts; its console goes to LOGDIR/name.log."""

    def __init__(self, ns, tap, mac, model, cpus, kernel, name, **opts):
        self.name = name
        self.log = os.path.join(LOGDIR, f"{name}.log")
        append = "console=ttyS0 quiet panic=1 " + " ".join(f"bench.{k}={v}"
                                                           for k, v in opts.items())
        cmd = ["ip", "netns", "exec", ns.name, "qemu-system-x86_64", "-accel", "tcg",
               "-cpu", "qemu64", "-smp", str(cpus), "-m", str(MEM), "-kernel", kernel,
               "-initrd", INITRD, "-append", append, "-display", "none", "-monitor", "none",
               "-serial", "stdio", "-no-reboot"] + qemu_nic(tap, mac, model)
        os.makedirs(LOGDIR, exist_ok=True)
        self.f = open(self.log, "w")
        self.q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.f,
                                  stderr=subprocess.STDOUT)
        self.deadline = time.time() + RUN_TIMEOUT

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_for(self, pattern, timeout=BOOT_TIMEOUT):
        end = min(time.time() + timeout, self.deadline)
        while True:
            m = re.search(pattern, self.text())
            if m:
                return m
            if self.q.poll() is not None:
                raise BenchError(f"Linux ({self.name}) powered off before {pattern!r}:"
                                 f" see {self.log}:\n{self.text()[-1500:]}")
            if time.time() > end:
                raise BenchError(f"Linux ({self.name}): no {pattern!r} within {timeout} s:"
                                 f" see {self.log}")
            time.sleep(0.2)

    def finish(self):
        """Wait for the power-off; the console text, which must say rc=0."""
        try:
            self.q.wait(max(1.0, self.deadline - time.time()))
        except subprocess.TimeoutExpired:
            raise BenchError(f"Linux ({self.name}) did not power off within {RUN_TIMEOUT} s:"
                             f" see {self.log}")
        text = self.text()
        done = re.search(r"BENCH: done rc=(\d+)", text)
        if not done or done.group(1) != "0":
            raise BenchError(f"Linux ({self.name}) failed: see {self.log}:\n{text[-1500:]}")
        return text

    def close(self):
        stop(self.q)
        self.f.close()


def linux_received(vm):
    """(bytes, seconds from the first byte to the end, md5) a receiving
    Linux printed before powering off."""
    text = vm.finish()
    m = re.search(r"BENCH: received (\d+) bytes uptime ([\d.]+) ([\d.]+) md5 ([0-9a-f]{32})",
                  text)
    if not m:
        raise BenchError(f"Linux ({vm.name}): no result line: see {vm.log}")
    return int(m.group(1)), float(m.group(3)) - float(m.group(2)), m.group(4)


# ---- the stream each sender sends -------------------------------------------
M64 = (1 << 64) - 1
_SUMS = {}


def splitmix64(k):
    z = ((k + 1) * 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def nettest_sums(nbytes):
    """(crc32, md5) of the first nbytes (a multiple of 8) of nettest's stream:
    byte i is byte i mod 8 of the little-endian splitmix64(i / 8)
    (hv/net/nettest.h)."""
    if nbytes not in _SUMS:
        crc, md5, words, step = 0, hashlib.md5(), nbytes // 8, 1 << 15
        for k in range(0, words, step):
            n = min(step, words - k)
            chunk = struct.pack(f"<{n}Q", *map(splitmix64, range(k, k + n)))
            crc = zlib.crc32(chunk, crc)
            md5.update(chunk)
        _SUMS[nbytes] = (f"{crc:08x}", md5.hexdigest())
    return _SUMS[nbytes]


def zero_sums(nbytes):
    """(crc32, md5) of the zeros a Linux sender sends."""
    z = bytes(nbytes)
    return f"{zlib.crc32(z):08x}", hashlib.md5(z).hexdigest()


def check(what, got, want):
    if got != want:
        raise BenchError(f"{what}: received (bytes, sum) {got}, sent {want}")


# ---- to the namespace's bridge: one ferry run and one Linux run ----------------
def ferry_run(ns, tap, port, mb, cpus, iso, idx, model):
    """Boot ferry, `nettest send` mb MiB; MB/s as (the receiver's, ferry's own,
    and mb over the host's wall time of the whole command, connect included)."""
    m = ferry_host(ns, tap, FERRY_IP, FERRY_MAC, model, cpus, iso,
                   f"bench-net-ferry-{model}-{idx}")
    rx = None
    try:
        rx = receiver(ns, port)
        nbytes, secs, crc, wall = ferry_send(m, BRIDGE_IP, port, mb)
        got, rcrc, rsecs = received(rx)
        check(f"ferry -> bridge (see {m.logpath})", (got, rcrc), (mb << 20, crc))
        check(f"ferry -> bridge (see {m.logpath})", nbytes, mb << 20)
        return rate(got, rsecs), rate(got, secs), rate(got, wall)
    finally:
        stop(rx)
        m.close()


def linux_run(ns, tap, port, mb, cpus, mode, kernel, idx, model):
    """Boot Linux, send mb MiB with busybox nc; the receiver's MB/s."""
    rx = receiver(ns, port)
    vm = None
    try:
        vm = LinuxVM(ns, tap, LINUX_MAC, model, cpus, kernel, f"bench-net-linux-{model}-{idx}",
                     ip=f"{LINUX_IP}/24", dst=BRIDGE_IP, port=port, mb=mb, mode=mode)
        vm.finish()
        nbytes, crc, secs = received(rx)
        check(f"Linux -> bridge (see {vm.log})", (nbytes, crc), (mb << 20, zero_sums(mb << 20)[0]))
        return rate(nbytes, secs)
    finally:
        stop(rx)
        if vm:
            vm.close()


# ---- between two guests on the bridge ----------------------------------------
# Each returns the receiver's MB/s (from its own clock: ferry from accept to
# the end, Linux from the first byte to the end); the receiver boots first.
def ferry_receiver(stack, ns, tap, model, cpus, iso, name, port):
    """A ferry host listening with nettest on port, closed with stack."""
    rx = stack.enter_context(contextlib.closing(
        ferry_host(ns, tap, FERRY_RX_IP, FERRY_RX_MAC, model, cpus, iso, name)))
    ferry_listen(rx, port)
    return rx


def linux_receiver(stack, ns, tap, model, cpus, kernel, name, port):
    """A Linux VM in bench.mode=recv, once it listens; closed with stack."""
    rx = stack.enter_context(contextlib.closing(
        LinuxVM(ns, tap, LINUX_RX_MAC, model, cpus, kernel, name, ip=f"{LINUX_RX_IP}/24",
                port=port, mode="recv")))
    rx.wait_for(rf"BENCH: listening on {port}\b")
    return rx


def ferry_sender(stack, ns, tap, model, cpus, iso, name):
    return stack.enter_context(contextlib.closing(
        ferry_host(ns, tap, FERRY_IP, FERRY_MAC, model, cpus, iso, name)))


def linux_sender(stack, ns, tap, model, cpus, kernel, name, dst, port, mb, mode):
    """A Linux VM sending mb MiB of zeros to dst:port, run to its end."""
    tx = stack.enter_context(contextlib.closing(
        LinuxVM(ns, tap, LINUX_MAC, model, cpus, kernel, name, ip=f"{LINUX_IP}/24", dst=dst,
                port=port, mb=mb, mode=mode)))
    tx.finish()
    return tx


def ferry_to_ferry(ns, taps, port, mb, cpus, iso, idx, model):
    with contextlib.ExitStack() as st:
        rx = ferry_receiver(st, ns, taps[1], model, cpus, iso, f"bench-net-ff-rx-{model}-{idx}",
                            port)
        tx = ferry_sender(st, ns, taps[0], model, cpus, iso, f"bench-net-ff-tx-{model}-{idx}")
        nbytes, _, crc, _ = ferry_send(tx, FERRY_RX_IP, port, mb)
        got, secs, rcrc = ferry_received(rx)
        check(f"ferry -> ferry (see {rx.logpath})", (got, rcrc), (nbytes, crc))
        check(f"ferry -> ferry (see {rx.logpath})", (got, rcrc), (mb << 20, nettest_sums(got)[0]))
        return rate(got, secs)


def linux_to_ferry(ns, taps, port, mb, cpus, iso, kernel, mode, idx, model):
    with contextlib.ExitStack() as st:
        rx = ferry_receiver(st, ns, taps[1], model, cpus, iso, f"bench-net-lf-rx-{model}-{idx}",
                            port)
        linux_sender(st, ns, taps[0], model, cpus, kernel, f"bench-net-lf-tx-{model}-{idx}",
                     FERRY_RX_IP, port, mb, mode)
        got, secs, crc = ferry_received(rx)
        check(f"Linux -> ferry (see {rx.logpath})", (got, crc), (mb << 20, zero_sums(mb << 20)[0]))
        return rate(got, secs)


def ferry_to_linux(ns, taps, port, mb, cpus, iso, kernel, idx, model):
    with contextlib.ExitStack() as st:
        rx = linux_receiver(st, ns, taps[1], model, cpus, kernel,
                            f"bench-net-fl-rx-{model}-{idx}", port)
        tx = ferry_sender(st, ns, taps[0], model, cpus, iso, f"bench-net-fl-tx-{model}-{idx}")
        nbytes, _, crc, _ = ferry_send(tx, LINUX_RX_IP, port, mb)
        got, secs, md5 = linux_received(rx)
        want_crc, want_md5 = nettest_sums(mb << 20)
        check(f"ferry -> Linux (see {rx.log})", (got, md5), (mb << 20, want_md5))
        check(f"ferry -> Linux (see {tx.logpath})", (nbytes, crc), (mb << 20, want_crc))
        return rate(got, secs)


def linux_to_linux(ns, taps, port, mb, cpus, kernel, mode, idx, model):
    with contextlib.ExitStack() as st:
        rx = linux_receiver(st, ns, taps[1], model, cpus, kernel,
                            f"bench-net-ll-rx-{model}-{idx}", port)
        linux_sender(st, ns, taps[0], model, cpus, kernel, f"bench-net-ll-tx-{model}-{idx}",
                     LINUX_RX_IP, port, mb, mode)
        got, secs, md5 = linux_received(rx)
        check(f"Linux -> Linux (see {rx.log})", (got, md5), (mb << 20, zero_sums(mb << 20)[1]))
        return rate(got, secs)


# ---- the benchmark ---------------------------------------------------------
def gitrev():
    try:
        with open(os.path.join(ROOT, "build", "gitrev")) as f:
            return f.read().strip()
    except OSError:
        return "(build/gitrev missing)"


def fmt(xs):
    return "[" + ", ".join(f"{x:.1f}" for x in xs) + "]"


DIRECTIONS = ("ferry->ferry", "Linux->Linux", "Linux->ferry", "ferry->Linux")


def bench_model(ns, taps, model, pairs, mb, mode, cpus, kernel, iso, port0):
    """Rounds on one NIC model, each running every side once in turn (ferry
    and Linux to the bridge, then the four directions between guests): the
    lists of MB/s by name."""
    res = {k: [] for k in ("ferry", "fself", "linux") + DIRECTIONS}
    for i in range(pairs):
        port = port0 + 10 * i
        f, fs, fw = ferry_run(ns, taps[0], port, mb, cpus, iso, i, model)
        res["ferry"].append(f)
        res["fself"].append(fs)
        print(f"  {model} round {i + 1}: to the bridge: ferry {f:.1f} MB/s (ferry's own {fs:.1f},"
              f" host wall of the command {fw:.1f})", end="", flush=True)
        lx = linux_run(ns, taps[1], port + 1, mb, cpus, mode, kernel, i, model)
        res["linux"].append(lx)
        print(f", Linux {lx:.1f} MB/s", flush=True)
        runs = {"ferry->ferry": lambda p: ferry_to_ferry(ns, taps, p, mb, cpus, iso, i, model),
                "Linux->Linux": lambda p: linux_to_linux(ns, taps, p, mb, cpus, kernel, mode, i,
                                                         model),
                "Linux->ferry": lambda p: linux_to_ferry(ns, taps, p, mb, cpus, iso, kernel, mode,
                                                         i, model),
                "ferry->Linux": lambda p: ferry_to_linux(ns, taps, p, mb, cpus, iso, kernel, i,
                                                         model)}
        print(f"  {model} round {i + 1}: between guests:", end="", flush=True)
        for k, d in enumerate(DIRECTIONS):
            r = runs[d](port + 2 + k)
            res[d].append(r)
            print(f" {d} {r:.1f}", end="" if k + 1 < len(DIRECTIONS) else " MB/s\n", flush=True)
    return res


def bench(pairs, mb, mode, cpus, models):
    ensure_packages()
    kernel = ensure_kernel()
    ensure_initramfs()
    ensure_iso()
    nettest_sums(mb << 20)      # before the runs, not between them
    kver = os.path.basename(kernel)[len("vmlinuz-"):]
    res = {}
    load0 = os.getloadavg()
    t0 = time.time()
    # a private copy: every ferry run of this benchmark boots the same image
    # even if build/ferry.iso is rebuilt meanwhile
    iso = os.path.join(BENCH, f"ferry-bench-{os.getpid()}.iso")
    shutil.copyfile(ISO, iso)
    rev = gitrev()
    try:
        with NetNS() as ns:
            taps = (ns.add_tap(), ns.add_tap())
            for k, model in enumerate(models):
                res[model] = bench_model(ns, taps, model, pairs, mb, mode, cpus, kernel, iso,
                                         5100 + 100 * k)
    finally:
        os.unlink(iso)
    load1 = os.getloadavg()
    med = statistics.median
    print(f"net: ferry {rev} vs Linux {kver}, {mb} MiB per run, QEMU TCG NICs on taps of one"
          f" bridge, {cpus} CPUs, {MEM} MiB each, {pairs} rounds per NIC alternating all sides"
          f" ({time.time() - t0:.0f} s); Linux sends with busybox nc ({mode})")
    print("  sent to netpeer.py recv on the namespace's bridge:")
    print(f"  {'NIC':<12} {'ferry MB/s':>11} {'Linux MB/s':>11} {'ferry/Linux':>12}"
          f"   (medians; runs: ferry | Linux)")
    ratios = {}
    for model in models:
        r = res[model]
        f, lx = med(r["ferry"]), med(r["linux"])
        ratios[model] = f / lx
        print(f"  {model:<12} {f:>11.1f} {lx:>11.1f} {f / lx:>12.2f}   {fmt(r['ferry'])} |"
              f" {fmt(r['linux'])}  (ferry's own figure {med(r['fself']):.1f})")
    print("  between two guests on the bridge (MB/s, medians; then the runs):")
    print(f"  {'NIC':<12}" + "".join(f" {d:>13}" for d in DIRECTIONS)
          + f" {'ff/LL':>6} {'Lf/fL':>6}")
    for model in models:
        r = res[model]
        m = {d: med(r[d]) for d in DIRECTIONS}
        ff_ll = m["ferry->ferry"] / m["Linux->Linux"]
        lf_fl = m["Linux->ferry"] / m["ferry->Linux"]
        ratios[model + " ff/LL"], ratios[model + " Lf/fL"] = ff_ll, lf_fl
        print(f"  {model:<12}" + "".join(f" {m[d]:>13.1f}" for d in DIRECTIONS)
              + f" {ff_ll:>6.2f} {lf_fl:>6.2f}")
        print(f"  {'':<12} runs: " + ", ".join(f"{d} {fmt(r[d])}" for d in DIRECTIONS))
    print("  receiver's figures, on its own clock: netpeer.py and ferry from accept to EOF,"
          " Linux from the first byte to EOF (uptime, 10 ms steps); MB = 10^6 bytes;"
          " ff/LL = ferry->ferry / Linux->Linux, Lf/fL = Linux->ferry / ferry->Linux")
    print(f"  host load average 1 min: {load0[0]:.2f} at start, {load1[0]:.2f} at end"
          f" (shared machine: figures are noisy)")
    return ratios


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3,
                    help="rounds per NIC, each running every side once (3)")
    ap.add_argument("--mb", type=int, default=64, help="MiB sent per run (64)")
    ap.add_argument("--mode", choices=("file", "pipe"), default="file",
                    help="Linux sender: file = cat of a tmpfs file (sendfile), pipe = dd | nc"
                         " (busybox nc writes 1 KiB at a time)")
    ap.add_argument("--cpus", type=int, default=2, help="emulated CPUs of every machine (2)")
    ap.add_argument("--nics", default=",".join(QEMU_NICS),
                    help="NIC models, comma-separated (" + ",".join(QEMU_NICS) + ")")
    a = ap.parse_args(argv)
    models = [x for x in a.nics.split(",") if x]
    if not models or any(x not in QEMU_NICS for x in models):
        sys.exit("net: --nics takes " + ", ".join(QEMU_NICS))
    if os.geteuid() != 0:
        print("net: needs root (network namespaces, apt-get)")
        return
    if not 1 <= a.mb <= 150:
        sys.exit("net: --mb must be 1..150 (the Linux guest holds the data in tmpfs)")
    # a SIGTERM still deletes the namespace and stops the emulators
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("net: terminated"))
    return bench(a.pairs, a.mb, a.mode, a.cpus, models)


if __name__ == "__main__":
    main()
