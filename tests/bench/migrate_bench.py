# SPDX-License-Identifier: BSD-2-Clause
"""Live-migration figures (not pass/fail), two QEMU ferry hosts on a bridge in
a network namespace (needs root):

  - nettest's raw TCP rate between the two hosts (the link);
  - an idle 256 MiB guest, and the `dirty` guest writing at 10%, 50% and 90%
    of that rate: downtime as the guest saw it (the gap between its last
    heartbeat on the source and its next, minus their period) and as the
    source measured it,
    total time, rounds, bytes sent / memory touched, and the stream's rate
    over the raw rate (measured with both hosts idle, and again with the
    dirty guest running, since its emulated vCPU takes a real core);
    how long the destination took to answer HELLO, and to acknowledge
    round 0 after it was sent (protocol 6 on).

  python3 tests/bench/run.py migrate

`run.py migrate-parallel` (main_parallel): two guests migrated at once
against one after the other (issue 16), wall time and each one's figures.
"""
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from ferry_harness import ISO, Machine  # noqa: E402
from netns import NetNS, qemu_nic  # noqa: E402

HB_TICKS = 1            # heartbeat every 10 ms (the guest's timer runs at 100 Hz)
PORT = 5001


def boot_pair(ns, iso=None, label="bench-mig"):
    hosts = []
    for i in range(2):
        tap = ns.add_tap()
        m = Machine(f"{label}-{i}", kind="qemu", cpus=2, mem=768, iso=iso or ISO,
                    extra=qemu_nic(tap, f"52:54:00:12:01:{i + 2:02x}"), netns=ns.name).start()
        m.ip = f"10.200.0.{i + 2}"
        m.cmd(f"net ip {m.ip}/24", timeout=60)
        # these hosts have no keys: the figures are the plaintext stream's,
        # as before the secure channel (issue 15)
        m.cmd("migrate listen insecure")
        hosts.append(m)
    hosts[0].cmd(f"ping {hosts[1].ip} 3", timeout=30)
    return hosts


def raw_rate(a, b, mb=64):
    """nettest's MB/s from a to b (decimal MB, as the shell prints)."""
    b.send(f"nettest listen {PORT}\r")
    b.expect(r"listening on port")
    out = a.cmd(f"nettest send {b.ip} {PORT} {mb}", timeout=300)
    b.expect(r"nettest: received .*\n", timeout=60)
    b.send(b"\x03")
    b.expect(r"nettest: stopped", timeout=30)
    b.expect(r"ferry> ", timeout=30)
    return float(re.search(r"([\d.]+) MB/s", out).group(1))


def tsc_hz(m):
    return float(re.search(r"TSC ([\d.]+) MHz", m.cmd("log")).group(1)) * 1e6


def beats(text):
    """Whole heartbeat lines: [(tick, tsc)]."""
    return [(int(t), int(x, 16)) for t, x in re.findall(r"TG hb tick=(\d+) tsc=0x([0-9a-f]+)\s", text)]


def guest_gap_ms(text, hz, last_at_src):
    """The gap the guest saw at the hand-over, minus the heartbeat period:
    between its last heartbeat on the source (its console there, followed
    until it left) and the next one, in the console history it took along.
    Gaps elsewhere are the loaded machine's, not the migration's."""
    tsc = dict(beats(text))
    if last_at_src not in tsc or last_at_src + 1 not in tsc:
        return float("nan")
    return (tsc[last_at_src + 1] - tsc[last_at_src]) / hz * 1000 - HB_TICKS * 10


def console_text(m, name, seconds=None):
    """The guest's console: its history (the last 4 KiB), or, with
    seconds, everything it prints while attached that long."""
    m.send(f"console {name}\r")
    m.expect(r"escape character is \^\]\)\n")
    start = m.pos
    if seconds:
        m.drain(seconds)
    else:
        m.drain_quiet(limit=5)
    m.send(b"\x1d")
    m.expect(r"Disconnected from " + re.escape(name))
    text = m.buf[start:m.pos]
    m.expect("ferry> ")
    return text


