# SPDX-License-Identifier: BSD-2-Clause
"""Issue 17: ferry on servers with many CPUs and memory above 4 GiB.
A 16-CPU host brings every CPU up and runs a guest on each CPU the
scheduler gives guests; an 8 GiB host shows all its memory, places a guest
on host RAM above 4 GiB, and migrates a guest with more than 4 GiB of RAM
(the PC layout: 3 GiB below the hole, the rest from 4 GiB) to a second
8 GiB host, where its memtest checks every word of it.  The suite's run
keeps the guest's memory mostly zero and still while it moves (about 40 s);
with FERRY_LONG=1 a guest rewriting all of its memory moves too (8 min).

QEMU 7.2's TCG has no x2APIC (`-cpu ...,+x2apic` is refused with "TCG
doesn't support requested feature"), so these hosts run ferry's xAPIC
path; the x2APIC path is chosen by CPUID alone (arch/x86/apic.c)."""

import contextlib
import os
import re
import shutil
import time

import pytest

from ferry_harness import ISO, PROMPT, Machine
from netns import NetNS, qemu_nic
from test_vm import wait_console

BIG_MB = 4608        # 3 GiB below the hole, 1.5 GiB from 4 GiB up
HIGH_MIB = BIG_MB - 3072
MEM_LINE = r"memory:\s+(\d+) MiB \((\d+) MiB of it on host RAM above 4 GiB\)"
MIGRATED = r"migrate big: (done|failed|in doubt)[^\n]*\n|error: migrate: [^\n]*\n"


def cpu_rows(m):
    out = m.cmd("cpus")
    rows = re.findall(r"^(\d+)\s+(\d+)\s+(online|offline)\s+(\d+)\s+(.*)$", out, re.M)
    return {int(c): (int(apic), st, int(n), virt) for c, apic, st, n, virt in rows}, out


def total_mib(m):
    return int(re.search(r"total:\s+\d+ KiB\s+\((\d+) MiB\)", m.cmd("mem")).group(1))


def test_16_cpus_each_runs_a_guest(machine_factory):
    m = machine_factory("qemu", cpus=16, mem=1024)
    rows, out = cpu_rows(m)
    assert sorted(rows) == list(range(16)), out
    assert {r[0] for r in rows.values()} == set(range(16)), out     # APIC ids 0..15
    assert all(r[1] == "online" and r[3].startswith("SVM NPT") for r in rows.values()), out
    assert "cpus: 16 of 16 online" in m.cmd("log")
    # CPU 0 runs the shell; the scheduler gives guests to the other 15 first
    for i in range(1, 16):
        assert "created" in m.cmd(f'create g{i} kernel=testguest mem=8 cmdline="memtest"')
        assert f"started g{i}" in m.cmd(f"start g{i}")
    rows, out = cpu_rows(m)
    assert [rows[c][2] for c in range(16)] == [0] + [1] * 15, out
    placed = set()
    for i in range(1, 16):
        wait_console(m, f"g{i}", r"TG memtest pass=\d+ errors=0", timeout=120)  # pass 1 may have scrolled out
        info = m.cmd(f"info g{i}")
        assert "state:      running" in info, info
        placed.add(int(re.search(r"vcpu 0:\s+on CPU (\d+)", info).group(1)))
    assert placed == set(range(1, 16))


