# SPDX-License-Identifier: BSD-2-Clause
"""The Linux peer of guest network tests, run inside the test namespace:
  guestpeer.py send HOST PORT BYTES  -> "sent N md5 HEX"
  guestpeer.py recv PORT [TIMEOUT]   -> "listening", then "received N md5 HEX"
  guestpeer.py echo HOST PORT SECS   -> "echo connected", then
                                        "echoed N bytes intact" or "echo broken: why"
The echo mode talks to an echo server (busybox `nc -l -p PORT -e cat`)
for SECS seconds, a numbered block every 50 ms, and checks every byte
that comes back: none lost, none twice, in order."""
import hashlib
import random
import socket
import sys
import time


def send(host, port, total):
    rnd = random.Random(7)
    block = bytes(rnd.randrange(256) for _ in range(65536))
    s = socket.create_connection((host, port), timeout=60)
    h, sent = hashlib.md5(), 0
    while sent < total:
        chunk = block[: min(len(block), total - sent)]
        s.sendall(chunk)
        h.update(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(120)
    while s.recv(4096):
        pass
    s.close()
    print(f"sent {sent} md5 {h.hexdigest()}", flush=True)


def recv(port, timeout):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(timeout)
    print("listening", flush=True)
    c, _ = ls.accept()
    c.settimeout(timeout)
    h, got = hashlib.md5(), 0
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d)
        got += len(d)
    print(f"received {got} md5 {h.hexdigest()}", flush=True)


def echo(host, port, secs):
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(60)
    print("echo connected", flush=True)
    sent, back, n, end = b"", b"", 0, time.time() + secs
    while time.time() < end:
        block = (f"{n:08d}" * 64).encode()
        s.sendall(block)
        sent += block
        n += 1
        while len(back) < len(sent):
            d = s.recv(65536)
            if not d:
                print(f"echo broken: closed after {len(back)} bytes", flush=True)
                return
            back += d
        if back != sent:
            print(f"echo broken: bytes differ after {len(back)}", flush=True)
            return
        time.sleep(0.05)
    s.close()
    print(f"echoed {len(back)} bytes intact", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "recv":
        recv(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 120)
    else:
        echo(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
