# SPDX-License-Identifier: BSD-2-Clause
"""Host keys for migration tests: a key pair per host from tools/ferry-keygen
and an ISO per host with its key as the GRUB module ferry.key (what
`make iso KEY=...` does, from a copy of the build taken once, so that a
rebuild meanwhile changes nothing).  QEMU hosts need RDRAND for their
ephemeral keys: QEMU_RDRAND is the -cpu that gives it (the later -cpu on
QEMU's command line wins over the harness's)."""

import os
import shutil
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KEYGEN = os.path.join(ROOT, "tools", "ferry-keygen")
MKISO = os.path.join(ROOT, "tools", "mkiso.sh")
QEMU_RDRAND = ["-cpu", "qemu64,+svm,+npt,+rdrand"]


def keygen(d):
    """A new key pair in directory d; its public key (64 hex digits)."""
    r = subprocess.run(["/usr/bin/python3", KEYGEN, d], capture_output=True, text=True,
                       timeout=30, check=True)
    pub = r.stdout.strip()
    assert len(pub) == 64, r.stdout + r.stderr
    return pub


class IsoMaker:
    """ISOs of one snapshot of build/ferry.elf and the test guest."""

    def __init__(self, tmp):
        self.tmp = str(tmp)
        self.elf = os.path.join(self.tmp, "ferry.elf")
        self.guest = os.path.join(self.tmp, "testguest.elf")
        shutil.copy(os.path.join(ROOT, "build", "ferry.elf"), self.elf)
        shutil.copy(os.path.join(ROOT, "build", "guest", "testguest.elf"), self.guest)

    def iso(self, name, key=None, script=None):
        out = os.path.join(self.tmp, name + ".iso")
        subprocess.run([MKISO, out, self.elf, self.guest, script or "", "", key or ""],
                       check=True, timeout=120, capture_output=True)
        return out
