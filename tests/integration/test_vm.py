# SPDX-License-Identifier: BSD-2-Clause
"""Issue: guests run under ferry (SVM on QEMU; the VMX subset on Bochs).
The operator's view: create, start, watch, pause, resume, destroy guests and
talk to their consoles; the test guest checks from inside."""

import re
import time

import pytest

from ferry_harness import PROMPT


def free_kib(m):
    return int(re.search(r"free:\s+(\d+) KiB", m.cmd("mem")).group(1))


def wait_console(m, name, pattern, timeout=60):
    """Poll the guest's console history (via `console`) until pattern shows."""
    end = time.time() + timeout * getattr(m, "slow", 1)
    while True:
        m.send(f"console {name}\r")
        m.expect(r"escape character is \^\]\)\n", timeout=30)
        start = m.pos
        m.drain_quiet()
        m.send(b"\x1d")
        m.expect(r"Disconnected from " + re.escape(name), timeout=30)
        text = m.buf[start:m.pos]
        m.expect(PROMPT, timeout=30)
        found = re.search(pattern, text)
        if found:
            return found, text
        if time.time() > end:
            raise AssertionError(f"{pattern!r} not in {name}'s console:\n{text[-2000:]}")
        time.sleep(1)


def state_of(m, name):
    for line in m.cmd("list").splitlines():
        if line.startswith(name + " "):
            return line
    raise AssertionError(f"{name} not in list")


def wait_state(m, name, word, timeout=60):
    end = time.time() + timeout * getattr(m, "slow", 1)
    while word not in state_of(m, name):
        if time.time() > end:
            raise AssertionError(f"{name} never became {word}: {state_of(m, name)}")
        time.sleep(0.5)
    return state_of(m, name)


@pytest.fixture(params=["svm", "vmx"])
def host(request, machine_factory):
    """One suite for both back ends: AMD SVM on QEMU, Intel VMX on Bochs.
    Bochs emulates every instruction, so only tests marked `vmx` (a subset
    covering every exit type and the hostile, fpu and heartbeat modes) run
    there, with timeouts scaled by m.slow."""
    if request.param == "vmx":
        if not request.node.get_closest_marker("vmx"):
            pytest.skip("not in the Bochs (VMX) subset")
        m = machine_factory("bochs", cpus=2, mem=128)
        m.slow = 4
    else:
        m = machine_factory("qemu", cpus=2, mem=512)
        m.slow = 1
    m.backend = request.param
    return m


@pytest.mark.vmx
def test_hello_runs_and_powers_off(host):
    m = host
    out = m.cmd('create g1 kernel=testguest mem=16 cmdline="hello"')
    assert "created g1" in out
    assert "started g1" in m.cmd("start g1")
    line = wait_state(m, "g1", "stopped")
    assert "powered off" in line
    _, text = wait_console(m, "g1", r"TG hello from testguest")
    assert "TG cpu vendor=GenuineIntel hypervisor=1" in text
    assert 'hv_signature="ferry-hv' in text
    assert re.search(r"TG mem lower_kib=640 upper_kib=\d+ total_mib=16", text)


@pytest.mark.vmx
def test_destroy_returns_all_memory(host):
    m = host
    before = free_kib(m)
    size = 128 if m.backend == "svm" else 48
    m.cmd(f'create big kernel=testguest mem={size} cmdline="memtest"', timeout=120)
    assert free_kib(m) <= before - size * 1024
    m.cmd("start big")
    wait_console(m, "big", r"TG memtest pass=\d+ errors=0")
    assert "destroyed big" in m.cmd("destroy big")
    assert free_kib(m) == before
    assert "big" not in m.cmd("list")


