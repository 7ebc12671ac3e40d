# SPDX-License-Identifier: BSD-2-Clause
"""The Linux peer's side of tcpmove_bench.py, run inside its namespace:
three TCP connections to a guest, each watched for the times it made no
progress, until SIGTERM:

  stallpeer.py GUEST_IP RATE_BPS [out]

  echo: to `nc -l -p 5003 -e cat` in the guest, a 64-byte block every
        10 ms, each waiting for its echo: progress is an echo arriving;
  in:   to `nc -l -p 5004` in the guest, RATE_BPS bytes a second: progress
        is the guest acknowledging bytes (sent less the socket's unacked
        queue, SIOCOUTQ), counted only while bytes are outstanding;
  out:  (with `out`) from the guest, which connects to port 5005 here and
        sends: progress is bytes arriving.

It prints "ready" once all three are up and, at SIGTERM, one line per
connection: "FLOW bytes=N gaps=S0-E0,S1-E1,..." (each a stretch of 20 ms or
more with no progress, in the host's clock, start and end of the stretch)
and then "done"."""
import fcntl
import signal
import socket
import struct
import sys
import termios
import threading
import time

GAP = 0.02
STOP = threading.Event()


class Flow:
    def __init__(self, name):
        self.name, self.bytes, self.gaps, self.last = name, 0, [], time.time()
        self.error = None

    def progress(self, n, now=None):
        now = now or time.time()
        if now - self.last >= GAP:
            self.gaps.append((self.last, now))
        self.last, self.bytes = now, self.bytes + n

    def idle(self, now=None):
        """No progress is due (nothing outstanding): the clock restarts."""
        self.last = now or time.time()

    def line(self):
        if self.error:
            return f"{self.name} error={self.error}"
        gaps = ",".join(f"{a:.3f}-{b:.3f}" for a, b in self.gaps) or "none"
        return f"{self.name} bytes={self.bytes} gaps={gaps}"


def echo(host, f):
    s = socket.create_connection((host, 5003), timeout=120)
    block = b"x" * 64
    while not STOP.is_set():
        s.sendall(block)
        got = 0
        while got < len(block):
            d = s.recv(len(block) - got)
            if not d:
                raise ConnectionError("echo closed")
            got += len(d)
        f.progress(got)
        STOP.wait(0.01)
        f.idle()


def unacked(s):
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


def into(host, rate, f):
    s = socket.create_connection((host, 5004), timeout=120)
    chunk, sent, t0, acked = b"\xa5" * 4096, 0, time.time(), 0
    s.setblocking(False)
    while not STOP.is_set():
        if sent < (time.time() - t0) * rate:
            try:
                sent += s.send(chunk)
            except BlockingIOError:
                pass
        now_acked = sent - unacked(s)
        if now_acked > acked:
            f.progress(now_acked - acked)
            acked = now_acked
        elif now_acked == sent:
            f.idle()
        time.sleep(0.002)


def out(listener, f):
    c, _ = listener.accept()
    c.settimeout(120)
    f.idle()
    while not STOP.is_set():
        d = c.recv(1 << 16)
        if not d:
            raise ConnectionError("out closed")
        f.progress(len(d))


def run(fn, f, *args):
    try:
        fn(*args, f)
    except OSError as e:
        f.error = f"{type(e).__name__}:{e}".replace(" ", "_")


def main(host, rate, with_out):
    flows = {n: Flow(n) for n in ("echo", "in", "out")[:3 if with_out else 2]}
    threads = [threading.Thread(target=run, args=(echo, flows["echo"], host)),
               threading.Thread(target=run, args=(into, flows["in"], host, rate))]
    if with_out:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", 5005))
        ls.listen(1)
        ls.settimeout(120)
        threads.append(threading.Thread(target=run, args=(out, flows["out"], ls)))
    for t in threads:
        t.start()
    print("listening", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    while not STOP.is_set() and any(t.is_alive() for t in threads):
        STOP.wait(0.2)
    STOP.set()
    for t in threads:
        t.join(130)
    for f in flows.values():
        print(f.line(), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["out"])