def one(src, dst, name, cmdline, mem, link):
    src.cmd(f'create {name} kernel=testguest mem={mem} cmdline="{cmdline}"')
    src.cmd(f"start {name}")
    src.drain(3)                    # let it settle (dirty: write its pages once)
    # the link as the same busy host sees it: the guest's vCPU competes with
    # the sender for the machine's cores (emulated CPUs share real ones)
    loaded = raw_rate(src, dst, mb=32) if "dirty" in cmdline else None
    # in the background, with the guest's console followed on the source
    # until it leaves: its last heartbeat there marks the hand-over
    start = len(src.buf)
    # typed together: an idle guest's move is over within a second
    src.send(f"migrate -b {name} {dst.ip} insecure\rconsole {name}\r")
    src.expect(r"left this host|did not|is gone", timeout=900)
    src.expect(r"ferry> ", timeout=30)
    seen = beats(src.buf[start:])
    # at once, while the hand-over is still in the console history there
    at_dst = console_text(dst, name, 1)
    done = None
    for _ in range(30):             # its closing line, from the host's log
        out = src.cmd("log")
        done = re.search(rf"migrate {name}: done in ([\d.]+) s, downtime ([\d.]+) ms, "
                         r"(\d+) rounds, (\d+) bytes", out)
        if done or re.search(rf"migrate {name}: failed", out):
            break
        src.drain(1)
    if not done or not seen:
        print(f"  {name}: migration failed:\n{out[-3000:]}")
        src.cmd(f"destroy {name}")
        return
    total, down, rounds, sent = float(done[1]), float(done[2]), int(done[3]), int(done[4])
    r0 = re.search(rf"migrate {name}: round 0: sent (\d+) pages \((\d+) zero\)", out)
    touched = (int(r0[1]) - int(r0[2])) * 4096      # pages with data: what the guest used
    # HELLO to HELLO_REPLY, and ROUND_END 0 to ROUND_ACK (builds before
    # protocol 6 print neither)
    hello = re.search(rf"migrate {name}: to .*HELLO answered in ([\d.]+) ms", out)
    ack = re.search(rf"migrate {name}: .* has written round 0 \(\d+ pages\), ([\d.]+) ms", out)
    extra = f"  hello {float(hello[1]):6.1f} ms" if hello else "  hello      -   "
    extra += f"  round 0 ack {float(ack[1]):6.1f} ms" if ack else "  round 0 ack    -"
    gap = guest_gap_ms(at_dst, tsc_hz(src), seen[-1][0])
    dst.cmd(f"destroy {name}")
    rate = sent / total / 1e6
    stream = f"stream {rate:5.1f} MB/s = {rate / link:4.2f} x raw" if touched > (8 << 20) else \
        "stream   (mostly zero pages)"
    if loaded:
        stream += f", {rate / loaded:4.2f} x raw with the guest running ({loaded:.1f} MB/s)"
    print(f"  {name:<10} guest gap {gap:7.1f} ms  source {down:7.1f} ms  total {total:6.2f} s  "
          f"rounds {rounds:3d}  sent/touched {sent / touched:5.2f}  {stream}{extra}")


def run_all(a, b, build):
    link = raw_rate(a, b)
    print(f"live migration, QEMU to QEMU over ferry's e1000 + TCP, {build} "
          f"(raw nettest {link:.1f} MB/s):")
    one(a, b, "idle", f"heartbeat every={HB_TICKS}", 256, link)
    for pct in (10, 50, 90):
        rate = max(1, int(link * pct / 100))
        one(a, b, f"dirty{pct}", f"dirty mb=64 rate={rate} hb={HB_TICKS}", 256, link)


DONE = (r"migrate {}: (?:done in ([\d.]+) s, downtime ([\d.]+) ms|failed[^\n]*|in doubt[^\n]*)"
        r"|error: migrate: [^\n]*")


def outcomes(m, start, names, timeout=900):
    """({name: (total s, downtime ms) or None}, when the last closing line
    came, host clock) from the closing lines printed since offset start."""
    end = time.time() + timeout
    while True:
        got = {n: re.search(DONE.format(re.escape(n)), m.buf[start:]) for n in names}
        if all(got.values()) or time.time() > end:
            return {n: (float(g[1]), float(g[2])) if g and g[1] else None
                    for n, g in got.items()}, time.time()
        m.drain(0.05)