def test_create_errors_change_nothing(host):
    m = host
    before = free_kib(m)
    assert "error: create: kernel=MODULE is required" in m.cmd("create a")
    assert "error: create: no module named 'nope'" in m.cmd("create a kernel=nope")
    assert "error: create: bad name" in m.cmd("create -bad kernel=testguest")
    assert "error: create: not enough memory" in m.cmd("create a kernel=testguest mem=4000")
    assert "error: create: unknown key" in m.cmd("create a kernel=testguest colour=red")
    assert "error: create: vcpus=2" in m.cmd("create a kernel=testguest vcpus=2")
    m.cmd('create a kernel=testguest cmdline="hello"')
    assert "exists already" in m.cmd('create a kernel=testguest')
    assert "error: start: no guest named 'zz'" in m.cmd("start zz")
    assert "error: pause: cannot pause 'a': it is created" in m.cmd("pause a")
    m.cmd("destroy a")
    assert free_kib(m) == before


def test_invalid_guest_image_is_refused(machine_factory, tmp_path):
    from test_boot_shell import make_iso
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    m = machine_factory("qemu", iso=make_iso(tmp_path, guests=[str(junk)]))
    before = free_kib(m)
    out = m.cmd("create j kernel=junk")
    assert "error: create: 'junk' is not a usable guest image:" in out, out
    assert "j " not in m.cmd("list")
    assert free_kib(m) == before


@pytest.mark.vmx
def test_pause_resume_and_stats(host):
    m = host
    m.cmd('create hb kernel=testguest mem=16 cmdline="heartbeat"')
    m.cmd("start hb")
    wait_console(m, "hb", r"TG hb tick=20 ")
    assert "paused hb" in m.cmd("pause hb")
    assert "paused" in state_of(m, "hb")
    t1 = re.findall(r"tick=(\d+)", wait_console(m, "hb", r"tick=")[1])[-1]
    time.sleep(1.5)
    t2 = re.findall(r"tick=(\d+)", wait_console(m, "hb", r"tick=")[1])[-1]
    assert t1 == t2, "a paused guest kept running"
    assert "resumed hb" in m.cmd("resume hb")
    wait_console(m, "hb", rf"tick={int(t2) + 50} ")
    stats = m.cmd("stats hb")
    assert re.search(r"^io\s+\d+", stats, re.M) and re.search(r"^hlt\s+\d+", stats, re.M)
    assert "time in guest" in stats
    info = m.cmd("info hb")
    assert "state:      running" in info and "kernel:     testguest" in info


def test_heartbeat_keeps_time(host):
    m = host
    m.cmd('create hb kernel=testguest mem=16 cmdline="heartbeat"')
    m.cmd("start hb")
    t0 = time.time()
    wait_console(m, "hb", r"TG hb tick=300 ", timeout=90)
    elapsed = time.time() - t0
    assert elapsed > 2.0, f"300 ticks at 100 Hz took only {elapsed:.1f}s"


@pytest.mark.vmx
def test_fpu_state_survives_exits_and_other_guests(host):
    m = host
    m.cmd('create f1 kernel=testguest mem=16 cmdline="fpu rounds=30"')
    m.cmd('create f2 kernel=testguest mem=16 cmdline="fpu rounds=30"')
    m.cmd('create ex kernel=testguest mem=16 cmdline="exits n=200000"')
    for g in ("f1", "f2", "ex"):
        m.cmd(f"start {g}")
    for g in ("f1", "f2"):
        _, text = wait_console(m, g, r"TG (PASS|FAIL) fpu", timeout=180)
        assert "TG PASS fpu" in text, text[-1500:]


@pytest.mark.vmx
def test_exits_and_three_guests(host):
    m = host
    m.cmd('create a kernel=testguest mem=16 cmdline="exits n=20000"')
    m.cmd('create b kernel=testguest mem=32 cmdline="memtest passes=2 mb=8"')
    m.cmd('create c kernel=testguest mem=16 cmdline="work n=2000"')
    for g in "abc":
        m.cmd(f"start {g}")
    _, text = wait_console(m, "a", r"TG exits done", timeout=120)
    assert re.search(r"TG exits cpuid per_sec=\d+", text)
    _, text = wait_console(m, "b", r"TG (PASS|FAIL) memtest", timeout=120)
    assert "TG PASS memtest" in text
    _, text = wait_console(m, "c", r"TG work units=2000 ", timeout=120)


