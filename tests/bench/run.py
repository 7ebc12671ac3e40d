#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""ferry benchmarks: print figures side by side in one run (not pass/fail).

  python3 tests/bench/run.py [boot] [...]

boot:  time from starting QEMU to the `ferry> ` prompt, ferry's own boot
       time (from its log), and ferry's memory use at idle (`mem`).
"""
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from ferry_harness import Machine  # noqa: E402


def bench_boot(runs=3):
    walls, selfs = [], []
    mem = None
    for i in range(runs):
        m = Machine(f"bench-boot-{i}", kind="qemu", cpus=2, mem=512)
        t0 = time.time()
        m.start()
        walls.append(time.time() - t0)
        log = m.cmd("log")
        selfs.append(int(re.search(r"boot: ready in (\d+) ms", log).group(1)))
        if mem is None:
            mem = m.cmd("mem")
        m.close()
    ferry = int(re.search(r"ferry:\s+(\d+) KiB", mem).group(1))
    heap = re.search(r"heap:\s+(\d+) KiB used of (\d+) KiB", mem)
    print("boot (QEMU TCG, 2 CPUs, 512 MiB), %d runs:" % runs)
    print("  power-on to prompt (host clock, incl. SeaBIOS+GRUB): median %.2f s (min %.2f, max %.2f)"
          % (statistics.median(walls), min(walls), max(walls)))
    print("  ferry's own boot (kmain to prompt, its log):         median %d ms"
          % statistics.median(selfs))
    print("  ferry memory at idle: %d KiB reserved for ferry (image, heap, tables);"
          " heap in use %s KiB of %s KiB" % (ferry, heap.group(1), heap.group(2)))


BENCHES = {"boot": bench_boot}

if __name__ == "__main__":
    names = sys.argv[1:] or list(BENCHES)
    for n in names:
        BENCHES[n]()
