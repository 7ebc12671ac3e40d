# SPDX-License-Identifier: BSD-2-Clause
"""Issue 15: the secure migration channel as an operator meets it.  Two QEMU
hosts in a network namespace, each with its own key (tools/ferry-keygen,
`module2 /boot/ferry.key ferry.key` on its ISO) and a ferry.rc that trusts
the other and listens.  A trusted migration runs sealed and both sides
name the peer and its fingerprint; an untrusted source and a destination
with the wrong key are refused with the reason on both hosts, the guest
running on at the source; `insecure` works only when both ends say it; a
host whose key file is damaged runs without secure migration."""

import os
import re
import signal
import subprocess
import time

import pytest

from ferry_harness import Machine
from hostkeys import QEMU_RDRAND, IsoMaker, keygen
from netns import NetNS, qemu_nic
from test_migrate import (LOGLINE, create, free_kib, is_running, mark, migrate, migrate_ok,
                          migrations, progress, state, wait_log)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


class TrustHost:
    """A QEMU ferry host booted from its own ISO; cmd() as in test_migrate."""

    def __init__(self, net, label, ip, pub, iso):
        self.net, self.label, self.ip, self.pub = net, label, ip, pub
        self.kind = "qemu"
        tap = net.add_tap()
        self.m = Machine(f"trust-{label}", kind="qemu", cpus=2, mem=256, iso=iso,
                         extra=qemu_nic(tap, f"52:54:00:15:00:{ord(label):02x}") + QEMU_RDRAND,
                         netns=net.name)
        self.m.start(boot_timeout=180)
        self.m.slow = 1

    def alive(self):
        return self.m.proc.poll() is None

    def cmd(self, line, timeout=30):
        from test_migrate import shell
        return shell(self.m, line, timeout)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trust")
    isos = IsoMaker(tmp)
    ip = {"A": "10.200.0.2", "B": "10.200.0.3"}
    pub = {h: keygen(str(tmp / f"key{h}")) for h in ip}
    pub["C"] = keygen(str(tmp / "keyC"))        # a third key no host has
    made = {}
    for h, other in (("A", "B"), ("B", "A")):
        rc = tmp / f"ferry-{h}.rc"
        rc.write_text(f"net ip {ip[h]}/24\n"
                      f"migrate trust {other.lower()} {pub[other]} {ip[other]}\n"
                      "migrate listen\n")
        made[h] = isos.iso(f"trust-{h}", key=str(tmp / f"key{h}" / "ferry.key"), script=str(rc))
    with NetNS(f"ftru{os.getpid()}") as ns:
        started = []
        try:
            for h in ("A", "B"):
                started.append(TrustHost(ns, h, ip[h], pub[h], made[h]))
            a, b = started
            a.ns = ns
            a.pub_c = pub["C"]
            a.isos, a.tmp = isos, tmp
            yield a, b
        finally:
            for h in started:
                h.m.close()


def boot_log(m):
    """What a machine printed before its first prompt."""
    return m.buf[:m.buf.find("ferry> ")]


def test_keys_and_trust_from_ferry_rc(hosts):
    """The key from the module, the trust line from ferry.rc; bad input
    says error and changes nothing."""
    a, b = hosts
    assert re.search(r"migrate: host key SHA256:[0-9a-f]{16} \(ferry.key\), ephemeral keys "
                     r"from RDRAND", boot_log(a.m)), boot_log(a.m)
    out = a.cmd("migrate key")
    assert f"public key: {a.pub}" in out, out
    fp = re.search(r"fingerprint (SHA256:[0-9a-f]{16})", out).group(1)
    listed = b.cmd("migrate trusted")
    assert re.search(rf"^a\s+{fp}\s+10\.200\.0\.2\s+{a.pub}$", listed, re.M), listed
    for bad, why in ((f"migrate trust c {a.pub[:-1]}", "64 hex digits"),
                     (f"migrate trust c {'z' * 64}", "hex digits only"),
                     (f"migrate trust c {a.pub}", "that key is trusted as 'a'"),
                     (f"migrate trust c {'1' * 64} 10.200.0.2", "that address"),
                     ("migrate trust 10.0.0.5 " + "1" * 64, "bad peer name"),
                     ("migrate untrust nobody", "no trusted peer named 'nobody'")):
        out = b.cmd(bad)
        assert out.startswith("error: migrate: ") and why in out, (bad, out)
    assert b.cmd("migrate trusted") == listed


