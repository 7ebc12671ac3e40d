# SPDX-License-Identifier: BSD-2-Clause
"""The Linux side of network tests, run inside the test namespace:
  netpeer.py send HOST PORT BYTES   -> prints "sent N crc32 XXXXXXXX seconds S md5 HEX"
  netpeer.py recv PORT [TIMEOUT]    -> prints "received N crc32 XXXXXXXX seconds S md5 HEX"
  netpeer.py blocks PORT SIZE [TIMEOUT]
                                    -> a sender that repeats one SIZE-byte block until
                                       told to stop: "received N bytes, K blocks alike,
                                       md5 of one HEX", or where the stream first
                                       differs from its first block
  netpeer.py pace HOST PORT BPS     -> like send, at BPS bytes a second until SIGTERM
  netpeer.py beats PORT             -> "beat SEQ MS T" for each testguest `netbeat`
                                       datagram until SIGTERM (T: the kernel's
                                       receive time, wall clock, seconds)
(md5 for a Linux guest's busybox md5sum at the other end)
"""
import hashlib
import random
import signal
import socket
import sys
import time
import zlib

STOP = []       # SIGTERM appends: a paced sender closes and reports
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python 3.11 lacks the name


def send(host, port, total, bps=None):
    """total bytes, or with bps that many a second in 4 KiB pieces until
    SIGTERM (a transfer that is still going whenever a test looks)."""
    rnd = random.Random(7)
    block = bytes(rnd.randrange(256) for _ in range(65536))
    s = socket.create_connection((host, port), timeout=60)
    if bps:
        s.settimeout(120)       # a migration's downtime, and then some
        print("connected", flush=True)
    crc, sent, t0, md5 = 0, 0, time.time(), hashlib.md5()
    while (sent < total) if not bps else not STOP:
        size = 4096 if bps else len(block)
        chunk = block[sent % len(block):][:min(size, total - sent)]
        if bps:
            time.sleep(max(0.0, t0 + sent / bps - time.time()))
        s.sendall(chunk)
        crc = zlib.crc32(chunk, crc)
        md5.update(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(120)
    while s.recv(4096):
        pass
    s.close()
    print(f"sent {sent} crc32 {crc:08x} seconds {time.time() - t0:.3f} md5 {md5.hexdigest()}",
          flush=True)


def accept_one(port, timeout):
    """The first connection to port (says "listening" once it can come)."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(timeout)
    print("listening", flush=True)
    c, _ = ls.accept()
    ls.close()
    c.settimeout(timeout)
    return c


def recv(port, timeout):
    c = accept_one(port, timeout)
    crc, got, t0, md5 = 0, 0, time.time(), hashlib.md5()
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        crc = zlib.crc32(d, crc)
        md5.update(d)
        got += len(d)
    print(f"received {got} crc32 {crc:08x} seconds {time.time() - t0:.3f} md5 {md5.hexdigest()}",
          flush=True)


def blocks(port, size, timeout):
    """A stream of one block over and over (a guest's `cat` in a loop): any
    byte lost, doubled or changed anywhere shows as a block that differs
    from the first, or a length that is not whole blocks (a size that no
    window or segment divides: losing whole blocks is not a way to fail)."""
    c = accept_one(port, timeout)
    first, got, bad, pend = b"", 0, None, bytearray()
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        pend += d
        while len(pend) >= size:
            blk = bytes(pend[:size])
            del pend[:size]
            if not first:
                first = blk
            elif bad is None and blk != first:
                at = next(i for i in range(size) if blk[i] != first[i])
                bad = f"block {got // size} differs from the first at its byte {at}"
            got += size
    got += len(pend)
    if bad is None and pend:
        bad = f"{len(pend)} bytes past the last whole block"
    if bad:
        print(f"received {got} bytes: {bad}", flush=True)
    else:
        print(f"received {got} bytes, {got // size} blocks alike, md5 of one "
              f"{hashlib.md5(first).hexdigest()}", flush=True)


def beats(port):
    """Each datagram's number, the guest's ms and when the kernel took it
    (SO_TIMESTAMPNS: not when Python got round to reading it)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    s.settimeout(0.5)
    print("listening", flush=True)
    while not STOP:
        try:
            d, anc, _, _ = s.recvmsg(64, 64)
        except socket.timeout:
            continue
        if len(d) != 16 or not d.startswith(b"TG beat "):
            continue
        t = time.time()
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, ns = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
                t = sec + ns / 1e9
        print(f"beat {int.from_bytes(d[8:12], 'big')} {int.from_bytes(d[12:16], 'big')} "
              f"{t:.6f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "beats":
        signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))
        beats(int(sys.argv[2]))
    elif sys.argv[1] == "pace":
        signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))
        send(sys.argv[2], int(sys.argv[3]), 1 << 62, int(sys.argv[4]))
    elif sys.argv[1] == "blocks":
        blocks(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 120)
    else:
        recv(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 120)
