#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A second implementation of ferry's Noise_KK_25519_ChaChaPoly_SHA256.

Written from the Noise Protocol Framework, revision 34, on Debian's
python3-cryptography (X25519, ChaCha20Poly1305) and Python's hashlib/hmac,
sharing no code with hv/crypto/noise.c.  It runs both roles with fixed keys
and prints a C header of the transcript: the two handshake messages, the
handshake hash and the first transport records each way, sealed with
ferry's record layer (le16 length, which is also the associated data).

    tests/tools/noise_kk.py > noise_kk_vectors.h

It first checks itself against the published test vector for this protocol
(noise_kk_cacophony.json: the Noise_KK_25519_ChaChaPoly_SHA256 entry of the
cacophony vectors, as shipped in github.com/mcginty/snow,
tests/vectors/cacophony.txt) and passes that vector on to the C test too.
"""
import hashlib
import hmac
import json
import os
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey, X25519PublicKey)
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

NAME = b"Noise_KK_25519_ChaChaPoly_SHA256"
PROTO_VERSION = 10  # MIG_PROTO_VERSION (hv/migrate/stream.h): in the prologue
PROLOGUE = b"ferry-migrate" + struct.pack("<I", PROTO_VERSION)

# fixed keys: the test's, never a real host's
KEYS = {
    "init_s": bytes(range(0x10, 0x30)),
    "init_e": bytes(range(0x30, 0x50)),
    "resp_s": bytes(range(0x50, 0x70)),
    "resp_e": bytes(range(0x70, 0x90)),
}
PAYLOAD1 = b"hello from the source"
PAYLOAD2 = b"welcome, says the destination"
RECORDS_I2R = [b"first record, initiator to responder", b"second one", b""]
RECORDS_R2I = [b"first record, responder to initiator", b"and a second"]


def pub(priv):
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        Encoding.Raw, PublicFormat.Raw)


def dh(priv, pub_bytes):
    return X25519PrivateKey.from_private_bytes(priv).exchange(
        X25519PublicKey.from_public_bytes(pub_bytes))


def hkdf(ck, ikm):
    temp = hmac.new(ck, ikm, hashlib.sha256).digest()
    out1 = hmac.new(temp, b"\x01", hashlib.sha256).digest()
    out2 = hmac.new(temp, out1 + b"\x02", hashlib.sha256).digest()
    return out1, out2


class Cipher:
    def __init__(self, k):
        self.k, self.n = k, 0

    def nonce(self):
        return b"\0" * 4 + struct.pack("<Q", self.n)

    def encrypt(self, ad, pt):
        ct = ChaCha20Poly1305(self.k).encrypt(self.nonce(), pt, ad)
        self.n += 1
        return ct

    def decrypt(self, ad, ct):
        pt = ChaCha20Poly1305(self.k).decrypt(self.nonce(), ct, ad)
        self.n += 1
        return pt


class Handshake:
    def __init__(self, initiator, s, e, rs, prologue=PROLOGUE):
        self.initiator, self.s, self.e, self.rs = initiator, s, e, rs
        self.h = NAME  # exactly HASHLEN bytes
        self.ck = self.h
        self.c = None
        self.mix_hash(prologue)
        ipub, rpub = (pub(s), rs) if initiator else (rs, pub(s))
        self.mix_hash(ipub)
        self.mix_hash(rpub)

    def mix_hash(self, data):
        self.h = hashlib.sha256(self.h + data).digest()

    def mix_key(self, ikm):
        self.ck, k = hkdf(self.ck, ikm)
        self.c = Cipher(k)

    def tokens(self, first, re):
        me_i = self.initiator
        if first:   # es, ss
            self.mix_key(dh(self.e, self.rs) if me_i else dh(self.s, re))
            self.mix_key(dh(self.s, self.rs))
        else:       # ee, se
            self.mix_key(dh(self.e, re))
            self.mix_key(dh(self.s, re) if me_i else dh(self.e, self.rs))

    def write(self, first, payload):
        epub = pub(self.e)
        self.mix_hash(epub)
        self.tokens(first, getattr(self, "re", None))
        ct = self.c.encrypt(self.h, payload)
        self.mix_hash(ct)
        return epub + ct

    def read(self, first, msg):
        re, ct = msg[:32], msg[32:]
        self.re = re
        self.mix_hash(re)
        self.tokens(first, re)
        pt = self.c.decrypt(self.h, ct)
        self.mix_hash(ct)
        return pt

    def split(self):
        k1, k2 = hkdf(self.ck, b"")
        c1, c2 = Cipher(k1), Cipher(k2)
        return (c1, c2) if self.initiator else (c2, c1)


def seal_record(c, pt):
    hdr = struct.pack("<H", len(pt) + 16)
    return hdr + c.encrypt(hdr, pt)


def transcript():
    k = KEYS
    ini = Handshake(True, k["init_s"], k["init_e"], pub(k["resp_s"]))
    res = Handshake(False, k["resp_s"], k["resp_e"], pub(k["init_s"]))
    msg1 = ini.write(True, PAYLOAD1)
    assert res.read(True, msg1) == PAYLOAD1
    msg2 = res.write(False, PAYLOAD2)
    assert ini.read(False, msg2) == PAYLOAD2
    assert ini.h == res.h
    out = {"msg1": msg1, "msg2": msg2, "hash": ini.h}
    i_tx, i_rx = ini.split()
    r_tx, r_rx = res.split()
    out["i2r"] = [seal_record(i_tx, p) for p in RECORDS_I2R]
    out["r2i"] = [seal_record(r_tx, p) for p in RECORDS_R2I]
    for rec, p in zip(out["i2r"], RECORDS_I2R):
        assert r_rx.decrypt(rec[:2], rec[2:]) == p
    for rec, p in zip(out["r2i"], RECORDS_R2I):
        assert i_rx.decrypt(rec[:2], rec[2:]) == p
    return out


def check_cacophony(v):
    """This implementation against the published vector (cacophony's)."""
    x = bytes.fromhex
    pro = x(v["init_prologue"])
    ini = Handshake(True, x(v["init_static"]), x(v["init_ephemeral"]),
                    x(v["init_remote_static"]), pro)
    res = Handshake(False, x(v["resp_static"]), x(v["resp_ephemeral"]),
                    x(v["resp_remote_static"]), pro)
    m = [(x(a["payload"]), x(a["ciphertext"])) for a in v["messages"]]
    assert ini.write(True, m[0][0]) == m[0][1]
    assert res.read(True, m[0][1]) == m[0][0]
    assert res.write(False, m[1][0]) == m[1][1]
    assert ini.read(False, m[1][1]) == m[1][0]
    assert ini.h == res.h == x(v["handshake_hash"])
    i_tx, i_rx = ini.split()
    r_tx, r_rx = res.split()
    for i, (p, ct) in enumerate(m[2:]):
        tx, rx = (i_tx, r_rx) if i % 2 == 0 else (r_tx, i_rx)
        assert tx.encrypt(b"", p) == ct
        assert rx.decrypt(b"", ct) == p


def c_bytes(name, data):
    body = ",".join("0x%02x" % b for b in data)
    return "static const uint8_t %s[%d] = { %s };\n" % (name, len(data), body)


def c_str(name, s):
    return "static const char %s[] = \"%s\";\n" % (name, s.decode())


def c_cacophony(v):
    """The published vector, as C arrays for the C implementation."""
    x = bytes.fromhex
    out = ""
    for k in ("init_prologue", "init_static", "init_ephemeral", "resp_static",
              "resp_ephemeral", "handshake_hash"):
        out += c_bytes("caco_" + k, x(v[k]))
    for i, a in enumerate(v["messages"]):
        out += c_bytes("caco_pt%d" % i, x(a["payload"]))
        out += c_bytes("caco_ct%d" % i, x(a["ciphertext"]))
    return out + "#define CACO_MESSAGES %d\n" % len(v["messages"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "noise_kk_cacophony.json")) as f:
        vector = json.load(f)
    check_cacophony(vector)
    t = transcript()
    w = sys.stdout.write
    w("/* Generated by tests/tools/noise_kk.py: do not edit. */\n#include <stdint.h>\n")
    w(c_cacophony(vector))
    w("#define KK_PROTO_VERSION %d\n" % PROTO_VERSION)
    for name, key in KEYS.items():
        w(c_bytes("kk_" + name, key))
    w(c_str("kk_payload1", PAYLOAD1) + c_str("kk_payload2", PAYLOAD2))
    w(c_bytes("kk_msg1", t["msg1"]) + c_bytes("kk_msg2", t["msg2"]))
    w(c_bytes("kk_hash", t["hash"]))
    for d, recs, pts in (("i2r", t["i2r"], RECORDS_I2R), ("r2i", t["r2i"], RECORDS_R2I)):
        for i, (rec, p) in enumerate(zip(recs, pts)):
            w(c_bytes("kk_%s_rec%d" % (d, i), rec))
            w(c_str("kk_%s_pt%d" % (d, i), p))
    w("#define KK_I2R_RECORDS %d\n#define KK_R2I_RECORDS %d\n" %
      (len(RECORDS_I2R), len(RECORDS_R2I)))


if __name__ == "__main__":
    main()
