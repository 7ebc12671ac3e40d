# SPDX-License-Identifier: BSD-2-Clause
"""Boots the multiboot1 test guest (guest/testguest) directly on QEMU TCG,
without ferry, and checks every mode through its `TG ` lines.  These runs
are the baseline that the runs under ferry are compared with.

Run from the repository root: /usr/bin/python3 -m pytest tests/integration/test_guest_direct.py
"""
import os
import queue
import re
import shutil
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ferry_harness import make

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BUILD", ROOT / "build"))
ELF = BUILD / "guest" / "testguest.elf"
QEMU = "qemu-system-x86_64"
HARD_TIMEOUT = 60  # seconds: no QEMU run outlives this

# Every hostile attempt in the guest's order (guest/testguest/README.md).
HOSTILE_SVM = ["svm_vmrun", "svm_vmload", "svm_vmsave", "svm_vmmcall",
               "svm_stgi", "svm_clgi", "svm_skinit", "svm_invlpga"]
HOSTILE_VMX = ["vmx_vmxon", "vmx_vmcall", "vmx_vmlaunch", "vmx_vmresume",
               "vmx_vmxoff", "vmx_vmptrld", "vmx_vmptrst", "vmx_vmclear",
               "vmx_vmread", "vmx_vmwrite", "vmx_invept", "vmx_invvpid",
               "vmx_vmfunc"]
HOSTILE_MSR = ["msr_efer_svme", "msr_hsave_read", "msr_hsave_write",
               "msr_vm_cr_write", "msr_feature_control_write",
               "msr_vmx_basic_read"]
HOSTILE_MEM = ["mem_past_end_read", "mem_past_end_write", "mem_3g_read",
               "mem_3g_write", "mem_lapic_read", "mem_rom_read",
               "mem_4g_read", "mem_16g_read", "mem_4g_write"]
# cr4 hangs QEMU 7.2 TCG itself, reset/exit end QEMU, hlt never returns:
# those run one at a time below, or not at all.
HOSTILE_DIRECT = (HOSTILE_SVM + HOSTILE_VMX + HOSTILE_MSR + ["pci_cf8", "ctl_junk"]
                  + ["exc_db_step", "exc_db_data"] + HOSTILE_MEM)


def fields(line):
    """key=value words of a TG line as a dict of strings."""
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def num(text):
    return int(text, 0)


