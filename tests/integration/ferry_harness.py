# SPDX-License-Identifier: BSD-2-Clause
"""Boot ferry in QEMU (AMD SVM) or Bochs (Intel VMX) and drive its serial
shell the way an operator does.  Every wait has a timeout; every run keeps
its console transcript in build/test-logs/."""

import atexit
import fcntl
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
ISO = os.path.join(BUILD, "ferry.iso")
LOGDIR = os.path.join(BUILD, "test-logs")
# Bochs's clock is emulated: one second is `ips` instructions (no `clock:`
# line, so sync=none).  Its tuntap NIC takes at most one packet per
# emulated ms, and Bochs runs some 20-30 M instructions per real second
# here, so at 200M a move into Bochs crawled at 0.2 MB/s and firmware
# waits took 5x their time.  50M (measured against 200M, 100M, 35M, 20M)
# boots and migrates fastest while emulated time still runs slower than
# real; FERRY_BOCHS_IPS overrides it for such measurements.
BOCHS_IPS = int(os.environ.get("FERRY_BOCHS_IPS", "50000000"))
OVMF_DIR = os.environ.get("OVMF_DIR", "/usr/share/OVMF")


def ovmf_missing():
    """The OVMF files a UEFI machine needs (_firmware_args) that are not there."""
    return [f for f in ("OVMF_CODE.fd", "OVMF_VARS.fd")
            if not os.path.exists(os.path.join(OVMF_DIR, f))]


PROMPT = "ferry> "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Timeout(AssertionError):
    pass


_LIVE = []      # emulators not closed yet: killed when Python exits, never orphaned


