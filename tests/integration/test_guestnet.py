# SPDX-License-Identifier: BSD-2-Clause
"""Issue 14: guests on the network.  Debian's kernel in a guest with
`nic=on` (virtio-net on PCI) reaches the Linux peer in the test namespace
through ferry's switch and the host's e1000: ping, TCP each way with
checksums at both ends, ferry's own address only with `net mgmt`, a
spoofed source MAC dropped and counted; and a live migration between two
ferry hosts that a TCP connection from the peer survives."""

import os
import re
import signal
import subprocess
import time

import pytest

from ferry_harness import Machine, PROMPT
from netns import BRIDGE_IP, ping_losses, qemu_nic
from test_linux import CMDLINE, SHELL, linux_iso, talk  # noqa: F401 (fixture)
from test_net import ns  # noqa: F401 (fixture)

HERE = os.path.dirname(__file__)
PY = "/usr/bin/python3"
GUEST_MAC = "52:54:00:aa:00:01"
GUEST_IP = "10.200.0.50"
MB = 32             # each way, as a user's file would be

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.fixture
def hosts(ns, linux_iso, request):
    started = []

    def start():
        i = len(started)
        tap = ns.add_tap()
        name = request.node.name + f"-{i}"
        m = Machine(name, kind="qemu", cpus=2, mem=768, iso=linux_iso,
                    extra=qemu_nic(tap, f"52:54:00:12:00:{i + 2:02x}"), netns=ns.name).start()
        started.append(m)
        m.ip = f"10.200.0.{i + 2}"
        assert "ipv4 address" in m.cmd(f"net ip {m.ip}/24", timeout=60)
        return m

    yield start
    for m in started:
        m.close()


