#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark (not a test): the stall a guest's TCP connections see across a
live migration, next to the migration's downtime (issue 14).

  python3 tests/bench/run.py tcpmove
  python3 tests/bench/tcpmove_bench.py [--moves 3] [--rate 512] [--out full|off]

Needs root (a network namespace with a bridge).  Two QEMU ferry hosts on
the bridge, listening for migrations in plaintext (`insecure`: the
figures are the hand-over's, not the channel's); Debian's kernel in a
256 MiB guest with `nic=on` on the first.  The Linux peer in the namespace
(tests/bench/stallpeer.py) holds three connections to the guest for the
whole run:
  - echo: a 64-byte block every 10 ms to `nc -l -e cat`, each waiting for
    its echo;
  - in: --rate KiB/s into `nc -l`, progress read from the peer's own
    socket as the guest's acknowledgements;
  - out: the guest sending /dev/zero through `nc` as fast as it can
    (--out off leaves it out: a busy sender slows the moves).
The guest moves A->B, B->A, ... --moves times, --settle seconds apart.  For
each move: ferry's downtime (the source's count, pause to COMMITTED) and
its split, and for each connection the longest stretch with no progress
that overlaps the hand-over (the downtime, which ends as the `migrate`
command prints its closing line), and the longest in the rest of the move
(pre-copy, from the command on: the dirty log's write faults slow the
guest).
Beside them, the longest stretch anywhere else in the run: what the loaded
machine does to these connections with no move.  Console transcripts:
build/test-logs/bench-tcpmove-*.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from ferry_harness import Machine  # noqa: E402
from netns import BRIDGE_IP, NetNS, qemu_nic  # noqa: E402
from test_guestnet import attach, boot_guest, detach  # noqa: E402
from test_linux import talk  # noqa: E402
from guestnet_bench import linux_iso  # noqa: E402

GUEST_IP, GUEST_MAC = "10.200.0.50", "52:54:00:aa:00:01"
FLOWS = ("echo", "in", "out")
DONE = re.compile(r"migrate lx: (done|failed|in doubt)[^\n]*\n|error: migrate: [^\n]*\n")
SPLIT = re.compile(r"downtime = (\d+) us last round \(\d+ pages\) \+ (\d+) us state \+ "
                   r"(\d+) us until READY \+ (\d+) us commit\n")


def boot_host(ns, iso, i):
    m = Machine(f"bench-tcpmove-{i}", kind="qemu", cpus=2, mem=768, iso=iso,
                extra=qemu_nic(ns.add_tap(), f"52:54:00:12:03:{i + 2:02x}"),
                netns=ns.name).start(boot_timeout=180)
    m.ip = f"10.200.0.{i + 2}"
    if "ipv4 address" not in m.cmd(f"net ip {m.ip}/24", timeout=60):
        sys.exit(f"tcpmove: net ip failed on host {i}; see {m.logpath}")
    if "listening on port" not in m.cmd("migrate listen insecure"):
        sys.exit(f"tcpmove: migrate listen failed on host {i}")
    return m