@pytest.mark.vmx
def test_hostile_is_contained_next_to_memtest(host):
    m = host
    m.cmd('create mt kernel=testguest mem=32 cmdline="memtest mb=16"')
    m.cmd("start mt")
    m.cmd('create h kernel=testguest mem=16 cmdline="hostile skip=mem,hlt,cr4,reset"')
    m.cmd("start h")
    _, text = wait_console(m, "h", r"TG hostile done", timeout=120)
    for insn in ["svm_vmrun", "svm_vmload", "svm_vmsave", "svm_stgi", "svm_clgi",
                 "svm_skinit", "svm_invlpga", "vmx_vmxon", "vmx_vmlaunch"]:
        assert re.search(rf"RESULT {insn} outcome=ud", text), f"{insn}:\n{text[-2500:]}"
    for msr in ["msr_efer_svme", "msr_hsave_read", "msr_hsave_write",
                "msr_feature_control_write", "msr_vmx_basic_read"]:
        assert re.search(rf"RESULT {msr} outcome=gp", text), f"{msr}:\n{text[-2500:]}"
    assert "id_00_0=0xffffffff" in text
    assert re.search(r"RESULT qemu_exit outcome=none", text)
    m.cmd('create rs kernel=testguest mem=16 cmdline="hostile only=kbd_reset"')
    m.cmd("start rs")
    assert "asked for a reset" in wait_state(m, "rs", "stopped", timeout=60)
    m.cmd("destroy rs")
    # setting CR4.VMXE: #GP as on real hardware, or the guest stopped with the reason
    m.cmd('create c4 kernel=testguest mem=16 cmdline="hostile only=cr4_vmxe"')
    m.cmd("start c4")
    line = wait_state(m, "c4", "stopped", timeout=60)
    if "powered off" in line:
        assert re.search(r"RESULT cr4_vmxe outcome=gp", wait_console(m, "c4", "RESULT")[1])
    else:
        assert "refused the guest state" in line, line
    m.cmd("destroy c4")
    # each memory escape attempt on its own guest: stopped (or faulted), host fine
    for attempt in ["mem_past_end_write", "mem_3g_read", "mem_4g_write", "mem_16g_read"]:
        m.cmd(f'create x kernel=testguest mem=16 cmdline="hostile only={attempt}"')
        m.cmd("start x")
        line = wait_state(m, "x", "stopped", timeout=60)
        assert ("outside its memory" in line or "powered off" in line), line
        m.cmd("destroy x")
    m.cmd('create z kernel=testguest mem=16 cmdline="hostile only=cli_hlt"')
    m.cmd("start z")
    wait_state(m, "z", "halted, interrupts off")
    # the console keeps the newest 16 KiB: a fast memtest scrolls early passes away
    found, text = wait_console(m, "mt", r"TG memtest pass=(\d*[3-9]|\d{2,}) errors=(\d+)", timeout=120)
    assert found.group(2) == "0" and "mismatch" not in text, text[-1500:]
    assert "online" in m.cmd("cpus")


def test_console_both_directions(host):
    m = host
    m.cmd('create e kernel=testguest mem=16 cmdline="echo"')
    m.send("start -c e\r")
    m.expect(r"Connected to e")
    m.expect(r"TG echo ready", timeout=60)
    m.send("hello ferry\r")
    m.expect(r"TG echo line=1 text=hello ferry", timeout=30)
    m.send(b"\x1d")
    m.expect(r"Disconnected from e")
    m.expect(PROMPT)


def test_single_cpu_host_runs_guest_and_shell(machine_factory):
    m = machine_factory("qemu", cpus=1, mem=256)
    m.cmd('create spin kernel=testguest mem=16 cmdline="hostile only=cli_hlt"')
    m.cmd('create w kernel=testguest mem=16 cmdline="heartbeat"')
    m.cmd("start spin")
    m.cmd("start w")
    wait_console(m, "w", r"TG hb tick=30 ", timeout=90)
    assert "ferry" in m.cmd("version")