class Guest:
    """One QEMU running the test guest; reads its serial lines in a thread
    and is killed by a watchdog after HARD_TIMEOUT seconds."""

    def __init__(self, cmdline, cpu="qemu64", extra=()):
        args = [QEMU, "-accel", "tcg", "-cpu", cpu, "-m", "128",
                "-kernel", str(ELF), "-append", cmdline,
                "-serial", "stdio", "-display", "none", "-monitor", "none",
                "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                *extra]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self.queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.watchdog = threading.Timer(HARD_TIMEOUT, self.kill)
        self.watchdog.start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self.queue.put((time.monotonic(), line))
        self.queue.put((time.monotonic(), None))

    def next_line(self, deadline):
        """The next TG line as (arrival time, text); None at end of output."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no output in time; seen:\n" + self.text())
            try:
                t, line = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                return None
            self.lines.append(line)
            if line.startswith("TG "):
                return t, line

    def expect(self, pattern, timeout=30):
        """Waits for a TG line matching pattern; returns the match."""
        deadline = time.monotonic() + timeout
        while True:
            item = self.next_line(deadline)
            if item is None:
                raise AssertionError(f"{pattern!r} not seen:\n" + self.text())
            m = re.search(pattern, item[1])
            if m:
                return m

    def finish(self, timeout=30):
        """Waits for QEMU to exit; returns (exit status, all TG lines)."""
        deadline = time.monotonic() + timeout
        while self.next_line(deadline) is not None:
            pass
        status = self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        return status, self.tg_lines()

    def tg_lines(self):
        return [line for line in self.lines if line.startswith("TG ")]

    def text(self):
        return "\n".join(self.lines)

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self):
        self.watchdog.cancel()
        self.kill()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


@pytest.fixture(scope="module", autouse=True)
def built_guest():
    assert shutil.which(QEMU), f"{QEMU} not installed (apt-get install qemu-system-x86)"
    make("-f", "guest/guest.mk", f"BUILD={BUILD}")
    assert ELF.is_file()


@pytest.fixture
def boot():
    started = []

    def start(cmdline, **kw):
        g = Guest(cmdline, **kw)
        started.append(g)
        return g

    yield start
    for g in started:
        g.close()


def run_to_end(boot, cmdline, **kw):
    g = boot(cmdline, **kw)
    status, lines = g.finish()
    assert lines[-1] == "TG poweroff", g.text()
    assert status == 1, f"isa-debug-exit status {status}\n" + g.text()
    return lines


def only(lines, prefix):
    return [line for line in lines if line.startswith(prefix)]


def test_elf_is_multiboot1_elf32():
    data = ELF.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 1  # ELFCLASS32
    assert struct.unpack_from("<H", data, 18)[0] == 3  # EM_386
    for off in range(0, min(len(data), 8192) - 12, 4):
        magic, flags, check = struct.unpack_from("<III", data, off)
        if magic == 0x1BADB002 and (magic + flags + check) & 0xFFFFFFFF == 0:
            assert flags == 0x3  # page-align + memory info, no a.out kludge
            break
    else:
        pytest.fail("no multiboot1 header in the first 8 KiB")
    if shutil.which("grub-file"):
        assert subprocess.run(["grub-file", "--is-x86-multiboot", str(ELF)]).returncode == 0


def test_hello(boot):
    lines = run_to_end(boot, "hello")
    assert "TG hello from testguest" in lines
    mem = fields(only(lines, "TG mem ")[0])
    assert 120 * 1024 < num(mem["upper_kib"]) < 128 * 1024
    assert num(mem["lower_kib"]) >= 600
    assert 'hv_signature="TCGTCGTCGTCG"' in only(lines, "TG cpu ")[0]
    boot_line = fields(lines[0])
    assert boot_line["mem_upper_kib"] == mem["upper_kib"]


def test_no_mode_defaults_to_hello(boot):
    lines = run_to_end(boot, "bogus_word key=1")
    assert any(line.startswith("TG WARN no mode") for line in lines)
    assert "TG hello from testguest" in lines


def test_memtest_two_passes(boot):
    lines = run_to_end(boot, "memtest passes=2 mb=8")
    start = fields(only(lines, "TG memtest start=")[0])
    assert num(start["kib"]) == 8 * 1024
    assert num(start["start"]) >= 0x100000
    passes = [fields(line) for line in only(lines, "TG memtest pass=")]
    assert [(p["pass"], p["errors"]) for p in passes] == [("1", "0"), ("2", "0")]
    assert "TG memtest done passes=2 errors=0" in lines
    assert "TG PASS memtest" in lines
    assert not only(lines, "TG memtest mismatch")


def test_memtest_catches_a_flipped_bit(boot):
    lines = run_to_end(boot, "memtest passes=2 mb=4 inject=1")
    start = num(fields(only(lines, "TG memtest start=")[0])["start"])
    bad = [fields(line) for line in only(lines, "TG memtest mismatch")]
    assert len(bad) == 1
    assert num(bad[0]["addr"]) == start + 2 * 1024 * 1024
    assert num(bad[0]["want"]) ^ num(bad[0]["got"]) == 1
    assert "TG FAIL memtest errors=1" in lines


# 64 MiB below 4 GiB and one whole PAE window (1 GiB) above
HIGH_RAM = ("-machine", "pc,max-ram-below-4g=64M", "-m", "1088M")


def test_memtest_sparse_checks_every_word_above_4g(boot):
    """sparse=1: a pattern word a page, every other word must stay zero;
    inject=1 flips a pattern word and the zero word after it, in the middle
    of the low range and of the high one.  A flip at 0x120000000 is caught
    only if the first window (4-5 GiB, whose end is 2^32 in the guest's
    virtual addresses) is swept at all."""
    lines = run_to_end(boot, "memtest sparse=1 passes=1 inject=1", extra=HIGH_RAM)
    start = fields(only(lines, "TG memtest start=")[0])
    assert "TG memtest high start=0x100000000 end=0x140000000 mib=1024" in lines
    low = num(start["start"]) + num(start["kib"]) * 1024 // 2 // 4096 * 4096
    bad = [(num(f["addr"]), num(f["want"]), num(f["got"]))
           for f in map(fields, only(lines, "TG memtest mismatch"))]
    pass1, last = bad[:4], bad[4:]
    assert sorted(a for a, _, _ in pass1) == [low, low + 4, 0x120000000, 0x120000004], lines
    for addr, want, got in pass1:
        assert want ^ got == 1 and (addr % 4096 or want != 0), lines
    # the flipped zero words stay wrong: the last check sees them again
    assert sorted(a for a, _, _ in last) == [low + 4, 0x120000004], lines
    assert "TG memtest pass=1 errors=4" in lines
    assert f"TG memtest checked kib={num(start['kib']) + 1024 * 1024} high_kib=1048576" in lines
    assert "TG FAIL memtest errors=6" in lines


def test_memtest_hold_waits_for_check(boot):
    g = boot("memtest sparse=1 hold=1 mb=8")
    g.expect(r'^TG memtest filled kib=8192 high_mib=0 sparse=1, waiting for "check"$')
    g.send(b"go\r")
    g.expect(r'^TG memtest waiting for "check", got "go"$')
    g.send(b"check\r")
    status, lines = g.finish()
    assert status == 1 and lines[-1] == "TG poweroff", g.text()
    assert not only(lines, "TG memtest pass=") and not only(lines, "TG memtest mismatch")
    assert "TG memtest checked kib=8192 high_kib=0" in lines
    assert "TG memtest done passes=0 errors=0" in lines
    assert "TG PASS memtest" in lines


def test_heartbeat_ticks_and_tsc(boot):
    g = boot("heartbeat")
    beats = []
    deadline = time.monotonic() + 30
    while len(beats) < 11:
        item = g.next_line(deadline)
        assert item is not None, g.text()
        if item[1].startswith("TG hb "):
            f = fields(item[1])
            beats.append((item[0], num(f["tick"]), num(f["tsc"])))
    assert g.alive()  # heartbeat runs until killed
    ticks = [b[1] for b in beats]
    assert [b - a for a, b in zip(ticks, ticks[1:])] == [10] * 10
    tscs = [b[2] for b in beats]
    gaps = [b - a for a, b in zip(tscs, tscs[1:])]
    assert all(gap > 0 for gap in gaps)
    mid = sorted(gaps)[len(gaps) // 2]
    assert all(0.5 * mid < gap < 2 * mid for gap in gaps), gaps
    wall = beats[-1][0] - beats[0][0]  # 10 beats of 100 ms, loosely
    assert 0.4 < wall < 5, wall


@pytest.mark.parametrize("cpu,avx", [("qemu64", "0"), ("max", "1")])
def test_fpu_state_survives(boot, cpu, avx):
    lines = run_to_end(boot, "fpu rounds=40", cpu=cpu)
    start = fields(only(lines, "TG fpu start")[0])
    assert start["avx"] == avx
    assert "TG fpu round=1 ok" in lines and "TG fpu round=40 ok" in lines
    done = fields(only(lines, "TG fpu done")[0])
    assert done["rounds"] == "40" and done["errors"] == "0"
    assert "TG PASS fpu" in lines
    assert not only(lines, "TG FAIL")


def test_fpu_checker_catches_clobbered_xmm3(boot):
    lines = run_to_end(boot, "fpu rounds=4 inject=2", cpu="max")
    fails = only(lines, "TG FAIL fpu reg=")
    assert len(fails) == 1
    f = fields(fails[0])
    assert f["reg"] == "xmm3" and f["round"] == "2" and num(f["got"]) == 0
    assert "TG FAIL fpu" in lines


def test_exits(boot):
    lines = run_to_end(boot, "exits n=10000")
    assert num(fields(only(lines, "TG exits start")[0])["tsc_per_tick"]) > 0
    for kind in ("cpuid", "io", "io_in"):
        m = fields(only(lines, f"TG exits {kind} n=")[0])
        assert m["n"] == "10000" and num(m["cycles_per"]) > 0
        rate = fields(only(lines, f"TG exits {kind} per_sec=")[0])
        assert num(rate["per_sec"]) > 1000 and rate["src"] in ("pit", "tsc")
    assert "TG exits done" in lines


def work_model(units):
    """The guest's work loop (mode_bench.c) in Python."""
    state, total = 0x12345678, 0
    for unit in range(units):
        acc = 0
        for _ in range(4096):
            x = state
            x ^= (x << 13) & 0xFFFFFFFF
            x ^= x >> 17
            x ^= (x << 5) & 0xFFFFFFFF
            state = x
            acc = (acc * 31 + ((x ^ (x >> 7)) * 0x9E3779B1)) & 0xFFFFFFFF
        total ^= (acc + unit) & 0xFFFFFFFF
    return total


def test_work_is_deterministic(boot):
    lines = run_to_end(boot, "work n=100")
    f = fields(only(lines, "TG work units=")[0])
    assert f["units"] == "100"
    assert num(f["sum"]) == work_model(100)


def test_work_rate_over_one_second(boot):
    lines = run_to_end(boot, "work secs=1")
    f = fields(only(lines, "TG work units=")[0])
    units, ticks, rate = num(f["units"]), num(f["ticks"]), num(f["rate"])
    assert 100 <= ticks <= 102 and units > 100
    assert rate == units * 100 // ticks


def test_hostile_direct_survives_each_attempt(boot):
    lines = run_to_end(boot, "hostile skip=cr4,reset,exit,hlt")
    tries = [line.split()[3] for line in only(lines, "TG hostile TRY ")]
    results = {line.split()[3]: fields(line)
               for line in only(lines, "TG hostile RESULT ")}
    assert tries == HOSTILE_DIRECT
    assert list(results) == HOSTILE_DIRECT
    for name in HOSTILE_SVM + HOSTILE_VMX:  # bare QEMU: no SVME, no VMX
        assert results[name]["outcome"] == "ud", name
    assert results["msr_efer_svme"]["outcome"] == "none"  # qemu64 has SVM
    assert num(results["pci_cf8"]["id_00_0"]) == 0x12378086  # i440FX
    assert f"TG hostile done tried={len(HOSTILE_DIRECT)}" in lines


def test_vqhostile_drives_qemus_virtio_net(boot):
    """The vqhostile driver against a second implementation of the device:
    QEMU's modern virtio-net finds, negotiates and transmits as ferry's
    does.  What QEMU makes of each hostile case is its own affair (ferry's
    answers are checked in test_vm.py); a good frame after a refused
    receive queue goes in both."""
    lines = run_to_end(boot, "vqhostile rxwait=1", extra=(
        "-nic", "none", "-netdev", "user,id=n0",
        "-device", "virtio-net-pci,disable-legacy=on,netdev=n0"))
    found = only(lines, "TG vq found ")
    assert len(found) == 1 and fields(found[0])["mac"] == "52:54:00:12:34:56", lines
    results = {line.split()[3]: fields(line) for line in only(lines, "TG vq RESULT ")}
    assert len(results) == 21 and not only(lines, "TG FAIL"), "\n".join(lines)
    assert results["rx_size"]["probe_used"] == "1", results["rx_size"]
    assert "TG vq done tried=21" in lines


def test_hostile_only_a_group(boot):
    lines = run_to_end(boot, "hostile only=svm,pci_cf8")
    tries = [line.split()[3] for line in only(lines, "TG hostile TRY ")]
    assert tries == HOSTILE_SVM + ["pci_cf8"]


def test_hostile_qemu_exit_port(boot):
    g = boot("hostile only=qemu_exit")
    status, lines = g.finish()
    assert status == 99  # (0x31 << 1) | 1
    assert lines[-1] == "TG hostile TRY qemu_exit"


def test_hostile_keyboard_reset(boot):
    g = boot("hostile only=kbd_reset", extra=["-no-reboot"])
    status, lines = g.finish()
    assert status == 0  # the reset ended QEMU
    assert lines[-1] == "TG hostile TRY kbd_reset"


def test_hostile_cli_hlt_stays_halted(boot):
    g = boot("hostile only=cli_hlt")
    g.expect(r"^TG hostile done tried=0$")
    g.expect(r"^TG hostile TRY cli_hlt$")
    time.sleep(1.5)
    assert g.alive()
    assert g.tg_lines()[-1] == "TG hostile TRY cli_hlt"


def test_dirty_pages_keep_their_generation(boot):
    lines = run_to_end(boot, "dirty mb=8 rate=4 secs=3")
    reports = [fields(line) for line in only(lines, "TG dirty gen=")]
    assert len(reports) >= 2
    for r in reports:
        assert r["errors"] == "0"
        assert 900 <= num(r["pages"]) <= 1100  # 4 MiB/s = 1024 pages/s
        assert num(r["verified"]) > 0
    done = fields(only(lines, "TG dirty done")[0])
    assert num(done["gen"]) >= 3 and done["errors"] == "0"  # wraps every 2 s
    assert "TG PASS dirty" in lines


def test_dirty_catches_a_stale_page(boot):
    lines = run_to_end(boot, "dirty mb=4 rate=8 secs=3 inject=1")
    injected = fields(only(lines, "TG dirty injected")[0])
    fails = [line for line in only(lines, "TG FAIL dirty page=")]
    assert len(fails) == 1, lines
    assert fields(fails[0])["page"] == injected["page"]
    assert fields(fails[0])["gen"] == injected["gen"]
    assert f"expected>={num(injected['gen']) + 1}" in fails[0]
    assert "TG FAIL dirty" in lines


def test_echo_by_serial_interrupt(boot):
    g = boot("echo")
    g.expect(r"^TG echo ready$")
    g.send(b"first line\r")
    assert g.expect(r"^TG echo line=(\d+) text=(.*)$").groups() == ("1", "first line")
    g.send(b"quit\r")
    status, lines = g.finish()
    assert status == 1 and lines[-1] == "TG poweroff"


@pytest.mark.parametrize("kind,vec,err", [("ud", 6, 0), ("gp", 13, 0x1234),
                                          ("de", 0, 0)])
def test_uncaught_exception_is_reported(boot, kind, vec, err):
    lines = run_to_end(boot, f"crash kind={kind}")
    f = fields(only(lines, "TG EXC ")[0])
    assert num(f["vec"]) == vec and num(f["err"]) == err
    assert 0x100000 <= num(f["eip"]) < 0x200000
    assert not only(lines, "TG FAIL")