def test_trusted_migration_is_sealed(hosts):
    """A -> B by the peer's name and back by address: both sides show the
    peer's name and fingerprint, in progress lines and `migrations`."""
    a, b = hosts
    create(a, "tg", "dirty")
    p = progress(a, "tg", "dirty")
    since = mark(b)
    r = migrate(a, "tg", b, host="b")
    assert r.what == "done", r.line_out
    assert re.search(r"migrate tg: to 10\.200\.0\.3:7447, id [0-9a-f]{16}, 16 MiB, peer b "
                     r"SHA256:[0-9a-f]{16} \(sealed, handshake [\d.]+ ms\)", r.text), r.text
    wait_log(b, r"migrate in: 10\.200\.0\.2 proved the key of 'a' \(SHA256:[0-9a-f]{16}\)", since)
    wait_log(b, r"migrate in tg from 10\.200\.0\.2: id [0-9a-f]{16}, 16 MiB, peer a "
             r"SHA256:[0-9a-f]{16} \(sealed\)", since)
    p = progress(b, "tg", "dirty", above=p)
    assert re.search(r"done\s+.*\s+b,SHA256:[0-9a-f]{16}", a.cmd("migrations")), a.cmd("migrations")
    assert re.search(r"done\s+.*\s+a,SHA256:[0-9a-f]{16}", b.cmd("migrations"))
    migrate_ok(b, "tg", a)
    progress(a, "tg", "dirty", above=p)


def refused(a, b, since, src_words, dst_words):
    r = migrate(a, "tg", b, timeout=60)
    assert r.what == "error", r.line_out
    assert re.search(src_words, r.rest), r.line_out
    wait_log(b, r"error: migrate: refused incoming from 10\.200\.0\.2: .*" + dst_words, since)
    assert is_running(state(a, "tg")), state(a, "tg")
    assert "tg" not in b.cmd("list")
    return r


def test_untrusted_source_and_wrong_key_refused(hosts):
    """B forgets A: refused, both say why.  A pins another key for B:
    refused as the wrong key.  The guest runs on at A throughout."""
    a, b = hosts
    if "tg" not in a.cmd("list"):
        create(a, "tg", "dirty")
    p = progress(a, "tg", "dirty")
    assert "no longer trusting 'a'" in b.cmd("migrate untrust a")
    refused(a, b, mark(b), r"refused: not trusted: source key SHA256:", r"not trusted")
    assert "trusting 'a'" in b.cmd(f"migrate trust a {a.pub} 10.200.0.2")
    a.cmd("migrate untrust b")
    assert "trusting 'b'" in a.cmd(f"migrate trust b {a.pub_c} 10.200.0.3")
    refused(a, b, mark(b), r"refused: wrong key: source pinned SHA256:", r"wrong key")
    a.cmd("migrate untrust b")
    assert "trusting 'b'" in a.cmd(f"migrate trust b {b.pub} 10.200.0.3")
    rows = [x for x in migrations(b) if x["outcome"] == "refused"]
    assert len(rows) >= 2, b.cmd("migrations")
    progress(a, "tg", "dirty", above=p)


def test_insecure_needs_both_ends(hosts):
    """insecure on one end only is refused either way; on both it works
    and warns on both hosts."""
    a, b = hosts
    if "tg" not in a.cmd("list"):
        create(a, "tg", "dirty")
    p = progress(a, "tg", "dirty")
    since = mark(b)
    r = migrate(a, "tg", b, "insecure", timeout=60)
    assert r.what == "error" and "secure channel only" in r.rest, r.line_out
    wait_log(b, r"error: migrate: refused incoming from 10\.200\.0\.2: source speaks plaintext",
             since)
    out = b.cmd("migrate listen insecure")     # the same port: the listener stays
    assert "insecure" in out and "warning: migrate: insecure listener" in out, out
    since = mark(b)
    r = migrate(a, "tg", b, timeout=60)
    assert r.what == "error" and "refused: listener is insecure" in r.rest, r.line_out
    assert is_running(state(a, "tg"))
    r = migrate_ok(a, "tg", b, "insecure")
    assert "warning: insecure" in LOGLINE.sub("", r.text), r.text
    wait_log(b, r"migrate in tg from 10\.200\.0\.2: insecure", since)
    progress(b, "tg", "dirty", above=p)
    assert "trusted keys only" in b.cmd("migrate listen")
    b.cmd("destroy tg")


