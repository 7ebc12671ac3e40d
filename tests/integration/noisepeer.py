#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A second implementation on the wire: a Linux peer that speaks ferry's
secure channel with tests/tools/noise_kk.py (Noise KK on Debian's
python3-cryptography, no code shared with hv/crypto) and asks a ferry
listener one QUERY (docs/migration.md, "The handshake on the wire").

  noisepeer.py HOST PORT KEYFILE PEER_PUBKEY_HEX [MIG_ID]

KEYFILE is a ferry key file (tools/ferry-keygen).  Prints one line:
"noisepeer: refused code=N: REASON", "noisepeer: QUERY_REPLY id=... outcome=N",
or "noisepeer: failed: ..."."""

import hashlib
import os
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from noise_kk import PROLOGUE, Handshake  # noqa: E402
from migpeer import PROTO, record  # noqa: E402

MSG1, MSG2, REFUSE = 0x4E01, 0x4E02, 0x4E03
QUERY, QUERY_REPLY = 0x4D0D, 0x4D0E


def fp(pub):
    return hashlib.sha256(pub).digest()[:8]


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def handshake(sock, priv, pub, peer_pub):
    hints = fp(pub) + fp(peer_pub)
    hs = Handshake(True, priv, os.urandom(32), peer_pub, PROLOGUE + hints)
    body = hints + hs.write(True, b"")
    sock.sendall(struct.pack("<HH", MSG1, len(body)) + body)
    ftype, flen = struct.unpack("<HH", read_exact(sock, 4))
    fbody = read_exact(sock, flen)
    if ftype == REFUSE:
        code, = struct.unpack_from("<I", fbody)
        return None, f"refused code={code}: {fbody[4:].decode()}"
    if ftype != MSG2:
        return None, f"failed: frame 0x{ftype:04x}"
    hs.read(False, fbody)
    return hs.split(), None


def query(sock, tx, rx, mig_id):
    rec = record(QUERY, struct.pack("<IQ", PROTO, mig_id), 0)
    hdr = struct.pack("<H", len(rec) + 16)
    sock.sendall(hdr + tx.encrypt(hdr, rec))
    hdr = read_exact(sock, 2)
    n, = struct.unpack("<H", hdr)
    rec = rx.decrypt(hdr, read_exact(sock, n))
    rtype, _, length, seq, _ = struct.unpack_from("<HHIII", rec)
    if rtype != QUERY_REPLY or seq != 0:
        return f"failed: record 0x{rtype:04x} seq {seq}"
    rid, outcome = struct.unpack_from("<QI", rec, 16)
    return f"QUERY_REPLY id={rid:016x} outcome={outcome}"


def main(argv):
    host, port, keyfile, peer_hex = argv[1], int(argv[2]), argv[3], argv[4]
    mig_id = int(argv[5], 16) if len(argv) > 5 else 0x5059504545520001
    with open(keyfile, "rb") as f:
        key = f.read()
    priv, pub = key[16:48], key[48:80]
    with socket.create_connection((host, port), timeout=20) as sock:
        ciphers, err = handshake(sock, priv, pub, bytes.fromhex(peer_hex))
        if err:
            print("noisepeer:", err, flush=True)
            return 0
        print("noisepeer:", query(sock, *ciphers, mig_id), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
