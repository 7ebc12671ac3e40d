# SPDX-License-Identifier: BSD-2-Clause
"""A TCP connection that must survive a guest's migration, run inside the
test namespace (bulk transfers use netpeer.py):
  guestpeer.py HOST PORT SECS  -> "echo connected", then
                                  "echoed N bytes intact" or "echo broken: why"
It talks to an echo server (busybox `nc -l -p PORT -e cat`) for SECS
seconds, a numbered block every 50 ms, and checks every byte that comes
back: none lost, none twice, in order."""
import socket
import sys
import time


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
    echo(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
