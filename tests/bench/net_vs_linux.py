#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): ferry's `nettest send` throughput against Debian's
Linux kernel sending the same amount, side by side in one run, on the same
emulated NIC (QEMU TCG) and the same bridge, to the same receiver, for each
NIC model ferry drives: e1000 (82540EM), e1000e (82574L) and virtio-net
(virtio 1.x, modern only).

  python3 tests/bench/net_vs_linux.py [--pairs 3] [--mb 64] [--mode file|pipe] [--cpus 2]
                                      [--nics e1000,e1000e,virtio-net]
  python3 tests/bench/run.py net            (the same with the defaults)

Needs root (a network namespace with a bridge, as tests/integration/test_net.py).
The receiver is tests/integration/netpeer.py `recv PORT` inside the namespace;
its figure (bytes / seconds from accept to EOF) is the one compared.  The runs
alternate (ferry, Linux, ferry, Linux, ...) so machine noise hits both alike.

Linux side: the real package behind linux-image-amd64 is downloaded with
`apt-get download` and only its kernel and network modules are extracted into
build/bench/linux/ (nothing is installed in /boot); busybox-static and cpio are
installed with apt-get when missing; tools/mkinitramfs.sh builds
build/bench/initramfs.cpio.gz, whose /init loads e1000, e1000e, virtio_pci and
virtio_net (modules in Debian's kernel; only the one whose card is there
binds), configures eth0 and sends with busybox nc (--mode file: `cat` of a
tmpfs file into the socket, which busybox does with sendfile(2): Linux at its
best, the default; --mode pipe: `dd if=/dev/zero | nc`, which measures busybox
nc's 1024-byte write(2)s more than the kernel).
Console transcripts go to build/test-logs/bench-net-*.log.
"""
import argparse
import glob
import os
import re
import shutil
import signal
import statistics
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
MEM = 256
RUN_TIMEOUT = 600      # seconds for one emulator run, boot to end of the send


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


# ---- one ferry run and one Linux run ---------------------------------------
def ferry_run(ns, tap, port, mb, cpus, iso, idx, model):
    """Boot ferry, `nettest send` mb MiB; MB/s as (the receiver's, ferry's own,
    and mb over the host's wall time of the whole command, connect included)."""
    m = Machine(f"bench-net-ferry-{model}-{idx}", kind="qemu", cpus=cpus, mem=MEM, iso=iso,
                extra=qemu_nic(tap, FERRY_MAC, model), netns=ns.name)
    rx = None
    try:
        m.start()
        net = m.cmd("net")
        if not re.search(rf"nic:\s+{re.escape(model)} \(", net):
            raise BenchError(f"ferry: not on its {model}: {net}")
        out = m.cmd(f"net ip {FERRY_IP}/24", timeout=60)
        if "ipv4 address" not in out:
            raise BenchError(f"ferry: net ip: {out}")
        rx = receiver(ns, port)
        t0 = time.time()
        out = m.cmd(f"nettest send {BRIDGE_IP} {port} {mb}", timeout=RUN_TIMEOUT)
        wall = time.time() - t0
        own = re.search(r"nettest: sent (\d+) bytes in (\d+\.\d+) s: [\d.]+ MB/s, "
                        r"crc32 ([0-9a-f]{8})", out)
        if not own:
            raise BenchError(f"ferry: nettest send: {out}")
        nbytes, crc, secs = received(rx)
        if nbytes != mb << 20 or (nbytes, crc) != (int(own.group(1)), own.group(3)):
            raise BenchError(f"ferry sent {own.group(1)} bytes crc {own.group(3)},"
                             f" receiver got {nbytes} crc {crc}")
        return rate(nbytes, secs), rate(nbytes, float(own.group(2))), rate(nbytes, wall)
    finally:
        stop(rx)
        m.close()


def linux_run(ns, tap, port, mb, cpus, mode, kernel, idx, model):
    """Boot Linux, send mb MiB with busybox nc; the receiver's MB/s."""
    log = os.path.join(LOGDIR, f"bench-net-linux-{model}-{idx}.log")
    append = (f"console=ttyS0 quiet panic=1 bench.ip={LINUX_IP}/24 bench.dst={BRIDGE_IP}"
              f" bench.port={port} bench.mb={mb} bench.mode={mode}")
    cmd = ["ip", "netns", "exec", ns.name, "qemu-system-x86_64", "-accel", "tcg",
           "-cpu", "qemu64", "-smp", str(cpus), "-m", str(MEM), "-kernel", kernel,
           "-initrd", INITRD, "-append", append, "-display", "none", "-monitor", "none",
           "-serial", "stdio", "-no-reboot"] + qemu_nic(tap, LINUX_MAC, model)
    rx = receiver(ns, port)
    q = None
    try:
        os.makedirs(LOGDIR, exist_ok=True)
        with open(log, "w") as f:
            q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f,
                                 stderr=subprocess.STDOUT)
            try:
                q.wait(RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise BenchError(f"Linux did not power off within {RUN_TIMEOUT} s: see {log}")
        text = open(log, errors="replace").read()
        done = re.search(r"BENCH: done rc=(\d+)", text)
        if not done or done.group(1) != "0":
            raise BenchError(f"Linux did not send: see {log}:\n{text[-1500:]}")
        nbytes, crc, secs = received(rx)
        want = f"{zlib.crc32(bytes(mb << 20)):08x}"
        if (nbytes, crc) != (mb << 20, want):
            raise BenchError(f"Linux: receiver got {nbytes} bytes crc {crc},"
                             f" want {mb << 20} crc {want}")
        return rate(nbytes, secs)
    finally:
        stop(rx)
        stop(q)


# ---- the benchmark ---------------------------------------------------------
def gitrev():
    try:
        with open(os.path.join(ROOT, "build", "gitrev")) as f:
            return f.read().strip()
    except OSError:
        return "(build/gitrev missing)"


def fmt(xs):
    return "[" + ", ".join(f"{x:.1f}" for x in xs) + "]"


def bench_model(ns, taps, model, pairs, mb, mode, cpus, kernel, iso, port0):
    """Alternating ferry/Linux runs on one NIC model: the three lists."""
    ferry, fself, linux = [], [], []
    for i in range(pairs):
        port = port0 + 2 * i
        f, fs, fw = ferry_run(ns, taps[0], port, mb, cpus, iso, i, model)
        ferry.append(f)
        fself.append(fs)
        print(f"  {model} pair {i + 1}: ferry {f:.1f} MB/s (ferry's own {fs:.1f},"
              f" host wall of the command {fw:.1f})", end="", flush=True)
        lx = linux_run(ns, taps[1], port + 1, mb, cpus, mode, kernel, i, model)
        linux.append(lx)
        print(f", Linux {lx:.1f} MB/s", flush=True)
    return ferry, fself, linux


def bench(pairs, mb, mode, cpus, models):
    ensure_packages()
    kernel = ensure_kernel()
    ensure_initramfs()
    ensure_iso()
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
    print(f"net: ferry {rev} vs Linux {kver}, {mb} MiB sent to netpeer.py recv on the namespace's"
          f" bridge, QEMU TCG NICs on a tap, {cpus} CPUs, {MEM} MiB, {pairs} alternating pairs"
          f" per NIC ({time.time() - t0:.0f} s); Linux sends with busybox nc ({mode})")
    print(f"  {'NIC':<12} {'ferry MB/s':>11} {'Linux MB/s':>11} {'ferry/Linux':>12}"
          f"   (medians; runs: ferry | Linux)")
    ratios = {}
    for model in models:
        ferry, fself, linux = res[model]
        f, lx = statistics.median(ferry), statistics.median(linux)
        ratios[model] = f / lx
        print(f"  {model:<12} {f:>11.1f} {lx:>11.1f} {f / lx:>12.2f}   {fmt(ferry)} | {fmt(linux)}"
              f"  (ferry's own figure {statistics.median(fself):.1f})")
    print("  receiver's figures: bytes from accept to EOF; MB = 10^6 bytes")
    print(f"  host load average 1 min: {load0[0]:.2f} at start, {load1[0]:.2f} at end"
          f" (shared machine: figures are noisy)")
    return ratios


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3, help="ferry/Linux run pairs (3)")
    ap.add_argument("--mb", type=int, default=64, help="MiB sent per run (64)")
    ap.add_argument("--mode", choices=("file", "pipe"), default="file",
                    help="Linux sender: file = cat of a tmpfs file (sendfile), pipe = dd | nc"
                         " (busybox nc writes 1 KiB at a time)")
    ap.add_argument("--cpus", type=int, default=2, help="emulated CPUs for both (2)")
    ap.add_argument("--nics", default=",".join(QEMU_NICS),
                    help="NIC models, comma-separated (" + ",".join(QEMU_NICS) + ")")
    a = ap.parse_args(argv)
    models = [x for x in a.nics.split(",") if x]
    if not models or any(x not in QEMU_NICS for x in models):
        sys.exit("net: --nics takes " + ", ".join(QEMU_NICS))
    if os.geteuid() != 0:
        sys.exit("net: needs root (network namespaces, apt-get)")
    if not 1 <= a.mb <= 150:
        sys.exit("net: --mb must be 1..150 (the Linux guest holds the data in tmpfs)")
    # a SIGTERM still deletes the namespace and stops the emulators
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("net: terminated"))
    return bench(a.pairs, a.mb, a.mode, a.cpus, models)


if __name__ == "__main__":
    main()