def test_damaged_key_file_means_no_secure_migration(hosts, tmp_path):
    """A truncated key file: refused at boot with a clear line; `migrate
    listen` says why; `migrate listen insecure` still works."""
    a, _ = hosts
    key = tmp_path / "short.key"
    with open(os.path.join(str(a.tmp), "keyA", "ferry.key"), "rb") as f:
        key.write_bytes(f.read()[:100])
    iso = a.isos.iso("trust-short", key=str(key))
    m = Machine("trust-shortkey", kind="qemu", cpus=1, mem=128, iso=iso, extra=QEMU_RDRAND)
    try:
        m.start(boot_timeout=180)
        log = boot_log(m)
        assert "migrate: ferry.key (100 bytes) refused: the key file is truncated; secure " \
               "migration is off" in log, log
        out = m.cmd("migrate listen")
        assert out.startswith("error: migrate: no secure channel here: the ferry.key module "
                              "was refused at boot: the key file is truncated"), out
        assert "error: migrate:" in m.cmd("migrate key")
        assert "listening on port 7447" in m.cmd("migrate listen insecure")
    finally:
        m.close()


def guest_code_chunks(n=16, size=64):
    """n pieces of the test guest's code, as they sit in its memory (the
    first loadable segment of build/guest/testguest.elf, a 32-bit ELF)."""
    import struct
    from hostkeys import ROOT
    with open(os.path.join(ROOT, "build", "guest", "testguest.elf"), "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<I", elf, 28)
    _, off, _, _, filesz, _, _, _ = struct.unpack_from("<8I", elf, phoff)
    chunks = []
    for k in range(0, filesz - size, 211):
        c = elf[off + k:off + k + size]
        if c.count(0) < 8 and len(set(c)) > 24:
            chunks.append(c)
    assert len(chunks) >= n, len(chunks)
    return chunks[:n]


