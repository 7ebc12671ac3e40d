# SPDX-License-Identifier: BSD-2-Clause
"""Issue: the same stock Debian kernel on Intel VMX.  Bochs emulates every
instruction, so this is the one Linux boot under Bochs in the suite: the
guest, with 2 vCPUs on Bochs's two guest CPUs, reaches its shell, the
commands of test_linux.py work there, and a job runs on both CPUs.  (Its
vCPUs often share one host CPU: without PAUSE-loop exiting, with which a
spinning vCPU yields, it had not reached its shell after 10 minutes.)"""

import re
import time

import pytest

from ferry_harness import PROMPT

from test_linux import linux_iso, scan_dmesg, talk, to_shell  # noqa: F401


@pytest.mark.vmx
def test_debian_kernel_boots_on_vmx(machine_factory, linux_iso):  # noqa: F811
    launched = time.time()
    m = machine_factory("bochs", cpus=3, mem=512, iso=linux_iso)
    to_shell(m, slow=10, vcpus=2)
    assert re.search(r"^2$", talk(m, "nproc", timeout=300), re.M)
    # one job pinned to each vCPU, at once; each says where its last step
    # ran (field 39 of /proc/self/stat: the CPU it last ran on)
    jobs = talk(m, "for i in 0 1; do (taskset -c $i sh -c \"dd if=/dev/zero bs=1M count=2 "
                   "2>/dev/null | sha256sum >/dev/null; echo JOB $i on "
                   "\\$(cut -d' ' -f39 /proc/self/stat)\") & done; wait", timeout=600)
    assert sorted(re.findall(r"^JOB (\d) on (\d+)$", jobs, re.M)) == [("0", "0"), ("1", "1")], jobs
    uname = talk(m, "uname -a", timeout=300)
    assert re.search(r"Linux \S+ 6\.1\.\S+-amd64 .* x86_64", uname), uname
    cpu = talk(m, "grep -m1 'model name' /proc/cpuinfo", timeout=300)
    assert "ferry virtual CPU" in cpu, cpu
    # Bochs's clock runs slower than the host's: sleep 1 is one second of
    # the guest's clock (uptime), which keeps within reach of the host's
    timed = talk(m, "cut -d' ' -f1 /proc/uptime; sleep 1; cut -d' ' -f1 /proc/uptime",
                 timeout=300)
    up = [float(x) for x in re.findall(r"^(\d+\.\d+)$", timed, re.M)]
    assert len(up) == 2 and 0.9 <= up[1] - up[0] < 3, timed
    scan_dmesg(m, timeout=300)
    guest_now = int(re.search(r"^(\d{9,})$", talk(m, "date +%s", timeout=300), re.M).group(1))
    # Bochs's clock is emulated time (it runs slower than the host's): the
    # guest's date is the host's time at Bochs's launch plus ferry's uptime
    # there, give or take the emulated seconds of firmware before ferry
    m.send(b"\x1d")
    m.expect("Disconnected from lx", timeout=120)
    m.expect(PROMPT, timeout=120)
    up = float(re.search(r"\(([\d.]+) s\)", m.cmd("uptime", timeout=120)).group(1))
    assert abs(guest_now - (launched + up)) < 30, (guest_now, launched, up)
    # its vCPUs spun on each other, and PAUSE-loop exiting caught it
    assert "PLE" in m.cmd("cpus", timeout=120)
    stats = m.cmd("stats lx", timeout=120)
    pause = re.search(r"^pause\s+(\d+)$", stats, re.M)
    assert pause and int(pause.group(1)) > 0, stats
    # PV EOI on VMX too: interrupts ended with no exit
    pv = re.search(r"ended by PV EOI \(no exit\): (\d+)", stats)
    assert pv and int(pv.group(1)) > 100, stats
