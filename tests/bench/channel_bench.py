# SPDX-License-Identifier: BSD-2-Clause
"""The secure migration channel's cost (figures, not pass/fail): two QEMU
ferry hosts with keys that trust each other, on a bridge in a network
namespace (needs root).  A paused guest whose memory is dense (memtest has
written all of it) moves in one round, so the stream's rate is the
channel's: sealed and `insecure` migrations alternate on the same link,
A -> B and back.  Prints each run's rate and the source's handshake time,
the median ratio sealed / insecure, and the extra sending time per MiB
that sealing costs (1 / sealed rate - 1 / insecure rate); then, for
comparison, the same sealing and opening code timed on this machine's own
CPU (tests/bench/seal_native.c): what the channel costs off the emulator.

  python3 tests/bench/run.py channel
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from ferry_harness import Machine  # noqa: E402
from hostkeys import QEMU_RDRAND, IsoMaker, keygen  # noqa: E402
from netns import NetNS, qemu_nic  # noqa: E402

PAIRS = 3
MEM = 96          # MiB of guest; memtest writes mb=80 of it


def boot(ns, isos, tmp, i):
    pub = keygen(os.path.join(tmp, f"key{i}"))
    iso = isos.iso(f"chan{i}", key=os.path.join(tmp, f"key{i}", "ferry.key"))
    tap = ns.add_tap()
    m = Machine(f"bench-chan-{i}", kind="qemu", cpus=2, mem=512, iso=iso,
                extra=qemu_nic(tap, f"52:54:00:15:01:{i + 2:02x}") + QEMU_RDRAND,
                netns=ns.name).start()
    m.ip, m.pub = f"10.200.0.{i + 2}", pub
    m.cmd(f"net ip {m.ip}/24", timeout=60)
    return m


def migrate(src, dst, name, secure, timeout=900):
    """One migration of guest name, sealed or `insecure` (the destination
    listening for that); the source's output."""
    opt = "" if secure else " insecure"
    dst.cmd("migrate listen" + opt)
    return src.cmd(f"migrate {name} {dst.ip}{opt}", timeout=timeout)


def run(src, dst, secure):
    out = migrate(src, dst, "g", secure)
    done = re.search(r"done in ([\d.]+) s, .* (\d+) bytes sent", out)
    assert done, out
    hs = re.search(r"handshake ([\d.]+) ms", out)
    rate = int(done[2]) / float(done[1]) / 1e6
    return rate, float(hs[1]) if hs else None


def native(runs=3):
    """The same sealing and opening on this machine's own CPU
    (tests/bench/seal_native.c, built if missing): [(seal, open) ms/MiB]."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    subprocess.run(["make", "-s", "-C", root, "bench-tools"], check=True, timeout=300)
    out = []
    for _ in range(runs):
        text = subprocess.run([os.path.join(root, "build", "bench", "seal_native"), "64"],
                              capture_output=True, text=True, timeout=300, check=True).stdout
        out.append(tuple(float(x) for x in re.findall(r"([\d.]+) ms/MiB", text)))
    return out


def main(argv=()):
    if os.geteuid() != 0:
        print("channel: needs root (network namespace)")
        return
    tmp = tempfile.mkdtemp(prefix="ferry-chan-")
    isos = IsoMaker(tmp)
    with NetNS() as ns:
        a, b = boot(ns, isos, tmp, 0), boot(ns, isos, tmp, 1)
        try:
            a.cmd(f"migrate trust b {b.pub} {b.ip}")
            b.cmd(f"migrate trust a {a.pub} {a.ip}")
            a.cmd(f'create g kernel=testguest mem={MEM} cmdline="memtest mb=80"', timeout=60)
            a.cmd("start g")
            a.send("console g\r")
            a.expect(r"TG memtest pass=1 ", timeout=300)
            a.send(b"\x1d")
            a.expect(r"Disconnected from g", timeout=30)
            a.cmd("pause g")
            sealed, plain, hs = [], [], []
            src, dst = a, b
            for _ in range(PAIRS):
                for secure in (True, False):
                    rate, h = run(src, dst, secure)
                    (sealed if secure else plain).append(rate)
                    if h is not None:
                        hs.append(h)
                    src, dst = dst, src
            s, p = statistics.median(sealed), statistics.median(plain)
            print(f"secure channel, QEMU to QEMU, a paused {MEM} MiB guest with dense memory, "
                  f"{PAIRS} alternated pairs:")
            print(f"  sealed   MB/s {[round(x, 1) for x in sealed]}, median {s:.1f}")
            print(f"  insecure MB/s {[round(x, 1) for x in plain]}, median {p:.1f}")
            print(f"  ratio sealed/insecure {s / p:.2f}; sealing costs "
                  f"{(1 / s - 1 / p) * 1.048576e3:.1f} ms more per MiB sent")
            print(f"  handshake (source's view) ms {hs}, median {statistics.median(hs):.1f}")
            runs = native()
            seal = statistics.median(r[0] for r in runs)
            opn = statistics.median(r[1] for r in runs)
            print(f"  the same code on this machine's own CPU (seal_native, 3 runs, medians): "
                  f"sealing {seal:.2f} ms/MiB ({1.048576e3 / seal:.0f} MB/s), opening "
                  f"{opn:.2f} ms/MiB; a 1 Gb/s link takes 8.4 ms/MiB")
        finally:
            a.close()
            b.close()


if __name__ == "__main__":
    main(sys.argv[1:])