def parallel_pair(a, b, link, rounds, first=0):
    """Two guests moved at once (`migrate -b` twice) against one after the
    other, alternated; each move takes both from one host to the other."""
    rate = max(1, int(link * 0.1))
    cmdline = f"dirty mb=32 rate={rate}"
    names = ("p1", "p2")
    for n in names:
        a.cmd(f'create {n} kernel=testguest mem=64 cmdline="{cmdline}"')
        a.cmd(f"start {n}")
    a.drain(3)
    print(f"two guests migrated at once against one after the other, QEMU to QEMU, "
          f"`{cmdline}` in 64 MiB each (10 % of the raw {link:.1f} MB/s), {rounds} rounds "
          f"alternated:")
    walls = {"serial": [], "parallel": []}
    src, dst = a, b
    for r in range(rounds):
        # which goes first, and so which direction each takes, alternates
        for how in (("serial", "parallel") if (r + first) % 2 == 0 else ("parallel", "serial")):
            start = len(src.buf)
            t0 = time.time()
            if how == "serial":
                for n in names:
                    src.cmd(f"migrate {n} {dst.ip} insecure", timeout=900)
            else:
                for n in names:
                    src.cmd(f"migrate -b {n} {dst.ip} insecure")
            got, t1 = outcomes(src, start, names)
            if not all(got.values()):
                print(f"  {how}: a migration failed: {src.buf[start:][-1500:]}; stopping")
                return
            # host clock, from the first command to the last closing line
            # (polled every 50 ms)
            wall = t1 - t0
            walls[how].append(wall)
            each = "; ".join(f"{n} {t:.2f} s, downtime {d:.1f} ms" for n, (t, d) in got.items())
            print(f"  {how:<8} {src is a and 'A to B' or 'B to A'}: both moved in {wall:6.2f} s "
                  f"({each})")
            src.drain(2)
            src, dst = dst, src
    s, p = statistics.median(walls["serial"]), statistics.median(walls["parallel"])
    print(f"  medians: one after the other {s:.2f} s, at once {p:.2f} s: {p / s:.2f}x the time")
    for n in names:
        src.cmd(f"destroy {n}")


def main_parallel(argv=()):
    """With FERRY_BASE_ISO=other.iso, that build and this one alternate
    (FERRY_ROUNDS pairs of hosts each, one round each, which of serial and
    parallel goes first alternating too), else FERRY_ROUNDS rounds on one
    pair of hosts."""
    if os.geteuid() != 0:
        print("migrate-parallel: needs root (network namespace)")
        return
    base = os.environ.get("FERRY_BASE_ISO")
    rounds = int(os.environ.get("FERRY_ROUNDS", "2"))
    builds = [("this build", None)] + ([(f"base {os.path.basename(base)}", base)] if base else [])
    for r in range(rounds if base else 1):
        for i, (build, iso) in enumerate(builds):
            print(f"{build}:")
            with NetNS() as ns:
                a, b = boot_pair(ns, iso, f"bench-par-r{r}b{i}")
                try:
                    parallel_pair(a, b, raw_rate(a, b), 1 if base else rounds,
                                  first=r % 2 if base else 0)
                finally:
                    a.close()
                    b.close()


def main(argv=()):
    """With FERRY_BASE_ISO=other.iso, that build and this one alternate,
    FERRY_ROUNDS times (default 2), each on a fresh pair of hosts."""
    if os.geteuid() != 0:
        print("migrate: needs root (network namespace)")
        return
    base = os.environ.get("FERRY_BASE_ISO")
    builds = [("this build", None)] + ([(f"base {os.path.basename(base)}", base)] if base else [])
    for r in range(int(os.environ.get("FERRY_ROUNDS", "2")) if base else 1):
        for i, (build, iso) in enumerate(builds):
            with NetNS() as ns:
                a, b = boot_pair(ns, iso, f"bench-mig-r{r}b{i}")
                try:
                    run_all(a, b, build)
                finally:
                    a.close()
                    b.close()


if __name__ == "__main__":
    main(sys.argv[1:])
