#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The kernel inside a Linux bzImage, as an ELF file ferry boots by its PVH
entry (hv/loader/pvh.h), which skips the bzImage's decompressor:

    tools/vmlinux-from-bzimage.py BZIMAGE OUT

The payload (boot protocol 2.08+: payload_offset and payload_length in the
setup header) is unpacked (xz, gzip, lzma or bzip2, by its magic) into the
kernel's ELF image.  OUT keeps that ELF's header and program headers and
the bytes of its segments, each without the zeroes that end it (p_filesz
shrinks, p_memsz stays: a loader zeroes the rest, as for .bss), and drops
the section headers and the relocations appended after them.  Linux's
memory image is byte for byte the one the decompressor would make at the
kernel's own physical address.  Refuses, with a reason, a file that is no
x86-64 bzImage, a payload it cannot unpack, and a kernel with no PVH entry
note (XEN_ELFNOTE_PHYS32_ENTRY: CONFIG_PVH)."""

import bz2
import lzma
import os
import struct
import sys
import zlib

PT_LOAD, PT_NOTE = 1, 4
XEN_ELFNOTE_PHYS32_ENTRY = 18


class Refused(Exception):
    pass


def payload(image):
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS" or image[0x1fe:0x200] != b"\x55\xaa":
        raise Refused("not a bzImage (no boot protocol header)")
    version = struct.unpack_from("<H", image, 0x206)[0]
    if version < 0x208:
        raise Refused(f"boot protocol {version >> 8}.{version & 0xff:02} has no payload fields")
    setup = image[0x1f1] or 4
    off, length = struct.unpack_from("<II", image, 0x248)
    start = (setup + 1) * 512 + off
    if start + length > len(image):
        raise Refused("the payload runs past the end of the file")
    return image[start:start + length]


def whole(d, data):
    """What decompressor d makes of data, which must hold its whole stream
    (Linux appends the unpacked size after it: left over, unread)."""
    out = d.decompress(data)
    if not d.eof:
        raise EOFError("the compressed stream is cut short")
    return out


def unpack(data):
    try:
        if data.startswith(b"\xfd7zXZ\x00"):
            return whole(lzma.LZMADecompressor(format=lzma.FORMAT_XZ), data)
        if data.startswith(b"\x1f\x8b"):
            return whole(zlib.decompressobj(16 + zlib.MAX_WBITS), data)
        if data.startswith(b"\x5d\x00\x00"):
            return whole(lzma.LZMADecompressor(format=lzma.FORMAT_ALONE), data)
        if data.startswith(b"BZh"):
            return whole(bz2.BZ2Decompressor(), data)
    except (lzma.LZMAError, OSError, EOFError, ValueError) as e:
        raise Refused(f"the payload does not unpack: {e}") from e
    raise Refused(f"a payload compressed in a way this tool does not unpack "
                  f"(magic {data[:4].hex()}; xz, gzip, lzma and bzip2 are known)")


def notes(elf, off, size):
    end, out = off + size, []
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", elf, off)
        name_at = off + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        nxt = desc_at + ((descsz + 3) & ~3)
        if nxt > end:
            break
        out.append((elf[name_at:name_at + namesz].rstrip(b"\0"), ntype,
                    elf[desc_at:desc_at + descsz]))
        off = nxt
    return out


def strip(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise Refused("the payload is not a little-endian ELF64 file")
    e_type, e_machine = struct.unpack_from("<HH", elf, 16)
    if e_type != 2 or e_machine != 62:
        raise Refused("the payload is not an x86-64 executable")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    if phentsize != 56 or phoff + 56 * phnum > len(elf):
        raise Refused("the payload's program headers are cut short")
    if phnum > 64:                                       # PVH_MAX_PHNUM, hv/loader/pvh.h
        raise Refused(f"{phnum} program headers: ferry reads 64 at most")
    phdrs = [list(struct.unpack_from("<IIQQQQQQ", elf, phoff + 56 * i)) for i in range(phnum)]
    entry = None
    for p in phdrs:
        if p[0] == PT_NOTE and p[2] + p[5] <= len(elf):
            for name, ntype, desc in notes(elf, p[2], p[5]):
                if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                    entry = desc
    if entry is None:
        raise Refused("the kernel has no PVH entry note (built without CONFIG_PVH)")
    # the new file: ELF header, program headers, then each segment's bytes
    # (page-aligned, as loaders expect p_offset and p_vaddr to agree mod 4 KiB)
    head = bytearray(elf[:64])
    struct.pack_into("<QQ", head, 0x20, 64, 0)           # e_phoff, e_shoff: none
    struct.pack_into("<HHH", head, 0x3a, 0, 0, 0)        # e_shentsize, e_shnum, e_shstrndx
    body, at = bytearray(), 4096
    for p in phdrs:
        ptype, _, off, vaddr, _, filesz, memsz, _ = p
        if ptype not in (PT_LOAD, PT_NOTE):
            p[0] = 0                                     # PT_NULL
            continue
        if off + filesz > len(elf):
            raise Refused("a segment runs past the end of the payload")
        data = elf[off:off + filesz]
        if ptype == PT_LOAD:
            data = data.rstrip(b"\0")
        at += (vaddr - at) % 4096
        body += bytes(at - 4096 - len(body)) if at - 4096 > len(body) else b""
        p[2], p[5] = at, len(data)
        p[7] = min(p[7], 4096)          # p_offset = p_vaddr modulo p_align still
        body += data
        at += len(data)
    out = head + b"".join(struct.pack("<IIQQQQQQ", *p) for p in phdrs)
    return out + bytes(4096 - len(out)) + body


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            out = strip(unpack(payload(f.read())))
    except Refused as e:
        print(f"vmlinux-from-bzimage: {argv[1]}: {e}", file=sys.stderr)
        return 1
    tmp = argv[2] + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
