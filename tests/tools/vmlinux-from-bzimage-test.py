#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tools/vmlinux-from-bzimage.py against bzImages made here: an xz and a
gzip payload holding a small ELF64 with a PVH note come out as the same
segments (filesz without the trailing zeroes, memsz kept, bytes equal),
and every broken input is refused with a message and no traceback."""

import gzip
import lzma
import os
import struct
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                    "vmlinux-from-bzimage.py")
failures = []


def elf(note=True):
    """ELF64: text (entry note inside) and data ending in zeroes, a PT_NOTE."""
    text = bytes((i * 7 + 1) & 0xff for i in range(0x1800)) + bytes(0x800)
    data = b"\x11" * 0x300 + bytes(0xd00)
    n_type = 18 if note else 17
    notes = struct.pack("<III", 4, 8, n_type) + b"Xen\0" + struct.pack("<Q", 0x1000010)
    text = text[:0x100] + notes + text[0x100 + len(notes):]
    ph = [(1, 5, 0x1000, 0xffffffff81000000, 0x1000000, len(text), len(text)),
          (1, 6, 0x3000, 0xffffffff81200000, 0x1200000, len(data), len(data) + 0x4000),
          (4, 4, 0x1100, 0xffffffff81000100, 0x1000100, len(notes), len(notes))]
    head = bytearray(b"\x7fELF\x02\x01\x01" + bytes(9))
    head += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0x1000000, 64, 0, 0, 64, 56, len(ph),
                        64, 0, 0)
    for p in ph:
        head += struct.pack("<IIQQQQQQ", *p, 0x200000)
    out = bytes(head) + bytes(0x1000 - len(head)) + text + data
    return out, text, data


def bzimage(payload, version=0x20f, cut=0):
    payload += struct.pack("<I", 0x12345)     # Linux appends the unpacked size
    setup = 4
    b = bytearray((setup + 1) * 512)
    b[0x1f1] = setup
    b[0x1fe:0x200] = b"\x55\xaa"
    b[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", b, 0x206, version)
    struct.pack_into("<II", b, 0x248, 0, len(payload) + cut)
    return bytes(b) + payload


def run(image, out):
    src = os.path.join(tmp, "bz")
    with open(src, "wb") as f:
        f.write(image)
    return subprocess.run([sys.executable, TOOL, src, out], capture_output=True, text=True)


def check_good(name, payload):
    out = os.path.join(tmp, name)
    r = run(bzimage(payload), out)
    if r.returncode:
        failures.append(f"{name}: {r.stderr}")
        return
    b = open(out, "rb").read()
    _, text, data = elf()
    phoff, = struct.unpack_from("<Q", b, 0x20)
    shnum, = struct.unpack_from("<H", b, 0x3c)
    loads, note = [], None
    for i in range(struct.unpack_from("<H", b, 0x38)[0]):
        t, _, off, va, pa, fs, ms, al = struct.unpack_from("<IIQQQQQQ", b, phoff + 56 * i)
        if t == 1:
            loads.append((pa, b[off:off + fs], ms))
        if t == 4:
            note = b[off:off + fs]
        if t in (1, 4) and (off - va) % max(al, 1):
            failures.append(f"{name}: segment {i} at offset {off:#x} breaks p_align {al:#x}")
    # the entry note kept whole: "Xen", type 18 (PHYS32_ENTRY), 16 MiB + 0x10
    if not note or struct.pack("<III", 4, 8, 18) + b"Xen\0" + struct.pack("<Q", 0x1000010) \
            not in note:
        failures.append(f"{name}: no PVH entry note in the output")
    want = [(0x1000000, text.rstrip(b"\0"), len(text)),
            (0x1200000, data.rstrip(b"\0"), len(data) + 0x4000)]
    if loads != want or shnum:
        failures.append(f"{name}: segments {[(hex(p), len(d), m) for p, d, m in loads]}")


def check_refused(name, image, words):
    r = run(image, os.path.join(tmp, "never"))
    if r.returncode == 0 or words not in r.stderr or "Traceback" in r.stderr:
        failures.append(f"{name}: rc {r.returncode}, {r.stderr.strip()!r}")
    if os.path.exists(os.path.join(tmp, "never")):
        failures.append(f"{name}: wrote its output")


with tempfile.TemporaryDirectory() as tmp:
    body = elf()[0]
    check_good("xz", lzma.compress(body, format=lzma.FORMAT_XZ))
    check_good("gzip", gzip.compress(body))
    check_refused("no header", b"\0" * 4096, "no boot protocol header")
    check_refused("old protocol", bzimage(gzip.compress(body), version=0x206), "payload fields")
    check_refused("cut short", bzimage(gzip.compress(body), cut=100), "past the end")
    check_refused("zstd", bzimage(b"\x28\xb5\x2f\xfd" + bytes(60)), "does not unpack")
    check_refused("corrupt xz", bzimage(lzma.compress(body)[:200]), "does not unpack")
    check_refused("not ELF", bzimage(gzip.compress(b"MZ" + bytes(500))), "not a little-endian ELF64")
    check_refused("no PVH note", bzimage(gzip.compress(elf(note=False)[0])), "CONFIG_PVH")
    many = bytearray(body)
    struct.pack_into("<H", many, 0x38, 65)
    check_refused("65 headers", bzimage(gzip.compress(bytes(many) + bytes(65 * 56))),
                  "64 at most")

for f in failures:
    print("vmlinux-from-bzimage-test:", f)
print("vmlinux-from-bzimage-test:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
