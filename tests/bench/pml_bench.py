# SPDX-License-Identifier: BSD-2-Clause
"""PML against write-protect dirty logging (issue 16; figures, not
pass/fail).  A Bochs host (Intel VMX with EPT and PML) and a QEMU host on
a bridge in a network namespace (needs root).  The `dirty` test guest on
Bochs rewrites its pages as fast as it can, and migrates to the QEMU host
with `converge=off` (no throttle: the guest's own rate is the figure) and
back; the two dirty-log methods alternate (`debug dirtylog wp`, `debug
dirtylog pml`).  For each migration from Bochs: the guest's write rate
unlogged (just before) and during the pre-copy (its console followed until
it leaves; the seconds before logging starts, connecting and HELLO, count
as logged, so a method's cost is slightly understated), the dirty log's exits (write faults; PML log-full exits) and
drains, total time, downtime, rounds.

The stream is `insecure` (sealing on the emulated CPU would only slow
both alike).  Bochs's clock counts instructions, so its seconds are its
own; the two methods are compared on the same host in one run.

  python3 tests/bench/run.py pml     (FERRY_PML_ROUNDS=N, default 2)
"""
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hostkeys import IsoMaker  # noqa: E402
from netns import NetNS  # noqa: E402
import test_migrate as tm  # noqa: E402
from migrate_bench import console_text  # noqa: E402

WATCH = 5                               # seconds of the unlogged rate
FAST = "dirty mb=32 rate=1024 hb=100"  # as fast as the emulated CPU writes
METHOD = {"wp": "wp", "pml": "pml 0"}  # `debug dirtylog` arguments


LINE = re.compile(r"TG hb tick=(\d+) |TG dirty gen=\d+ pages=(\d+) ")


def last_tick(text):
    return max([int(t) for t in re.findall(r"TG hb tick=(\d+) ", text)] or [-1])


def pages_per_s(text, after):
    """Median of the guest's `TG dirty ... pages=P` lines (one a second)
    that follow a heartbeat later than tick `after`: a console opens with
    the guest's history, which may even be another host's."""
    tick, p = -1, []
    for m in LINE.finditer(text):
        if m[1]:
            tick = int(m[1])
        elif tick > after:
            p.append(int(m[2]))
    return statistics.median(p) if p else float("nan")


def session(h, since):
    found = tm.SESSION.findall(h.m.buf, since)
    if not found:
        return None
    method, *n = found[-1]
    return method, *map(int, n)


def leave(x, a, how):
    """One migration from Bochs with the given method: its figures."""
    x.cmd(f"debug dirtylog {METHOD[how]}")
    before = last_tick(console_text(x.m, "w", 1))
    text = console_text(x.m, "w", WATCH)
    free = pages_per_s(text, before)
    since = tm.mark(x)
    m = x.m
    start = len(m.buf)
    m.send(f"migrate -b w {a.ip} converge=off insecure\rconsole w\r")
    m.expect(r"left this host|did not|is gone", timeout=1200)
    m.expect(r"ferry> ", timeout=60)
    logged = pages_per_s(m.buf[start:], last_tick(text))
    line = tm.bg_outcome(x, "w", since, timeout=120)
    d = tm.DONE.search(line)
    s = None
    for _ in range(30):
        s = session(x, since)
        if s:
            break
        m.drain(1)
    if not d or not s or not free > 0:
        print(f"  {how:<4} migration failed or no rate read: {line}")
        return None
    total = float(d[1])
    print(f"  {how:<4} guest writes {free:6.0f} pages/s unlogged, {logged:6.0f} during pre-copy "
          f"({logged / free:4.2f}x); dirty log: {s[1]} write faults, {s[2]} pages marked, "
          f"{s[3]} PML drains, {s[4]} log-full exits ({(s[1] + s[4]) / total:.0f}/s); total "
          f"{total:.2f} s, downtime {float(d[2]):.1f} ms, {int(d[3])} rounds, sent "
          f"{int(d[4]) / int(d[5]):.2f}x memory")
    tm.progress(a, "w", "dirty", timeout=120)
    back = tm.migrate(a, "w", x, "insecure", timeout=1200)
    assert back.what == "done", back.line_out
    tm.progress(x, "w", "dirty", timeout=300)
    return logged / free, (s[1] + s[4]) / total, total, float(d[2])


def main(argv=()):
    if os.geteuid() != 0:
        print("pml: needs root (network namespace)")
        return
    rounds = int(os.environ.get("FERRY_PML_ROUNDS", "2"))
    isos = IsoMaker(tempfile.mkdtemp(prefix="ferry-pml-"))
    with NetNS() as ns:
        net = tm.MigNet(ns, isos)
        try:
            a = net.add("qemu", "A")
            x = net.add("bochs", "X")
            for h in (a, x):
                h.cmd("migrate listen insecure")
            assert "dirty log: pml (hardware: pml)" in x.cmd("cpus"), x.cmd("cpus")
            x.cmd(f'create w kernel=testguest mem=48 cmdline="{FAST}"', timeout=120)
            x.cmd("start w")
            tm.progress(x, "w", "dirty", timeout=300)
            print(f"migrations from Bochs (VMX, EPT, PML) of `{FAST}` in 48 MiB, "
                  f"converge=off, {rounds} rounds alternated:")
            got = {"wp": [], "pml": []}
            for _ in range(rounds):
                for how in ("wp", "pml"):
                    r = leave(x, a, how)
                    if r:
                        got[how].append(r)
            for how, v in got.items():
                if not v:
                    continue
                med = [statistics.median(col) for col in zip(*v)]
                print(f"  {how} medians: write rate while logged {med[0]:.2f}x unlogged, "
                      f"{med[1]:.0f} logging exits/s, total {med[2]:.2f} s, downtime "
                      f"{med[3]:.1f} ms")
        finally:
            for h in net.hosts:
                h.shut()


if __name__ == "__main__":
    main(sys.argv[1:])