class StallPeer:
    """stallpeer.py in the namespace; its lines collected as they come."""

    def __init__(self, ns, rate, out):
        self.p = subprocess.Popen(["ip", "netns", "exec", ns.name, "/usr/bin/python3",
                                   os.path.join(HERE, "stallpeer.py"), GUEST_IP, str(rate)]
                                  + (["out"] if out == "full" else []),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line)

    def wait(self, word, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if any(line.startswith(word) for line in self.lines):
                return
            if self.p.poll() is not None and not any(ln.startswith(word) for ln in self.lines):
                break
            time.sleep(0.1)
        sys.exit(f"tcpmove: peer: no {word!r}: {''.join(self.lines)}")

    def stop(self):
        """{flow: (bytes, [(start, end)])}, after SIGTERM."""
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(200)
        self.wait("done", 5)
        res = {}
        for line in self.lines:
            r = re.match(r"(\w+) bytes=(\d+) gaps=(\S+)", line)
            e = re.match(r"(\w+) error=(\S+)", line)
            if e:
                sys.exit(f"tcpmove: the {e[1]} connection broke: {e[2]}")
            if r:
                gaps = [] if r[3] == "none" else \
                    [tuple(map(float, g.split("-"))) for g in r[3].split(",")]
                res[r[1]] = (int(r[2]), gaps)
        return res


def start_guest(m):
    boot_guest(m, ip=GUEST_IP, mac=GUEST_MAC)
    talk(m, "(nc -l -p 5003 -e cat < /dev/null &); (nc -l -p 5004 < /dev/null > /dev/null &)")
    detach(m)


def move(src, dst):
    """(t0, t1, downtime ms, split text) of one migration src -> dst."""
    start = len(src.buf)
    t0 = time.time()
    src.send(f"migrate lx {dst.ip} insecure\r")
    r = src.expect(DONE, timeout=600)
    t1 = time.time()
    if r.group(1) != "done":
        sys.exit(f"tcpmove: {r.group(0).strip()}")
    s = src.expect(SPLIT, timeout=30)
    src.expect("ferry> ", timeout=30)
    down = float(re.search(r"downtime ([\d.]+) ms", src.buf[start:]).group(1))
    split = " + ".join(f"{int(s[i]) / 1000:.1f}" for i in range(1, 5)) + " ms"
    # frames that came for it during the downtime and travelled with it
    c = re.search(r"(\d+) came with it", dst.cmd("info lx"))
    return t0, t1, down, f"{split}, {int(c[1]) if c else 0} frames carried"


def longest(gaps, t0, t1):
    """The longest stretch in gaps overlapping [t0, t1], in ms (0: none)."""
    return max([(b - a) * 1000 for a, b in gaps if b >= t0 and a <= t1] or [0])


def report(moves, res):
    print("TCP across live migration, QEMU to QEMU: each connection's longest stretch with no "
          "progress (ms) at the hand-over (overlapping the source's downtime, which ends as "
          "`migrate` prints its closing line) / in the rest of the move (pre-copy):")
    print(f"  {'move':<5} {'downtime':>9}  {'split (round/state/READY/commit), carried':<46} "
          + " ".join(f"{f:>11}" for f in FLOWS))
    for i, (t0, t1, down, split) in enumerate(moves):
        paused = t1 - down / 1000 - 0.02
        row = " ".join(f"{longest(res[f][1], paused, t1):5.0f} /"
                       f"{longest(res[f][1], t0, paused):5.0f}" if f in res else f"{'-':>11}"
                       for f in FLOWS)
        print(f"  {i + 1:<5} {down:6.1f} ms  {split:<46} {row}")
    quiet = []
    for f in FLOWS:
        if f in res:
            other = [g for g in res[f][1]
                     if not any(g[1] >= t0 and g[0] <= t1 + 1 for t0, t1, _, _ in moves)]
            quiet.append(f"{f} {max([(b - a) * 1000 for a, b in other] or [0]):.0f}")
    print("  longest stretch away from the moves (the loaded machine's own): "
          + ", ".join(quiet) + " ms")
    print("  bytes: " + ", ".join(f"{f} {res[f][0]}" for f in FLOWS if f in res))


def bench(n_moves, rate, out, settle, pcap):
    iso = linux_iso("bench-tcpmove-")
    hosts, moves, dump = [], [], None
    with NetNS(f"tmb{os.getpid()}") as ns:
        try:
            if pcap:        # the bridge's frames, headers only, to read the stalls by
                dump = subprocess.Popen(["ip", "netns", "exec", ns.name, "tcpdump", "-q", "-i",
                                         "br0", "-s", "128", "-w", pcap],
                                        stderr=subprocess.DEVNULL)
            hosts = [boot_host(ns, iso, i) for i in range(2)]
            start_guest(hosts[0])
            peer = StallPeer(ns, rate, out)
            peer.wait("listening", 60)
            if out == "full":
                attach(hosts[0])
                talk(hosts[0], f"(nc {BRIDGE_IP} 5005 < /dev/zero > /dev/null 2>&1 &)")
                detach(hosts[0])
            for i in range(n_moves):
                time.sleep(settle)
                moves.append(move(hosts[i % 2], hosts[(i + 1) % 2]))
                print(f"tcpmove: move {i + 1}: downtime {moves[-1][2]} ms "
                      f"({moves[-1][3]}), {moves[-1][1] - moves[-1][0]:.1f} s, from "
                      f"{moves[-1][0]:.3f} to {moves[-1][1]:.3f}", flush=True)
            time.sleep(settle)
            res = peer.stop()
        finally:
            for h in hosts:
                h.close()
            if dump:
                dump.terminate()
                dump.wait(10)
    report(moves, res)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moves", type=int, default=3, help="migrations, back and forth (3)")
    ap.add_argument("--rate", type=int, default=512, help="KiB/s into the guest (512)")
    ap.add_argument("--out", choices=("full", "off"), default="full",
                    help="the guest's own bulk send (full)")
    ap.add_argument("--settle", type=float, default=8, help="seconds between moves (8)")
    ap.add_argument("--pcap", help="write the bridge's frames there (tcpdump), with the "
                    "moves' times printed, to see what each stall was")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("tcpmove: needs root (network namespace)")
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("tcpmove: terminated"))
    bench(a.moves, a.rate << 10, a.out, a.settle, a.pcap and os.path.abspath(a.pcap))


if __name__ == "__main__":
    main(sys.argv[1:])
