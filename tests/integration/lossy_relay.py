# SPDX-License-Identifier: BSD-2-Clause
"""A lossy Ethernet link in user space (this kernel has no netem): QEMU's
`-netdev socket,udp=...` sends each frame as one UDP datagram to this relay,
which forwards it to a tap device (and back), dropping, duplicating,
delaying and reordering frames in both directions from a seeded RNG.

  lossy_relay.py TAP QEMU_PORT RELAY_PORT LOSS REORDER DUP DELAY_MS SEED
(rates as fractions, e.g. 0.02).  Runs until killed; run it inside the test
namespace (the tap lives there)."""
import fcntl
import heapq
import os
import random
import select
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454ca
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def main():
    tap, qport, rport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    loss, reorder, dup, delay = (float(x) for x in sys.argv[4:8])
    rnd = random.Random(int(sys.argv[8]))
    fd = open_tap(tap)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", rport))
    udp.setblocking(False)
    qemu = ("127.0.0.1", qport)
    pending = []   # (due, seq, direction, frame)
    seq = 0

    def schedule(direction, frame):
        nonlocal seq
        if rnd.random() < loss:
            return
        copies = 2 if rnd.random() < dup else 1
        for _ in range(copies):
            d = delay / 1000.0
            if rnd.random() < reorder:
                d += rnd.uniform(0.001, 0.004)   # held back: later frames overtake it
            seq += 1
            heapq.heappush(pending, (time.time() + d, seq, direction, frame))

    while True:
        timeout = max(0.0, pending[0][0] - time.time()) if pending else 0.5
        r, _, _ = select.select([fd, udp], [], [], timeout)
        if fd in r:
            try:
                while True:
                    schedule("to_qemu", os.read(fd, 65536))
            except BlockingIOError:
                pass
        if udp in r:
            try:
                while True:
                    schedule("to_tap", udp.recv(65536))
            except BlockingIOError:
                pass
        now = time.time()
        while pending and pending[0][0] <= now:
            _, _, direction, frame = heapq.heappop(pending)
            try:
                if direction == "to_qemu":
                    udp.sendto(frame, qemu)
                else:
                    os.write(fd, frame)
            except OSError:
                pass


if __name__ == "__main__":
    main()
