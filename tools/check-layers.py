#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fail when a source file includes a header of a layer above its own.

ferry's layers, bottom first, and what each may include (docs/ARCHITECTURE.md
draws them).  The Makefile also links each layer as its own archive, in this
order, so a wrong-way call that slips past this check fails to link; this
check catches the include itself, which the linker cannot see when the
symbol happens to be pulled in already.

    tools/check-layers.py [ROOT]      exit 1 and one line per wrong-way include
"""
import os
import re
import sys

# Layer of a path: the first prefix that matches wins (files before folders).
LAYER_OF = [
    ("arch/x86/cpu.h", "lib"),          # instruction wrappers, header only
    ("hv/lib/", "lib"),
    ("hv/crypto/", "crypto"),        # BearSSL and the Noise channel
    ("boot/", "boot"),
    ("arch/x86/virt.c", "vmm"),         # picks VMX or SVM
    ("arch/x86/asm-offsets.c", "vmm"),  # offsets for the world switches
    ("arch/x86/vmx/", "vmm"),
    ("arch/x86/svm/", "vmm"),
    ("arch/x86/", "arch"),              # with arch/x86/emulate/
    ("hv/mm/", "mm"),
    ("drivers/", "drivers"),
    ("hv/vdev/", "vdev"),
    ("hv/loader/", "loader"),
    ("hv/net/", "net"),
    ("hv/vmm.h", "contract"),           # the vendor contract and the
    ("hv/cpu_state.h", "contract"),     # portable CPU state it carries
    ("hv/migrate/", "migrate"),
    ("hv/shell/", "shell"),
    ("hv/main.c", "top"),
    ("hv/", "core"),
]

# What each layer may include besides itself.
MAY_USE = {
    "lib": [],
    "crypto": ["lib"],
    "boot": ["lib"],
    "arch": ["lib", "boot"],
    "mm": ["lib", "boot", "arch"],
    "drivers": ["lib", "boot", "arch", "mm"],
    "contract": ["lib", "arch"],
    "vdev": ["lib"],
    "net": ["lib"],
    "loader": ["lib", "contract"],
    "vmm": ["lib", "boot", "arch", "mm", "contract"],
    "core": ["lib", "boot", "arch", "mm", "drivers", "contract", "vdev", "loader", "net", "vmm"],
    "migrate": ["lib", "crypto", "boot", "arch", "mm", "drivers", "contract", "vdev", "loader", "net", "vmm", "core"],
    "shell": ["lib", "crypto", "boot", "arch", "mm", "drivers", "contract", "vdev", "loader", "net", "vmm", "core", "migrate"],
    "top": sorted({layer for _, layer in LAYER_OF}),
}

# Known wrong-way includes still to be taken out, each with its reason.
# Shrink this list; never grow it.
ALLOWED = {
}

SOURCE_DIRS = ["arch", "boot", "drivers", "hv"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    for prefix, layer in LAYER_OF:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return layer
    return None


def sources(root):
    for top in SOURCE_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(d, f), root)


def check(root):
    bad = []
    for src in sorted(sources(root)):
        mine = layer_of(src)
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            theirs = layer_of(inc)
            if theirs is None or theirs == mine or theirs in MAY_USE[mine]:
                continue
            if (src, inc) in ALLOWED:
                continue
            bad.append(f"{src}: includes {inc}: layer '{mine}' may not use '{theirs}'")
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = check(root)
    for line in bad:
        print("check-layers: " + line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
