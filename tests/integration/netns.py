# SPDX-License-Identifier: BSD-2-Clause
"""A private network namespace with a Linux bridge and tap devices, so that
emulators and Linux talk over a real (virtual) Ethernet.  Only addresses in
10.200.0.0/24 inside the namespace are used."""

import math
import os
import re
import signal
import subprocess
import tempfile

BRIDGE_IP = "10.200.0.1"


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)


class NetNS:
    def __init__(self, name=None):
        self.name = name or f"ferry{os.getpid()}"
        self.taps = []

    def __enter__(self):
        sh("ip", "netns", "add", self.name)
        self.ex("ip", "link", "set", "lo", "up")
        self.ex("ip", "link", "add", "br0", "type", "bridge")
        self.ex("ip", "addr", "add", f"{BRIDGE_IP}/24", "dev", "br0")
        self.ex("ip", "link", "set", "br0", "up")
        return self

    def ex(self, *args, check=True):
        return sh("ip", "netns", "exec", self.name, *args, check=check)

    def add_tap(self):
        tap = f"tap{len(self.taps)}"
        self.ex("ip", "tuntap", "add", "dev", tap, "mode", "tap")
        self.ex("ip", "link", "set", tap, "master", "br0")
        self.ex("ip", "link", "set", tap, "up")
        self.taps.append(tap)
        return tap

    def set_link(self, tap, up):
        self.ex("ip", "link", "set", tap, "up" if up else "down")

    def ping(self, ip, interval):
        """A ping from the namespace every `interval` s until its stop()."""
        return Ping(self, ip, interval)

    def __exit__(self, *exc):
        sh("ip", "netns", "del", self.name, check=False)


class Ping:
    """ping running in the background.  Its lines go to a file: a pipe
    read only at the end fills after ~1000 of them, and ping then stops
    sending, unseen (a loss count that could not fail)."""

    def __init__(self, ns, ip, interval):
        self.out = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns.name, "ping", "-i",
                                      str(interval), ip], stdout=self.out, text=True)

    def stop(self):
        """Interrupt it: it prints its summary (read it with summary())."""
        self.proc.send_signal(signal.SIGINT)

    def summary(self, timeout=60):
        """All it printed, once it has ended."""
        self.proc.wait(timeout=timeout)
        self.out.seek(0)
        return self.out.read()


def ping_losses(out, interval):
    """(lost, transmitted) of a ping stopped by SIGINT, from its output:
    the echoes not answered up to the last one answered, and of those
    after it, any beyond what the longest round trip seen could still
    have had in flight at the stop.  (The summary's own count takes those
    in flight for lost: a loaded link's round trips reach most of a
    second, so a stop right after the move counted 6 of 100 lost where
    every echo up to seq 94 had been answered, none lost at the move.)"""
    t = re.search(r"(\d+) packets transmitted", out)
    assert t, out
    sent = int(t.group(1))
    seqs = {int(s) for s in re.findall(r"icmp_seq=(\d+)", out)}
    if not seqs:
        return sent, sent
    rtt = re.search(r"= [\d.]+/[\d.]+/([\d.]+)/", out)
    in_flight = math.ceil(float(rtt.group(1)) / 1000 / interval) + 1 if rtt else 1
    last = max(seqs)        # Linux's ping counts from 1
    return (last - len(seqs)) + max(0, sent - last - in_flight), sent


# QEMU NIC models ferry drives, by the name tests use for them.
QEMU_NICS = {
    "e1000": "e1000",
    "e1000e": "e1000e",
    "virtio-net": "virtio-net-pci,disable-legacy=on",
}


def qemu_nic(tap, mac, model="e1000", netdev="n0", addr=None):
    """QEMU options for one NIC of `model` (a QEMU_NICS key) on tap; addr
    puts it in that PCI slot (00:addr.0)."""
    dev = f"{QEMU_NICS[model]},netdev={netdev},mac={mac}"
    if addr is not None:
        dev += f",addr={addr:#x}"
    return ["-netdev", f"tap,id={netdev},ifname={tap},script=no,downscript=no",
            "-device", dev]


def bochs_nic(tap, mac):
    return ["pci: enabled=1, chipset=i440fx, slot1=e1000",
            f"e1000: enabled=1, mac={mac}, ethmod=tuntap, ethdev=/dev/net/tun:{tap}"]
