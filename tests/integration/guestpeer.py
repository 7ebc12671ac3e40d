# SPDX-License-Identifier: BSD-2-Clause
"""A TCP connection that must survive a guest's migration, run inside the
test namespace (bulk transfers use netpeer.py):
  guestpeer.py HOST PORT SECS  -> "echo connected", then
                                  "echoed N bytes intact, longest wait W ms
                                  ending at T" (T: the host's clock) or
                                  "echo broken: why"
It talks to an echo server (busybox `nc -l -p PORT -e cat`) for SECS
seconds (0: until SIGTERM), a numbered block every 50 ms, and checks every
byte that comes back: none lost, none twice, in order."""
import signal
import socket
import sys
import time

STOP = []


def echo(host, port, secs):
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(60 if secs else 120)
    print("echo connected", flush=True)
    sent, back, n, end = b"", b"", 0, time.time() + (secs or 1e9)
    worst, worst_at = 0.0, 0.0
    while time.time() < end and not STOP:
        block = (f"{n:08d}" * 64).encode()
        t0 = time.time()
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
        if time.time() - t0 > worst:
            worst, worst_at = time.time() - t0, time.time()
        time.sleep(0.05)
    s.close()
    print(f"echoed {len(back)} bytes intact, longest wait {worst * 1000:.0f} ms "
          f"ending at {worst_at:.3f}", flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))
    echo(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