def peer(ns, script, *args):
    return subprocess.Popen(["ip", "netns", "exec", ns.name, PY, os.path.join(HERE, script)] +
                            [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def attach(m, name="lx"):
    m.send(f"console {name}\r")
    m.expect(r"escape character is \^\]\)", timeout=30)
    m.drain_quiet(1, 10)            # the console's history comes first
    m.pos = len(m.buf)
    m.send("\r")
    m.expect(SHELL, timeout=30)


def detach(m, name="lx"):
    m.send(b"\x1d")
    m.expect(f"Disconnected from {name}", timeout=30)
    m.expect(PROMPT, timeout=30)


def boot_guest(m, name="lx", mac=GUEST_MAC, ip=GUEST_IP, mem=256):
    out = m.cmd(f'create {name} kernel=vmlinuz initrd=initrd mem={mem} nic=on mac={mac} '
                f'cmdline="{CMDLINE}"')
    assert "error" not in out, out
    m.cmd(f"start {name}")
    m.send(f"console {name}\r")
    m.expect(r"escape character is \^\]\)", timeout=30)
    m.expect("FERRY-LINUX: init ready", timeout=240)
    m.expect(SHELL, timeout=60)
    addr = talk(m, f"ip addr add {ip}/24 dev eth0; ip link set eth0 up; sleep 2; "
                   "cat /sys/class/net/eth0/address /sys/class/net/eth0/operstate")
    assert mac in addr and "up" in addr, addr


def received(text):
    r = re.search(r"(\d+) packets transmitted, (\d+) packets received", text)
    assert r, text
    return int(r.group(2))


def md5_of(text):
    return re.search(r"^([0-9a-f]{32})\s", text, re.M).group(1)


def tso_frames(net):
    """The TSO frames ferry's NIC has sent, from `net`."""
    t = re.search(r"TSO on \((\d+) frames\)", net)
    assert t, net
    return int(t.group(1))


def test_linux_guest_on_the_wire(ns, hosts):
    m = hosts()
    for bad in ("01:00:5e:00:00:01", "00:00:00:00:00:00", "52:54:00:zz:00:01"):
        out = m.cmd(f"create bad kernel=vmlinuz initrd=initrd mem=64 nic=on mac={bad}")
        assert re.search(r"error: create: mac=.*unicast", out), out
    boot_guest(m)
    # Linux found the NIC where ferry put it, as lspci would show it: the
    # host bridge at 00:00.0 and virtio-net (modern, 1af4:1041) at 00:01.0,
    # bound to virtio-pci
    pci = talk(m, "cd /sys/bus/pci/devices; for d in *; do drv=$(readlink $d/driver); "
                  "echo PCI $d $(cat $d/vendor) $(cat $d/device) ${drv##*/}; done; cd /")
    assert re.search(r"^PCI 0000:00:00\.0 0x1b36 0x0008\s*$", pci, re.M), pci
    assert re.search(r"^PCI 0000:00:01\.0 0x1af4 0x1041 virtio-pci$", pci, re.M), pci
    assert received(talk(m, f"ping -c 3 -W 3 {BRIDGE_IP}", timeout=60)) == 3
    # the operator pulls the guest's cable: its driver sees the carrier go
    # and nothing passes either way, until it is plugged back
    detach(m)
    assert "guest lx: link down" in m.cmd("net link lx down")
    assert "error: net: usage" in m.cmd("net link lx sideways")
    assert "error: net: no guest named 'nope'" in m.cmd("net link nope up")
    r = ns.ex("ping", "-c", "2", "-W", "1", GUEST_IP, check=False)
    assert " 100% packet loss" in r.stdout, r.stdout
    info = m.cmd("info lx")
    assert re.search(r"nic:\s+virtio-net \S+, status \S+, link down", info), info
    d = re.search(r"nic drop:\s+(\d+) rx while the link is down", info)
    assert d and int(d.group(1)) >= 1, info
    attach(m)
    out = talk(m, f"cat /sys/class/net/eth0/carrier; ping -c 2 -W 1 {BRIDGE_IP}", timeout=60)
    assert re.search(r"^0$", out, re.M) and received(out) == 0, out
    detach(m)
    assert "guest lx: link up" in m.cmd("net link lx up")
    attach(m)
    out = talk(m, f"sleep 1; cat /sys/class/net/eth0/carrier; ping -c 3 -W 3 {BRIDGE_IP}",
               timeout=60)
    assert re.search(r"^1$", out, re.M) and received(out) >= 2, out
    # ferry's own address: only with `net mgmt lx on`
    assert received(talk(m, f"ping -c 2 -W 1 {m.ip}", timeout=60)) == 0
    detach(m)
    assert "reachable" in m.cmd("net mgmt lx on")
    attach(m)
    # (the first may go while the guest's neighbour entry for ferry, failed
    # while management was off, resolves again)
    assert received(talk(m, f"ping -c 4 -W 3 {m.ip}", timeout=60)) >= 3
    # the peer reaches the guest by itself
    r = ns.ex("ping", "-c", "3", "-W", "3", GUEST_IP, check=False)
    if " 0% packet loss" not in r.stdout:
        detach(m)
        pytest.fail(r.stdout + m.cmd("net") + m.cmd("info lx") +
                    ns.ex("ip", "neigh").stdout + ns.ex("bridge", "fdb", "show").stdout)
    # TCP, the peer to the guest: checksums at both ends
    listening = talk(m, "(nc -l -p 5001 > /tmp/in < /dev/null &); sleep 1; netstat -ltn")
    assert re.search(r":5001\s", listening), listening
    p = peer(ns, "netpeer.py", "send", GUEST_IP, 5001, MB << 20)
    sent = p.communicate(timeout=600)[0]
    s = re.search(r"sent (\d+) .* md5 ([0-9a-f]{32})", sent)
    assert s and int(s.group(1)) == MB << 20, sent
    # (nc half-closes at once, its stdin being empty: the peer is done
    # before the guest has read everything, so wait for nc to end)
    got = talk(m, "i=0; while pidof nc >/dev/null && [ $i -lt 300 ]; do sleep 1; i=$((i+1)); "
                  "done; wc -c < /tmp/in; md5sum /tmp/in", timeout=400)
    assert re.search(rf"^{MB << 20}$", got, re.M) and md5_of(got) == s.group(2), got
    # ... and the guest to the peer, its super-frames handed to ferry's NIC
    # as TSO frames (hv/gnet.c), not cut into 1448-byte segments first
    detach(m)
    tso0 = tso_frames(m.cmd("net"))
    attach(m)
    p = peer(ns, "netpeer.py", "recv", 5002, 600)
    assert p.stdout.readline().strip() == "listening"
    # (tmpfs has half the guest's 256 MiB: the file that came in goes first)
    mine = md5_of(talk(m, f"rm /tmp/in; dd if=/dev/urandom of=/tmp/out bs=1M count={MB} 2>/dev/null; "
                          f"md5sum /tmp/out; nc {BRIDGE_IP} 5002 -e cat /tmp/out", timeout=600))
    got = p.communicate(timeout=120)[0]
    r = re.search(r"received (\d+) .* md5 ([0-9a-f]{32})", got)
    assert r and int(r.group(1)) == MB << 20 and r.group(2) == mine, got
    # the stock driver took the NIC's MSI-X vectors and its send offloads
    irqs = talk(m, "grep virtio /proc/interrupts")
    assert re.search(r"PCI-MSI.*virtio\d+-output", irqs), irqs
    assert not re.search(r"IO-APIC.*virtio", irqs), irqs
    detach(m)
    assert tso_frames(m.cmd("net")) - tso0 > (MB << 20) // 32768 // 2
    info = m.cmd("info lx")
    o = re.search(r"offloads: (\d+) checksummed, (\d+) TSO", info)
    assert o and int(o.group(2)) > 0 and int(o.group(1)) >= int(o.group(2)), info
    # ... and the peer's segments joined into super-frames (GUEST_TSO4):
    # most of the MB MiB went in that way, each checked by ferry first
    j = re.search(r"(\d+) joined into (\d+) TSO", info)
    assert j and int(j.group(1)) * 1448 > (MB << 20) // 2 and int(j.group(1)) > 4 * int(j.group(2)), info
    attach(m)
    # another MAC from the guest: dropped at its port, never on the wire
    spoof = "52:54:00:aa:00:99"
    out = talk(m, f"ip link set eth0 down; ip link set eth0 address {spoof}; "
                  f"ip link set eth0 up; sleep 1; ping -c 2 -W 1 {BRIDGE_IP}", timeout=60)
    assert received(out) == 0, out
    detach(m)
    info = m.cmd("info lx")
    assert re.search(rf"nic:\s+virtio-net {GUEST_MAC}", info), info
    d = re.search(r"dropped (\d+): spoofed source", info)
    assert d and int(d.group(1)) >= 2, info
    assert spoof not in ns.ex("bridge", "fdb", "show").stdout
    net = m.cmd("net")
    g = re.search(rf"guest: lx, MAC {GUEST_MAC}\s+from guest (\d+) frames, (\d+) bytes; "
                  rf"to guest (\d+) frames, (\d+) bytes; management on", net)
    assert g, net
    assert int(g.group(2)) > MB << 20 and int(g.group(4)) > MB << 20, net
    m.cmd("destroy lx")
    assert "guest: lx" not in m.cmd("net")


def test_two_guests_talk_and_one_cannot_pose_as_the_other(ns, hosts):
    """Two Linux guests on one host reach each other through the switch
    (ping, TCP with checksums at both ends); one that takes the other's MAC
    gets nothing through, and the other's traffic goes on."""
    m = hosts()
    y_mac, y_ip = "52:54:00:aa:00:02", "10.200.0.51"
    boot_guest(m, mem=160)
    talk(m, "(nc -l -p 5004 > /tmp/in < /dev/null &); sleep 1")
    detach(m)
    boot_guest(m, "ly", y_mac, y_ip, mem=160)
    assert received(talk(m, f"ping -c 3 -W 3 {GUEST_IP}", timeout=60)) == 3
    mine = md5_of(talk(m, "dd if=/dev/urandom of=/tmp/out bs=1M count=4 2>/dev/null; "
                          f"md5sum /tmp/out; nc {GUEST_IP} 5004 -e cat /tmp/out", timeout=300))
    # ly takes lx's MAC: its frames stop at its port
    out = talk(m, f"ip link set eth0 down; ip link set eth0 address {GUEST_MAC}; "
                  f"ip link set eth0 up; sleep 1; ping -c 2 -W 1 {BRIDGE_IP}", timeout=60)
    assert received(out) == 0, out
    detach(m, "ly")
    attach(m, "lx")
    got = talk(m, "i=0; while pidof nc >/dev/null && [ $i -lt 120 ]; do sleep 1; i=$((i+1)); "
                  "done; wc -c < /tmp/in; md5sum /tmp/in", timeout=200)
    assert re.search(rf"^{4 << 20}$", got, re.M) and md5_of(got) == mine, got
    # lx, whose MAC ly tried, still reaches the peer
    assert received(talk(m, f"ping -c 2 -W 3 {BRIDGE_IP}", timeout=60)) == 2
    detach(m)
    d = re.search(r"dropped (\d+): spoofed source", m.cmd("info ly"))
    assert d and int(d.group(1)) >= 2
    # ly's TCP segments reached lx with checksums ferry completed, so
    # marked DATA_VALID or joined into super-frames (QEMU's e1000 checks
    # none on the wire's frames)
    info = m.cmd("info lx")
    v = re.search(r"nic rx: +\d+ frames, \d+ bytes; (\d+) with checksums known good, "
                  r"(\d+) joined", info)
    assert v and int(v.group(1)) + int(v.group(2)) >= (4 << 20) // 1500, info
    for g in ("lx", "ly"):
        m.cmd(f"destroy {g}")


BLOCK = 1000003     # bytes the guest sends over and over: no window divides it
RATE = 1 << 40      # the peer's stream: as fast as TCP takes it
MOVED_WITHIN = 300  # s for a stream to end once it is told to


def nic_frames(m, name="lx"):
    """(received, sent) frames of guest name's NIC, from `info`."""
    info = m.cmd(f"info {name}")
    rx = re.search(r"^nic rx:\s+(\d+) frames", info, re.M)
    tx = re.search(r"^nic tx:\s+(\d+) frames", info, re.M)
    assert rx and tx, info
    return int(rx.group(1)), int(tx.group(1))


def ended(proc, what, b, report):
    """A transfer's report (the match of `report` in what it printed), or,
    if it has not ended within MOVED_WITHIN seconds, a failure with
    what it printed and what the destination, its NIC and the guest there
    saw."""
    try:
        text = proc.communicate(timeout=MOVED_WITHIN)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        text = f"(still running after {MOVED_WITHIN} s) " + (proc.communicate()[0] or "")
    m = re.search(report, text)
    if m:
        return m
    seen = [text] + [b.cmd(c, timeout=60) for c in ("info lx", "stats", "net")]
    try:
        attach(b)
        seen.append(talk(b, "cat /proc/interrupts /proc/net/snmp; netstat -tn; "
                            "dmesg | tail -20", timeout=60))
    except Exception as e:      # a guest that no longer answers says so too
        seen.append(f"the guest's shell did not answer: {e}")
    pytest.fail(f"{what}: no report after the move\n" + "\n".join(seen))


def test_linux_guest_migrates_keeping_its_tcp_connection(ns, hosts):
    """An echo connection, a bulk transfer each way at full speed and a
    ping, all running while the guest moves and stopped only after it: no
    byte lost, doubled or changed, and the ping loses at most what the
    downtime explains."""
    t0 = time.time()
    a, b = hosts(), hosts()
    # the channel is test_trust.py's subject: these hosts have no keys
    assert "listening on port" in b.cmd("migrate listen insecure")
    boot_guest(a)
    talk(a, "(nc -l -p 5003 -e cat < /dev/null &)")
    # the guest's outgoing stream: one random block over and over until
    # /tmp/stop, the blocks counted; the peer checks that each is the first
    mine = md5_of(talk(a, f"dd if=/dev/urandom of=/tmp/out bs={BLOCK} count=1 2>/dev/null; "
                          "echo 'n=0; while [ ! -e /tmp/stop ]; do cat /tmp/out; n=$((n+1)); "
                          "echo $n > /tmp/n; done' > /tmp/send.sh; md5sum /tmp/out"))
    talk(a, "(nc -l -p 5004 < /dev/null | md5sum > /tmp/sum_in &)")
    time.sleep(1)
    p = peer(ns, "guestpeer.py", GUEST_IP, 5003, 0)    # until SIGTERM: across the move
    assert p.stdout.readline().strip() == "echo connected"
    into = peer(ns, "netpeer.py", "pace", GUEST_IP, 5004, RATE)     # until SIGTERM
    assert into.stdout.readline().strip() == "connected"
    out = peer(ns, "netpeer.py", "blocks", 5005, BLOCK, MOVED_WITHIN)
    assert out.stdout.readline().strip() == "listening"
    talk(a, f"(nc {BRIDGE_IP} 5005 -e sh /tmp/send.sh &)")
    # runs until the move is done (SIGINT then: it prints its summary), so
    # that its window always holds the move, however long that takes
    pings = ns.ping(GUEST_IP, 0.1)
    detach(a)
    time.sleep(3)
    a.send(f"migrate lx {b.ip} insecure\r")
    r = a.expect(r"migrate lx: (done|failed|in doubt)[^\n]*\n|error: migrate: [^\n]*\n", timeout=600)
    assert r.group(1) == "done", r.group(0)
    downtime = float(re.search(r"downtime ([\d.]+) ms", r.group(0)).group(1))
    a.expect(PROMPT, timeout=60)
    time.sleep(2)               # the announce, and some pings after it
    pings.stop()
    # every connection was open across the move: their ends come from B
    for proc in (p, into, out):
        assert proc.poll() is None, proc.communicate()[0]
    print(f"moved {time.time() - t0:.0f} s after the test began")
    # both streams go on at B for a while, through the NIC as it arrived
    before = nic_frames(b)
    time.sleep(5)
    after = nic_frames(b)
    assert all(n1 - n0 >= 200 for n0, n1 in zip(before, after)), (before, after)
    attach(b)
    talk(b, "touch /tmp/stop")
    detach(b)           # (at the prompt: ended()'s diagnostics are ferry commands)
    into.send_signal(signal.SIGTERM)
    s = ended(into, "the peer's stream to the guest", b, r"sent (\d+) .* md5 ([0-9a-f]{32})")
    g = ended(out, "the guest's stream to the peer", b,
              r"received (\d+) bytes(, (\d+) blocks alike, md5 of one ([0-9a-f]{32})|: .*)")
    assert g.group(2) and g.group(4) == mine, g.group(0)
    attach(b)
    sent = talk(b, "cat /tmp/n", timeout=60)
    assert re.search(rf"^{g.group(3)}\s*$", sent, re.M), (sent, g.group(0))
    print(f"both streams ended {time.time() - t0:.0f} s after the test began: "
          f"{s.group(1)} bytes in, {g.group(1)} out")
    inside = talk(b, "i=0; while [ ! -s /tmp/sum_in ] && [ $i -lt 120 ]; do sleep 1; "
                     "i=$((i+1)); done; cat /tmp/sum_in", timeout=200)
    assert md5_of(inside) == s.group(2), inside
    assert received(talk(b, f"ping -c 3 -W 3 {BRIDGE_IP}", timeout=60)) == 3
    detach(b)
    ping = pings.summary(timeout=120)
    lost, sent = ping_losses(ping, 0.1)
    print(f"ping every 100 ms: {lost} of {sent} lost; downtime {downtime} ms")
    # the downtime, the announce's way to the bridge, and one either side
    assert lost <= 2 + downtime / 100 + 3, ping
    assert not re.search(r"^lx\s", a.cmd("list"), re.M)
    info = b.cmd("info lx")
    assert re.search(rf"nic:\s+virtio-net {GUEST_MAC}", info), info
    assert re.search(r"announced [1-5] times \(RARP\)", info), info
    p.send_signal(signal.SIGTERM)
    echoed = p.communicate(timeout=400)[0]
    assert re.search(r"echoed \d+ bytes intact", echoed), echoed