@atexit.register
def _kill_leftovers():
    for m in list(_LIVE):
        if m.proc and m.proc.poll() is None:
            m.proc.kill()
        if m.relay and m.relay.poll() is None:
            m.relay.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Machine:
    """One emulator running a ferry ISO, with its COM1 on a socket."""

    def __init__(self, name, kind="qemu", cpus=2, mem=512, iso=ISO, extra=(), netns=None,
                 firmware="bios"):
        self.name, self.kind, self.cpus, self.mem, self.iso = name, kind, cpus, mem, iso
        self.extra = list(extra)
        self.firmware = firmware   # "bios" (SeaBIOS) or "uefi" (OVMF, QEMU only)
        self.netns = netns     # run the emulator inside this network namespace
        self.buf = ""          # everything received, ANSI stripped
        self.pos = 0           # where the next expect() starts looking
        self.proc = None
        self.relay = None
        self.sock = None
        self._raw = bytearray()    # read by the pump thread, not yet in buf
        self._eof = False
        self._cv = threading.Condition()
        self.reading = threading.Event()   # cleared: the console is not read
        self.reading.set()
        self.tmp = tempfile.mkdtemp(prefix="ferry-")
        os.makedirs(LOGDIR, exist_ok=True)
        self.logpath = os.path.join(LOGDIR, f"{name}.log")
        self.log = open(self.logpath, "w", encoding="utf-8", errors="replace")

    # ---- start and stop ----------------------------------------------
    def start(self, boot_timeout=None, prompt=True):
        """Boot; unless prompt is False, wait for the first prompt.  A boot
        that fails closes the machine: callers that write
        `m = Machine(...).start()` never get m to close."""
        _LIVE.append(self)
        try:
            if self.kind == "qemu":
                self._start_qemu()
            else:
                self._start_bochs()
            threading.Thread(target=self._pump, daemon=True).start()
            if prompt:
                self.expect(PROMPT, timeout=boot_timeout or (60 if self.kind == "qemu" else 300))
        except BaseException:
            self.close()
            raise
        return self

    def _start_qemu(self):
        path = os.path.join(self.tmp, "serial.sock")
        cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "qemu64,+svm,+npt",
               "-smp", str(self.cpus), "-m", str(self.mem), "-cdrom", self.iso,
               "-display", "none", "-no-reboot", "-monitor", "none",
               "-chardev", f"socket,id=s0,path={path},server=on,wait=on",
               "-serial", "chardev:s0"] + self._firmware_args() + self.extra
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.sock = self._connect_unix(path)

    def _firmware_args(self):
        """UEFI: OVMF's code read-only and a private copy of its variables."""
        if self.firmware == "bios":
            return []
        if self.firmware != "uefi":
            raise ValueError(f"unknown firmware {self.firmware!r}")
        varstore = os.path.join(self.tmp, "OVMF_VARS.fd")
        shutil.copyfile(os.path.join(OVMF_DIR, "OVMF_VARS.fd"), varstore)
        return ["-machine", "q35",
                "-drive", "if=pflash,format=raw,readonly=on,file="
                + os.path.join(OVMF_DIR, "OVMF_CODE.fd"),
                "-drive", f"if=pflash,format=raw,file={varstore}"]

    def _connect_unix(self, path, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.kind} exited early: see {self.logpath}")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                return s
            except OSError:
                time.sleep(0.05)
        raise Timeout(f"no serial socket from {self.kind}")

    def _start_bochs(self):
        port = free_port()
        rc = os.path.join(self.tmp, "bochsrc")
        with open(rc, "w") as f:
            f.write(f"""megs: {self.mem}
cpu: model=corei7_skylake_x, count={self.cpus}, ips={BOCHS_IPS}
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path={self.iso}, status=inserted
boot: cdrom
display_library: rfb, options="timeout=0"
port_e9_hack: enabled=1
com1: enabled=1, mode=socket-server, dev=localhost:{port}
log: {os.path.join(self.tmp, 'bochs.log')}
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
panic: action=fatal
error: action=report
""" + "".join(l + "\n" for l in self.extra))
        cmd = ["bochs", "-q", "-f", rc]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=self.tmp)
        self.proc.stdin.write(b"c\n")
        self.proc.stdin.flush()
        if self.netns:
            # Bochs listens on the namespace's loopback: relay it to a Unix socket
            path = os.path.join(self.tmp, "serial.sock")
            self.relay = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, "socat",
                 f"UNIX-LISTEN:{path}", f"TCP:localhost:{port},retry=600,interval=0.1"],
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
            self.sock = self._connect_unix(path, timeout=60)
            return
        end = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"bochs exited early: see {self.logpath}")
            try:
                self.sock = socket.create_connection(("localhost", port), timeout=1)
                break
            except OSError:
                if time.time() > end:
                    raise Timeout("no serial socket from bochs")
                time.sleep(0.1)

    def close(self, timeout=10):
        """Stop the emulator and keep the transcript; a second call (a
        caller's cleanup after a failed start) does nothing more."""
        if self in _LIVE:
            _LIVE.remove(self)
        if self.sock:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.relay and self.relay.poll() is None:
            self.relay.kill()
            self.relay.wait()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.write("\n---- console ----\n" + self.buf)
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def exited(self, timeout):
        """Wait for the emulator to end by itself; its exit status or None."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    # ---- console I/O -------------------------------------------------
    def _pump(self):
        """Read the console all the time, so that ferry never waits on a full
        serial line (a stalled UART would stall its whole shell CPU, network
        included) while a test talks to another machine."""
        sock = self.sock
        while True:
            self.reading.wait()
            try:
                data = sock.recv(65536)
            except (socket.timeout, BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            with self._cv:
                if not data:
                    self._eof = True
                else:
                    self._raw += data
                self._cv.notify_all()
            if not data:
                return

    def _recv(self, timeout):
        with self._cv:
            if not self._raw and not self._eof:
                self._cv.wait(max(timeout, 0.01))
            data, self._raw = bytes(self._raw), bytearray()
            eof = self._eof
        if not data:
            if eof and self.proc.poll() is None:
                time.sleep(min(timeout, 0.1))
            return False
        self.buf += ANSI.sub("", data.decode("utf-8", "replace")).replace("\r", "")
        return True

    def expect(self, pattern, timeout=30):
        """Wait for regex pattern after the current position; return the match."""
        rx = re.compile(pattern if not isinstance(pattern, str) or pattern != PROMPT
                        else re.escape(PROMPT))
        end = time.time() + timeout
        while True:
            m = rx.search(self.buf, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = end - time.time()
            if left <= 0:
                tail = self.buf[-2000:]
                raise Timeout(f"{self.name}: no {pattern!r} within {timeout}s; "
                              f"console ends with:\n{tail}")
            if not self._recv(min(left, 0.5)) and self.proc.poll() is not None:
                raise AssertionError(f"{self.name}: emulator exited "
                                     f"({self.proc.returncode}) waiting for {pattern!r};"
                                     f" console ends with:\n{self.buf[-2000:]}")

    def drain(self, seconds):
        """Keep reading the console for a while (never leave the emulator blocked)."""
        end = time.time() + seconds
        while time.time() < end:
            self._recv(min(0.1, max(0.01, end - time.time())))

    def drain_quiet(self, quiet=0.7, limit=30):
        """Read until nothing new arrived for `quiet` seconds (at most `limit`)."""
        end = time.time() + limit
        last_len, last_change = len(self.buf), time.time()
        while time.time() < end and time.time() - last_change < quiet:
            self._recv(0.1)
            if len(self.buf) != last_len:
                last_len, last_change = len(self.buf), time.time()

    def send(self, data, timeout=60):
        """Send bytes, reading the console meanwhile so neither side blocks."""
        if isinstance(data, str):
            data = data.encode()
        end = time.time() + timeout
        while data:
            _, w, _ = select.select([], [self.sock], [], 0.5)
            if w:
                try:
                    n = self.sock.send(data[:4096], socket.MSG_DONTWAIT)
                except (BlockingIOError, socket.timeout):
                    n = 0
                data = data[n:]
            self._recv(0)
            if time.time() > end:
                raise Timeout(f"{self.name}: console input not accepted within {timeout}s")

    def cmd(self, line, timeout=30):
        """Run one shell command; return its output (without echo and prompt)."""
        self.send(line + "\r")
        start = self.pos
        self.expect(re.escape(line) + r"\n", timeout)
        body_start = self.pos
        self.expect(re.escape(PROMPT), timeout)
        out = self.buf[body_start:self.pos - len(PROMPT)]
        del start
        return out


def boot(name, **kw):
    return Machine(name, **kw).start()


def make(*args, timeout=300, **kw):
    """`make ARGS` in the tree, one at a time across the test workers
    (`make integration` runs two): two makes that both find an object out
    of date (a tree edited since the last build) would write it, and link
    ferry.elf, at once.  Not the jobserver of a `make test` above us: its
    pipe is not inherited."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, ".make.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(["make", "-s", "-C", ROOT] + list(args), check=True,
                              timeout=timeout, env=env, stdout=subprocess.DEVNULL, **kw)
