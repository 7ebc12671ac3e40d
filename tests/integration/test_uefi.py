# SPDX-License-Identifier: BSD-2-Clause
"""The boot/shell core under UEFI firmware (OVMF): the same ISO GRUB boots
from BIOS, with the RSDP, memory map and command line from multiboot2 tags."""
import re

import pytest

from ferry_harness import ovmf_missing

# (under FERRY_CI conftest ends the session instead: CI must run these)
pytestmark = pytest.mark.skipif(bool(ovmf_missing()), reason="ovmf not installed (make deps)")


def test_uefi_boot_shell_guest_poweroff(machine_factory):
    m = machine_factory("qemu", firmware="uefi", cpus=2)
    log = m.cmd("log")
    assert "acpi: 2 CPUs, I/O APIC present, power-off via S5" in log
    assert "command line 'console=com1,115200" in log
    assert "cpus: 2 of 2 online" in log
    rows = re.findall(r"^(\d+)\s+\d+\s+online\s+\d+\s+SVM NPT", m.cmd("cpus"), re.M)
    assert rows == ["0", "1"], rows
    mem = m.cmd("mem")
    assert re.search(r"\d+ MiB", mem), mem
    out = m.cmd('create g kernel=testguest mem=16 cmdline="hello"')
    assert "created g" in out
    assert "started g" in m.cmd("start g")
    assert "destroyed g" in m.cmd("destroy g")
    m.send("poweroff\r")
    m.expect("powering off")
    assert m.exited(30) is not None, "QEMU did not end on poweroff under OVMF"


def test_uefi_reboot_resets_machine(machine_factory):
    m = machine_factory("qemu", firmware="uefi")   # -no-reboot: a reset ends QEMU
    m.send("reboot\r")
    m.expect("rebooting")
    assert m.exited(30) is not None, "QEMU did not reset on reboot under OVMF"
