# SPDX-License-Identifier: BSD-2-Clause
"""Issue 17: ferry's NIC drivers other than the e1000, as an operator uses
them: the 82574L (QEMU e1000e) and virtio-net (virtio 1.x, modern only), in
a network namespace with a bridge and Linux as the peer (needs root).
One boot per NIC kind does ping and nettest both ways; one migration per
NIC kind moves a test guest between two ferry hosts on that NIC; one
machine with three NICs checks the nic= choice.  Emulator runs are few on
purpose: each costs time."""

import os
import re
import subprocess
import sys

import pytest

import test_migrate
from ferry_harness import ISO, Machine, PROMPT
from hostkeys import IsoMaker
from netns import BRIDGE_IP, NetNS, qemu_nic
from test_boot_shell import make_iso
from test_vm import wait_console

HERE = os.path.dirname(__file__)
PEER = ["/usr/bin/python3", os.path.join(HERE, "netpeer.py")]
DRIVER = {"e1000e": "e1000e \\(82574L\\)", "virtio-net": "virtio-net \\(virtio 1.x\\)"}
MB = 16

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def peer(ns, *args):
    return subprocess.Popen(["ip", "netns", "exec", ns.name] + PEER + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def boot(ns, name, model, mac, iso=ISO):
    tap = ns.add_tap()
    return Machine(name, kind="qemu", cpus=2, mem=256, iso=iso,
                   extra=qemu_nic(tap, mac, model), netns=ns.name).start()


@pytest.mark.parametrize("model", ["e1000e", "virtio-net"])
def test_ping_and_nettest(model):
    """ping both ways, then nettest MB MiB from Linux to ferry and back,
    checked by length and CRC; `net` names the driver and its offloads."""
    with NetNS() as ns:
        m = boot(ns, f"nics-{model}", model, "52:54:00:12:17:02")
        try:
            net = m.cmd("net")
            assert re.search(rf"nic:\s+{DRIVER[model]} at pci:00:03\.0, "
                             r"MAC 52:54:00:12:17:02, link up", net), net
            assert "other:" not in net, net
            assert "ipv4 address" in m.cmd("net ip 10.200.0.2/24", timeout=60)
            out = m.cmd(f"ping {BRIDGE_IP} 3", timeout=30)
            assert "3 packets transmitted, 3 received, 0% packet loss" in out, out
            r = ns.ex("ping", "-c", "3", "-W", "2", "10.200.0.2", check=False)
            assert " 0% packet loss" in r.stdout, r.stdout

            m.send("nettest listen 5001\r")
            m.expect("listening on port 5001")
            p = peer(ns, "send", "10.200.0.2", 5001, MB << 20)
            out, _ = p.communicate(timeout=600)
            sent = re.search(r"sent (\d+) crc32 ([0-9a-f]{8})", out)
            assert sent, out
            got = m.expect(r"nettest: received (\d+) bytes in [\d.]+ s: [\d.]+ MB/s, "
                           r"crc32 ([0-9a-f]{8})", timeout=300)
            assert got.groups() == sent.groups()
            m.send(b"\x03")
            m.expect("nettest: stopped")
            m.expect(PROMPT)

            p = peer(ns, "recv", 5002, 600)
            assert p.stdout.readline().strip() == "listening"
            out = m.cmd(f"nettest send {BRIDGE_IP} 5002 {MB}", timeout=600)
            sent = re.search(r"sent (\d+) bytes .* crc32 ([0-9a-f]{8})", out)
            assert sent, out
            res, _ = p.communicate(timeout=120)
            got = re.search(r"received (\d+) crc32 ([0-9a-f]{8})", res)
            assert got and got.groups() == sent.groups(), res

            net = m.cmd("net")
            # QEMU offers both offloads on a tap, and ferry uses each: the
            # NIC sums single frames (the ACKs of the transfer in) and cuts
            # the MB MiB sent into segments
            tso = re.search(r"tx checksum on \((\d+) frames\), TSO on \((\d+) frames\)", net)
            assert tso and int(tso.group(1)) > 0 and int(tso.group(2)) > 0, net
            assert "values from the NIC refused" not in net, net
        finally:
            m.close()


def test_a_flooding_guest_leaves_ferry_its_share():
    """A test guest sends full-sized frames to the wire as fast as its
    virtio-net takes them (testguest `netflood`) while ferry itself sends
    MB MiB to Linux with nettest, over a virtio-net host NIC, whose frames
    QEMU sends later from its main loop, so that its ring can fill.  The
    guest's frames for the wire wait for room beyond the quarter of the
    ring kept for ferry's own (hv/gnet.c): ferry's transfer arrives whole
    with none of its frames dropped for a full ring, none of the guest's
    is dropped either, and the guest goes on sending after it."""
    with NetNS() as ns:
        m = boot(ns, "nics-flood", "virtio-net", "52:54:00:12:17:05")
        try:
            assert "ipv4 address" in m.cmd("net ip 10.200.0.2/24", timeout=60)
            out = m.cmd('create fl kernel=testguest mem=16 nic=on cmdline="netflood secs=20"')
            assert "created fl" in out, out
            m.cmd("start fl")
            wait_console(m, "fl", r"TG flood sent=[1-9]\d*", timeout=120)
            p = peer(ns, "recv", 5002, 600)
            assert p.stdout.readline().strip() == "listening"
            out = m.cmd(f"nettest send {BRIDGE_IP} 5002 {MB}", timeout=600)
            sent = re.search(r"sent (\d+) bytes .* crc32 ([0-9a-f]{8})", out)
            assert sent, out
            print(out)
            res, _ = p.communicate(timeout=120)
            got = re.search(r"received (\d+) crc32 ([0-9a-f]{8})", res)
            assert got and got.groups() == sent.groups(), res
            _, text = wait_console(m, "fl", r"TG flood sent=\d+", timeout=60)
            # still flooding after ferry's transfer: it overlapped all of it
            assert "TG flood done" not in text, text[-2000:]
            during = max(int(n) for n in re.findall(r"TG flood sent=(\d+)", text))
            done, text = wait_console(m, "fl", r"TG flood done sent=(\d+)", timeout=180)
            assert int(done.group(1)) > during, text[-2000:]    # it never stopped for good
            net = m.cmd("net")
            print(net)
            assert re.search(r"switch: .*; 0 frames for the wire dropped \(ring full\)", net), net
            # none of ferry's own segments was lost (ring-full counts its
            # own TSO frames the NIC could not take yet: they went later)
            assert re.search(r"^tcp: .*, 0 retransmits", net, re.M), net
            guest = net[net.index("guest: fl"):]
            assert "the wire took none" not in guest, guest
            # its frames went (to no one's MAC: the bridge floods them)
            assert int(re.search(r"from guest (\d+) frames", guest).group(1)) >= during, guest
        finally:
            m.close()


@pytest.fixture(params=["e1000e", "virtio-net"])
def mignet(request, tmp_path, monkeypatch):
    """Two ferry hosts (test_migrate's) whose NIC is this model."""
    model = request.param
    monkeypatch.setattr(test_migrate, "qemu_nic",
                        lambda tap, mac: qemu_nic(tap, mac, model))
    with NetNS(f"fnic{os.getpid()}") as ns:
        n = test_migrate.MigNet(ns, IsoMaker(tmp_path), prefix="nics")    # hosts with keys
        try:
            n.a = n.add("qemu", f"{model}-A")
            n.b = n.add("qemu", f"{model}-B")
            for h in (n.a, n.b):
                test_migrate.tidy(h)
            n.model = model
            yield n
        finally:
            for h in n.hosts:
                h.shut()


def test_migration(mignet):
    """A dirtying test guest goes A -> B over the NIC and keeps running
    there, its pages checked from inside."""
    a, b = mignet.a, mignet.b
    assert re.search(rf"nic:\s+{DRIVER[mignet.model]}", a.cmd("net"))
    test_migrate.create(a, "nicmig", "dirty")
    p = test_migrate.progress(a, "nicmig", "dirty")
    r = test_migrate.migrate_ok(a, "nicmig", b)
    assert r.mem == 16 << 20, r.line_out
    assert "nicmig" not in test_migrate.guests(a)
    assert test_migrate.is_running(test_migrate.state(b, "nicmig"))
    test_migrate.progress(b, "nicmig", "dirty", above=p)


NICS = [("e1000", "52:54:00:12:17:13", 3), ("e1000e", "52:54:00:12:17:14", 4),
        ("virtio-net", "52:54:00:12:17:15", 5)]
FOUND = {"e1000": "e1000", "e1000e": "e1000e", "virtio-net": "virtio-net"}


def three_nics(ns):
    extra = []
    for i, (model, mac, slot) in enumerate(NICS):
        extra += qemu_nic(ns.add_tap(), mac, model, netdev=f"n{i}", addr=slot)
    return extra


@pytest.mark.parametrize("choice,model", [("pci:00:05.0", "virtio-net"),
                                          ("52:54:00:12:17:14", "e1000e"),
                                          ("", "e1000")])
def test_nic_option_chooses(tmp_path, choice, model):
    """Three NICs: nic= by PCI address or MAC (none: the first) picks one,
    which works; `net` lists the two others with their address and MAC."""
    iso = make_iso(tmp_path, cmdline=f"nic={choice}" if choice else "")
    with NetNS() as ns:
        m = Machine(f"nics-choose-{model}", kind="qemu", cpus=2, mem=256, iso=iso,
                    extra=three_nics(ns), netns=ns.name).start()
        try:
            net = m.cmd("net")
            _, mac, slot = next(n for n in NICS if n[0] == model)
            assert re.search(rf"nic:\s+{re.escape(model)} \(.*\) at pci:00:0{slot}\.0, MAC {mac}",
                             net), net
            others = re.findall(r"other:\s+(\S+) at pci:00:0(\d)\.0, MAC (\S+)", net)
            assert sorted(others) == sorted((FOUND[k], str(s), mc) for k, mc, s in NICS
                                            if k != model), net
            assert "ipv4 address" in m.cmd("net ip 10.200.0.2/24", timeout=60)
            out = m.cmd(f"ping {BRIDGE_IP} 2", timeout=30)
            assert "2 received, 0% packet loss" in out, out
        finally:
            m.close()


def test_nic_option_matching_nothing(tmp_path):
    """nic= naming no card leaves networking off and says what there is."""
    iso = make_iso(tmp_path, cmdline="nic=pci:00:09.0")
    with NetNS() as ns:
        m = Machine("nics-choose-none", kind="qemu", cpus=2, mem=256, iso=iso,
                    extra=three_nics(ns), netns=ns.name).start()
        try:
            net = m.cmd("net")
            assert "nic:   none in use (wanted: pci:00:09.0" in net, net
            assert len(re.findall(r"other:\s+\S+ at pci:00:0[345]\.0", net)) == 3, net
            assert "none is pci:00:09.0" in m.cmd("log")
            assert "error: ping: no network interface" in m.cmd(f"ping {BRIDGE_IP} 1")
        finally:
            m.close()