@contextlib.contextmanager
def two_8g_hosts(tmp_path):
    """Hosts A (10.200.0.2) and B (10.200.0.3, listening) with 8 GiB each,
    on one bridge in a network namespace of their own."""
    iso = str(tmp_path / "ferry.iso")
    shutil.copy(ISO, iso)
    hosts = []
    with NetNS(f"fbig{os.getpid()}") as ns:
        try:
            for i in range(2):
                tap = ns.add_tap()
                h = Machine(f"bigmig-{'AB'[i]}", cpus=2, mem=8192, iso=iso,
                            extra=qemu_nic(tap, f"52:54:00:12:17:{i + 2:02x}"), netns=ns.name)
                hosts.append(h.start())
                assert "ipv4 address" in h.cmd(f"net ip 10.200.0.{i + 2}/24", timeout=60)
            hosts[1].cmd("migrate listen insecure")  # the channel is test_trust.py's
            yield hosts
        finally:
            for h in hosts:
                h.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_8g_hosts_migrate_guest_over_4g(tmp_path):
    """An 8 GiB host shows all its memory, places a guest on host RAM above
    4 GiB, and moves a 4.5 GiB guest to a second 8 GiB host, where the
    guest then checks every word of its memory, above 4 GiB too.  The guest
    (`memtest sparse=1 hold=1`) writes a pattern into each page's first
    word, keeps the rest zero and halts until told to check, so the move
    is one round of small SPARSE pages: the suite's version of the
    FERRY_LONG stress run below."""
    with two_8g_hosts(tmp_path) as (a, b):
        for h in (a, b):
            assert total_mib(h) >= 8180
        a.cmd(f'create big kernel=testguest mem={BIG_MB} cmdline="memtest sparse=1 hold=1"',
              timeout=300)
        # the big guest took the low host RAM: the next one comes from above 4 GiB
        a.cmd('create hi kernel=testguest mem=64 cmdline="memtest passes=1"')
        assert "64 MiB (64 MiB of it on host RAM above 4 GiB)" in a.cmd("info hi")
        a.cmd("start hi")
        a.cmd("start big")
        _, text = wait_console(a, "hi", r"TG (PASS|FAIL) memtest", timeout=120)
        assert "TG PASS memtest" in text, text
        _, text = wait_console(a, "big", r"TG memtest filled [^\n]*\n", timeout=600)
        assert "mem_upper_kib=3144704" in text, text       # 1 MiB .. 3 GiB
        assert f"TG memtest high start=0x100000000 end=0x160000000 mib={HIGH_MIB}" in text, text
        low_kib = int(re.search(r"TG memtest start=\S+ end=\S+ kib=(\d+)", text).group(1))
        t0 = time.time()
        a.send("migrate big 10.200.0.3 insecure\r")
        r = a.expect(MIGRATED, timeout=600)
        assert r.group(1) == "done", a.buf[-3000:]
        print(f"moved in {time.time() - t0:.0f} s:", r.group(0).strip())
        # each page but a few went as a small SPARSE record (seen: 28 MB for 4.8 GB)
        sent, mem = map(int, re.search(r"(\d+) bytes sent for (\d+) bytes", r.group(0)).groups())
        assert mem == BIG_MB << 20 and sent < mem // 50, r.group(0)
        a.expect(PROMPT, timeout=60)
        assert "big" not in a.cmd("list")
        info = b.cmd("info big")
        mem = re.search(MEM_LINE, info)
        assert mem and int(mem.group(1)) == BIG_MB and int(mem.group(2)) > 0, info
        # on B: every word checked, the pattern of each page and the zeroes
        b.send("console big\r")
        b.expect(r"escape character is \^\]\)\n", timeout=30)
        start = b.pos
        b.send("check\r")
        b.expect(r"TG poweroff", timeout=600)
        text = b.buf[start:b.pos]
        b.send(b"\x1d")
        b.expect(r"Disconnected from big", timeout=30)
        b.expect(PROMPT, timeout=30)
        assert f"TG memtest checked kib={low_kib + HIGH_MIB * 1024} " \
               f"high_kib={HIGH_MIB * 1024}" in text, text
        assert "mismatch" not in text and "TG PASS memtest" in text, text


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
@pytest.mark.skipif(not os.environ.get("FERRY_LONG"), reason=(
    "seen to pass (5 December 2026: 460 s in all, the move 392 s, 9 rounds, "
    "2.36x its memory sent, 82 ms downtime, throttled 80%, memtest passes clean "
    "on the destination), but ~8 min of TCG is more than the suite's budget: "
    "run with FERRY_LONG=1"))
def test_migrate_guest_over_4g(tmp_path):
    """One migration of a 4.5 GiB guest between two 8 GiB hosts; memtest
    runs through it, and a whole pass on the destination checks every word
    (the pass under way at the switch may have started on the source)."""
    with two_8g_hosts(tmp_path) as (a, b):
        # memtest without an end: each pass checks every word the one before wrote
        a.cmd(f'create big kernel=testguest mem={BIG_MB} cmdline="memtest"', timeout=300)
        a.cmd("start big")
        wait_console(a, "big", r"TG memtest pass=1 errors=0", timeout=900)
        a.send("migrate big 10.200.0.3 insecure\r")
        r = a.expect(MIGRATED, timeout=2400)
        assert r.group(1) == "done", a.buf[-3000:]
        a.expect(PROMPT, timeout=60)
        assert "big" not in a.cmd("list")
        _, text = wait_console(b, "big", r"TG memtest pass=\d+ errors", timeout=60)
        last = max(int(n) for n in re.findall(r"TG memtest pass=(\d+) errors", text))
        # a whole pass on the destination: every word checked there
        _, text = wait_console(b, "big", rf"TG memtest pass={last + 2} errors=\d+",
                               timeout=1200)
        assert "mismatch" not in text and "TG FAIL" not in text, text
        assert re.search(rf"TG memtest pass={last + 2} errors=0", text), text
