# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): the downtime of a live migration seen from
outside the guest, as issue 16 asks for it: the guest sends a UDP datagram
every millisecond to the Linux peer, and the peer measures the longest gap.

  python3 tests/bench/run.py outside
  python3 tests/bench/outside_bench.py [--moves 6] [--mem 64]

Two QEMU ferry hosts on a bridge in a network namespace (needs root), each
with its own key, trusting each other.  The guest is the test guest in mode
`netbeat` (guest/testguest/README.md) with a virtio-net NIC behind ferry's
switch: idle but for its 1 kHz timer and one broadcast datagram a ms to
10.200.0.1:7448.  netpeer.py `beats` in the namespace stamps each datagram
with the kernel's receive time (SO_TIMESTAMPNS).  The guest moves A -> B ->
A ..., the moves alternating between the sealed channel (the default) and
`insecure`, two of each in a row.  For each move, printed:
  - the longest gap between datagrams from just before the command to a
    second after it ended (the downtime seen from outside, which includes
    the datagram period, 1 ms), and the gap at the move itself: between
    the two datagrams whose guest-ms stamps jump most (the guest's clock
    runs on across the pause), which the host's noise elsewhere in the
    window does not hide;
  - the datagrams lost in that window (numbers never seen) and repeated;
  - the downtime ferry reports (the source's, from pausing the guest to
    the destination's COMMITTED);
  - the longest gap in the 3 s just before the move, with no move (the
    host's own noise).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = os.path.join(HERE, "..", "integration")
sys.path.insert(0, INTEG)
sys.path.insert(0, HERE)
from channel_bench import boot, migrate  # noqa: E402
from hostkeys import IsoMaker  # noqa: E402
from netns import BRIDGE_IP, NetNS  # noqa: E402

PORT = 7448
GUEST_IP = "10.200.0.60"
BEAT = re.compile(r"^beat (\d+) (\d+) ([\d.]+)$", re.M)


def beats(path):
    """[(seq, guest ms, receive time)] so far."""
    with open(path) as f:
        return [(int(s), int(ms), float(t)) for s, ms, t in BEAT.findall(f.read())]


def window(bs, t0, t1):
    """For the datagrams received in [t0, t1]: the longest gap (ms) between
    two; the gap at the move, between the two whose guest-ms stamps jump
    most (the guest's clock runs on across the pause, so the last datagram
    from the source and the first from the destination are those two,
    whatever noise makes other gaps as long), and that jump; the numbers
    missing between the first and last seen, and repeats."""
    inside = [b for b in bs if t0 <= b[2] <= t1]
    if len(inside) < 2:
        return float("inf"), float("inf"), None, None, None
    pairs = list(zip(inside, inside[1:]))
    gap = max(b[2] - a[2] for a, b in pairs) * 1000
    a, b = max(pairs, key=lambda p: p[1][1] - p[0][1])
    seqs = [x[0] for x in inside]
    seen = set(seqs)
    lost = (max(seqs) - min(seqs) + 1) - len(seen)
    return gap, (b[2] - a[2]) * 1000, b[1] - a[1], lost, len(seqs) - len(seen)


def move(src, dst, secure):
    out = migrate(src, dst, "beat", secure, timeout=300)
    done = re.search(r"done in ([\d.]+) s, downtime ([\d.]+) ms", out)
    assert done, out
    return float(done[2])


def main(argv=()):
    ap = argparse.ArgumentParser()
    ap.add_argument("--moves", type=int, default=8)
    ap.add_argument("--mem", type=int, default=64)
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("outside: needs root (network namespace)")
        return
    tmp = tempfile.mkdtemp(prefix="ferry-outside-")
    isos = IsoMaker(tmp)
    log = os.path.join(tmp, "beats.log")
    res = {True: [], False: []}
    with NetNS() as ns:
        hosts = [boot(ns, isos, tmp, 0), boot(ns, isos, tmp, 1)]
        peer = None
        try:
            h0, h1 = hosts
            h0.cmd(f"migrate trust b {h1.pub} {h1.ip}")
            h1.cmd(f"migrate trust a {h0.pub} {h0.ip}")
            with open(log, "w") as f:
                peer = subprocess.Popen(["ip", "netns", "exec", ns.name, "/usr/bin/python3",
                                         os.path.join(INTEG, "netpeer.py"), "beats", str(PORT)],
                                        stdout=f, stderr=subprocess.STDOUT)
            out = h0.cmd(f'create beat kernel=testguest mem={a.mem} nic=on cmdline="netbeat '
                         f'to={BRIDGE_IP} from={GUEST_IP} port={PORT}"', timeout=60)
            assert "created beat" in out, out
            h0.cmd("start beat")
            deadline = time.time() + 60
            while len(beats(log)) < 500:
                assert time.time() < deadline, f"no beats from the guest: {open(log).read()}"
                time.sleep(0.5)
            for r in range(a.moves):
                src, dst = hosts[r % 2], hosts[(r + 1) % 2]
                secure = (r // 2) % 2 == 0
                t0 = time.time()
                time.sleep(3)
                quiet = window(beats(log), t0, time.time())[0]
                t0 = time.time()
                said = move(src, dst, secure)
                time.sleep(1)
                gap, at, jump, lost, rep = window(beats(log), t0, time.time())
                res[secure].append((gap, at, jump, lost, rep, said, quiet))
                print(f"outside: move {r + 1} {'sealed' if secure else 'insecure'}: longest gap "
                      f"{gap:.1f} ms, at the move {at:.1f} ms (guest clock {jump} ms), lost "
                      f"{lost}, repeated {rep}; ferry's downtime {said:.1f} ms; quiet window "
                      f"{quiet:.1f} ms", flush=True)
        finally:
            if peer:
                peer.terminate()
                peer.wait(timeout=10)
            for h in hosts:
                h.close()
    print("live-migration downtime seen from outside: an idle test guest (netbeat, "
          f"{a.mem} MiB, virtio-net) sends a UDP datagram every ms to the Linux peer on the "
          "bridge; two QEMU ferry hosts, A <-> B")
    for secure in (True, False):
        rs = res[secure]
        if not rs:
            continue
        col = list(zip(*rs))
        print(f"  {'sealed' if secure else 'insecure'} ({len(rs)} moves): longest gap median "
              f"{statistics.median(col[0]):.1f} ms {[round(x, 1) for x in col[0]]}; the gap at "
              f"the move median {statistics.median(col[1]):.1f} ms "
              f"{[round(x, 1) for x in col[1]]} (the guest's clock {list(col[2])} ms); datagrams"
              f" lost {list(col[3])}, repeated {list(col[4])}; ferry's downtime median "
              f"{statistics.median(col[5]):.1f} ms {[round(x, 1) for x in col[5]]}; longest gap "
              f"with no move {[round(x, 1) for x in col[6]]} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