class Capture:
    """tcpdump on every interface of the namespace (the taps), port 7447.
    A 32 MiB kernel buffer and no immediate mode: on a loaded 2-core CI
    machine the default 2 MiB, woken per packet, once dropped 60 of 130
    packets, and the capture looked too small to hold the guest."""

    def __init__(self, ns, path):
        self.path = path
        self.p = subprocess.Popen(["ip", "netns", "exec", ns.name, "tcpdump", "-i", "any",
                                   "-B", "32768", "-U", "-s", "0", "-w", path,
                                   "tcp", "port", "7447"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # capturing once it says so, not after a guess ("data link type"
        # may come first; at its end, EOF: it failed, and says why)
        self.summary = ""
        while "listening on" not in self.summary:
            line = self.p.stderr.readline().decode(errors="replace")
            assert line, self.summary
            self.summary += line

    def stop(self):
        time.sleep(1.5)
        self.p.send_signal(signal.SIGINT)
        self.p.wait(10)
        self.summary += self.p.stderr.read().decode(errors="replace")
        with open(self.path, "rb") as f:
            return f.read()


def test_capture_holds_no_guest_bytes(hosts, tmp_path):
    """tcpdump of a sealed migration holds none of the guest's code; of an
    insecure one (the control), it does."""
    a, b = hosts
    chunks = guest_code_chunks()
    for name in ("tg", "cap"):
        for h in (a, b):
            if name in h.cmd("list"):
                h.cmd(f"destroy {name}")
    create(a, "cap", "heartbeat")
    progress(a, "cap", "heartbeat")
    try:
        cap = Capture(a.ns, str(tmp_path / "sealed.pcap"))
        migrate_ok(a, "cap", b)
        sealed = cap.stop()
        assert len(sealed) > 32 << 10, cap.summary     # the guest's pages went by
        assert not [c for c in chunks if c in sealed]
        assert "insecure" in b.cmd("migrate listen insecure")
        cap = Capture(a.ns, str(tmp_path / "plain.pcap"))
        r = migrate(b, "cap", a, "insecure", timeout=60)   # A listens securely: refused
        assert r.what == "error", r.line_out
        assert "insecure" in a.cmd("migrate listen insecure")
        migrate_ok(b, "cap", a, "insecure")
        plain = cap.stop()
        # a piece may straddle two segments, and the capture may miss a
        # frame: some pieces found show that the search sees plaintext
        found = [c for c in chunks if c in plain]
        assert len(found) >= 4, f"{len(found)} of {len(chunks)}"
    finally:
        for h in (a, b):
            assert "trusted keys only" in h.cmd("migrate listen")
    a.cmd("destroy cap")


def test_python_peer_speaks_the_channel(hosts):
    """A second implementation (tests/tools/noise_kk.py, from Linux): while
    B does not trust its key it is refused in the handshake; trusted, it
    completes the handshake and B answers its sealed QUERY."""
    a, b = hosts
    kdir = str(a.tmp / "keyPy")
    py_pub = keygen(kdir)

    def ask():
        r = subprocess.run(["ip", "netns", "exec", a.ns.name, "/usr/bin/python3",
                            os.path.join(os.path.dirname(__file__), "noisepeer.py"), b.ip,
                            "7447", os.path.join(kdir, "ferry.key"), b.pub, "5059504545520001"],
                           capture_output=True, text=True, timeout=60)
        assert r.stdout.startswith("noisepeer: "), r.stdout + r.stderr
        return r.stdout

    since = mark(b)
    out = ask()
    assert re.search(r"refused code=7: not trusted: source key SHA256:[0-9a-f]{16}", out), out
    wait_log(b, r"error: migrate: refused incoming from 10\.200\.0\.1: not trusted", since)
    assert "trusting 'py'" in b.cmd(f"migrate trust py {py_pub} 10.200.0.1")
    since = mark(b)
    out = ask()
    assert "QUERY_REPLY id=5059504545520001 outcome=0" in out, out
    wait_log(b, r"migrate in: 10\.200\.0\.1 proved the key of 'py'", since)
    wait_log(b, r"migrate in: 10\.200\.0\.1 asks about migration 5059504545520001: unknown", since)
    b.cmd("migrate untrust py")


RELAYS = []


def relay(ns, mode, at, lport=7460, dst="10.200.0.3:7447"):
    p = subprocess.Popen(["ip", "netns", "exec", ns.name, "/usr/bin/python3",
                          os.path.join(os.path.dirname(__file__), "tamper_relay.py"),
                          str(lport), dst, mode, str(at)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    RELAYS.append(p)
    assert p.stdout.readline().strip() == "listening"
    return p


def test_tampering_on_the_wire_is_caught(hosts):
    """A relay between the hosts, knowing only the channel's framing, flips
    a bit in a sealed record, replays one, drops one, cuts one in half, or
    flips a bit in the destination's answer.  Each time the migration
    fails before COMMIT with the reason on both hosts, the guest runs on at
    the source, and the destination gives back what it took.  A bit flipped
    in COMMITTED leaves the source in doubt until its sealed QUERY learns
    that the destination runs the guest.  The same relay passing everything
    through lets a migration complete."""
    a, b = hosts
    hop = "10.200.0.1"              # the namespace's side of the bridge
    try:
        # the peers now meet through the relay's address
        for h, name, other in ((a, "b", b), (b, "a", a)):
            h.cmd(f"migrate untrust {name}")
            assert f"trusting '{name}'" in h.cmd(f"migrate trust {name} {other.pub} {hop}")
        create(a, "tt", "dirty")
        p = progress(a, "tt", "dirty")
        free_b = free_kib(b)
        # (mode, where, the source's words, the destination's words); the
        # forward faults come 256 KiB in, after HELLO was accepted.  The
        # destination's sealed ABORT may reach the source after the relay
        # has seen the destination hang up: then the source sees the
        # connection end instead
        opened = "a sealed record did not open"
        gone = "|lost: connection reset|closed the connection"
        cases = (("flip", "forward", opened + gone, opened),
                 ("replay", "forward", opened + gone, opened),
                 ("drop", "forward", opened + gone, opened),
                 ("cut", "forward", gone[1:],
                  "closed the connection in the middle of a record"),
                 ("flip-back", "back", opened,
                  r"error: migrate: refused incoming from 10\.200\.0\.1|migrate in tt: failed"))
        for mode, where, src_words, dst_words in cases:
            since = mark(b)
            rl = relay(a.ns, mode, 1 if mode == "flip-back" else 256 << 10)
            r = migrate(a, "tt", b, host="b:7460", timeout=90)
            out = rl.communicate(timeout=60)[0]
            assert re.search(rf"tamper: {mode} at {where} record \d+", out), out
            assert "send failed" not in out, out
            if mode == "flip-back":      # before HELLO was accepted
                assert r.what == "error", r.line_out
            else:
                assert r.what == "failed" and "tt runs here as before" in r.rest, r.line_out
            assert re.search(src_words, r.rest), f"{mode}: {r.line_out}"
            wait_log(b, dst_words if mode == "flip-back" else
                     rf"migrate in tt: failed: .*{dst_words}", since)
            assert is_running(state(a, "tt")), (mode, state(a, "tt"))
            p = progress(a, "tt", "dirty", above=p)
            end = time.time() + 30
            while "tt" in b.cmd("list") or free_kib(b) != free_b:
                assert time.time() < end, f"{mode}: B kept the guest: {b.cmd('list')}"
                time.sleep(0.5)
            assert [x["outcome"] for x in migrations(a) if x["guest"] == "tt"][-1] in \
                ("failed", "refused"), a.cmd("migrations")
        # after COMMIT: the destination's COMMITTED (no payload: 34 bytes
        # sealed) altered.  B runs the guest; A cannot know it, keeps its
        # copy paused, in doubt, and its QUERY, sealed too, through a relay
        # that passes it, learns that B runs it and frees the copy.
        since = mark(a)
        rl = relay(a.ns, "flip-back-len", 34)
        r = migrate(a, "tt", b, host="b:7460", timeout=90)
        out = rl.communicate(timeout=60)[0]
        assert re.search(r"tamper: flip-back-len at back record \d+ \(offset \d+, 34 bytes\)",
                         out), out
        assert r.what == "in doubt" and opened in r.rest, r.line_out
        assert "in doubt" in state(a, "tt")
        p = progress(b, "tt", "dirty", above=p)
        rl = relay(a.ns, "none", 0)
        wait_log(a, r"vm tt: migration [0-9a-f]{16} completed on 10\.200\.0\.1:7460: freeing "
                 r"the copy here", since, timeout=30)
        out = rl.communicate(timeout=60)[0]
        assert "no record reached" in out and "forward 1 records" in out, out
        assert "tt" not in a.cmd("list")
        # the control: the relay that changes nothing is no obstacle
        rl = relay(a.ns, "none", 0, dst="10.200.0.2:7447")
        r = migrate(b, "tt", a, host="a:7460", timeout=90)
        out = rl.communicate(timeout=60)[0]
        assert r.what == "done", r.line_out + "\n" + out
        assert "no record reached" in out and "send failed" not in out, out
        progress(a, "tt", "dirty", above=p)
        a.cmd("destroy tt")
    finally:
        while RELAYS:
            rl = RELAYS.pop()
            if rl.poll() is None:
                rl.kill()
            rl.wait(10)
        for h, name, other in ((a, "b", b), (b, "a", a)):
            try:
                h.cmd(f"migrate untrust {name}")
                h.cmd(f"migrate trust {name} {other.pub} {other.ip}")
                if "tt" in h.cmd("list"):
                    h.cmd("destroy tt")
            except Exception as e:  # noqa: BLE001 (the other host is restored regardless)
                print(f"restoring {h.label}: {e}")
