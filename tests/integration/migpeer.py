# SPDX-License-Identifier: BSD-2-Clause
"""The Linux side of migration tests: hostile, replayed and cut migration
streams for a ferry listener (record format: docs/migration.md), run inside
the test namespace with `ip netns exec`.

  migpeer.py garbage HOST PORT [SEED] [COUNT]
        COUNT connections, each sending something that is not a valid
        stream: random bytes, zeros, records with the magic but random
        types/lengths/payloads (good CRC), HELLOs with random fields.
  migpeer.py badcrc HOST PORT [HELLO_FILE]
        a well-formed HELLO (hand-built, or the first record of a captured
        stream) whose CRC is wrong.
  migpeer.py lying HOST PORT [HELLO_FILE]
        HELLOs whose lengths lie: header length beyond the bound, a long
        length then the end of the stream, a short length, string lengths
        running past the record, bytes left over, a first record that is
        not a HELLO, a second HELLO.
  migpeer.py capture LPORT OUT_FILE [--to HOST:PORT] [--cut BYTES] [--hello-only]
        listen on LPORT for one ferry source; relay it to HOST:PORT and
        record what the source sent; --cut closes both connections after
        BYTES from the source (mid-record); --hello-only keeps the HELLO and
        closes without relaying.
  migpeer.py replay HOST PORT FILE [--rename NAME] [--until TYPE] [--cut BYTES]
        send a captured stream again (--rename: with another guest name and id in
        the HELLO, CRC recomputed); stop before the first record of TYPE
        (e.g. COMMIT) or after BYTES (mid-record), then close.

Every connection prints one line starting "conn" with what came back, in
order ("... then ..."), until the listener closed: "answer=REPLY code=N
msg='...'", "answer=ABORT code=N msg='...'", then "answer=closed",
"answer=reset" or "answer=timeout" (neither within 5 s); or "refused" (no
listener).  Nothing here waits without a timeout.
"""
import random
import select
import socket
import struct
import sys
import time
import zlib

HDR = 16
MAGIC = 0x4D00
PROTO = 10            # MIG_PROTO_VERSION
# ... cpu_baseline, arch_caps (10), tsc_hz, guest_tsc, nic, mac (3), pvpanic (5), weight, cap (4)
HELLO_FIXED = "<IIIIQQQQQQB6sBII"
TYPES = ["HELLO", "HELLO_REPLY", "PAGES", "ROUND_END", "VCPU_STATE", "DEVICE_STATE",
         "TSC", "END", "READY", "COMMIT", "COMMITTED", "ABORT", "QUERY", "QUERY_REPLY",
         "ROUND_ACK", "FRAMES"]
T = {name: MAGIC | (i + 1) for i, name in enumerate(TYPES)}
ANSWER_WAIT = 5.0


def tname(t):
    i = (t & 0xFF) - 1
    return TYPES[i] if (t & 0xFF00) == MAGIC and 0 <= i < len(TYPES) else f"0x{t:04x}"


# ---- records ---------------------------------------------------------------
def record(rtype, payload, seq, flags=0, length=None, crc_xor=0):
    """Header (type, flags, length, seq, CRC of header 0-11 + payload) + payload."""
    head = struct.pack("<HHII", rtype, flags, len(payload) if length is None else length, seq)
    crc = (zlib.crc32(head + payload) ^ crc_xor) & 0xFFFFFFFF
    return head + struct.pack("<I", crc) + payload


def string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<H", len(b)) + b


def hello_payload(name="peer1", mem_mib=16, vcpus=1, mig_id=0x1122334455667788,
                  baseline=0x0123456789ABCDEF, tsc_hz=2_000_000_000, version="migpeer",
                  kernel="testguest", cmdline="heartbeat", dev_version=1, initrd="", modules="",
                  timeout_s=0):
    return (struct.pack(HELLO_FIXED, PROTO, 1, dev_version, vcpus, mig_id, mem_mib << 20,
                        baseline, 0, tsc_hz, 123456789, 0, bytes(6), 0, 256, 0)
            + string(version) + string(name) + string(kernel) + string(cmdline)
            + string(initrd) + string(modules) + struct.pack("<I", timeout_s))


def parse_hello(p):
    """The fixed part, the six strings of a HELLO payload (version PROTO):
    ferry version, name, kernel, cmdline, initrd, modules; and what follows
    them (the timeout)."""
    fixed = list(struct.unpack_from(HELLO_FIXED, p))
    pos, strs = struct.calcsize(HELLO_FIXED), []
    for _ in range(6):
        (n,) = struct.unpack_from("<H", p, pos)
        strs.append(p[pos + 2:pos + 2 + n])
        pos += 2 + n
    return fixed, strs, p[pos:]


def rename_hello(p, name):
    """Another guest name, and another migration id (a listener refuses an
    id that came to it before)."""
    fixed, strs, tail = parse_hello(p)
    strs[1] = name.encode()
    fixed[4] ^= zlib.crc32(name.encode()) << 16 | 1
    return struct.pack(HELLO_FIXED, *fixed) + b"".join(string(s) for s in strs) + tail


def split_records(data):
    """[(type, seq, payload, raw)] of a captured stream; a cut tail is dropped."""
    out, pos = [], 0
    while pos + HDR <= len(data):
        rtype, _, length, seq, _ = struct.unpack_from("<HHIII", data, pos)
        if pos + HDR + length > len(data):
            break
        out.append((rtype, seq, data[pos + HDR:pos + HDR + length],
                    data[pos:pos + HDR + length]))
        pos += HDR + length
    return out


_pending = {}    # socket -> bytes received beyond the last record returned


def read_record(sock, timeout):
    """One record from sock: (type, payload), or a word: closed/reset/timeout/
    partial/bad-length.  Bytes after the record are kept for the next call."""
    buf, end = _pending.pop(sock, b""), time.time() + timeout
    while True:
        if len(buf) >= HDR:
            length = struct.unpack_from("<I", buf, 4)[0]
            if length > 1 << 16:
                return "bad-length"
            if len(buf) >= HDR + length:
                _pending[sock] = buf[HDR + length:]
                return struct.unpack_from("<H", buf)[0], buf[HDR:HDR + length]
        left = end - time.time()
        if left <= 0:
            return "timeout" if not buf else "partial"
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            continue
        try:
            d = sock.recv(65536)
        except OSError:
            return "reset"
        if not d:
            return "closed" if not buf else "partial"
        buf += d


def describe(ans):
    if isinstance(ans, str):
        return f"answer={ans}"
    rtype, p = ans
    try:
        if rtype == T["HELLO_REPLY"]:
            _, code = struct.unpack_from("<II", p)
            msg = ""
            if len(p) >= 18:
                (n,) = struct.unpack_from("<H", p, 16)
                (m,) = struct.unpack_from("<H", p, 18 + n)
                msg = p[20 + n:20 + n + m].decode("ascii", "replace")
            return f"answer=REPLY code={code} msg={msg!r}"
        if rtype == T["ABORT"]:
            (code, n) = struct.unpack_from("<IH", p)
            return f"answer=ABORT code={code} msg={p[6:6 + n].decode('ascii', 'replace')!r}"
        if rtype == T["READY"]:
            return f"answer=READY pages={struct.unpack_from('<Q', p)[0]}"
        if rtype == T["ROUND_ACK"]:
            rnd, pages = struct.unpack_from("<IQ", p)
            return f"answer=ROUND_ACK round={rnd} pages={pages}"
    except struct.error:
        pass
    return f"answer={tname(rtype)} len={len(p)}"


# ---- one connection ------------------------------------------------------------
def connect(host, port):
    try:
        return socket.create_connection((host, port), timeout=10)
    except ConnectionRefusedError:
        return None


def send_quietly(sock, data):
    """Send what the peer takes; it may close on us halfway (that is fine)."""
    try:
        sock.sendall(data)
        return len(data)
    except OSError:
        return -1


def conn(label, host, port, data, wait=ANSWER_WAIT, half_close=True, linger=0.0):
    """Connect, send data, optionally shut down our side, report the answer."""
    s = connect(host, port)
    if s is None:
        print(f"conn {label}: refused", flush=True)
        return "refused"
    sent = send_quietly(s, data)
    if half_close and sent >= 0:
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    if linger:
        time.sleep(linger)
    answers = []
    while len(answers) < 4:        # every record until the listener closes
        ans = read_record(s, wait)
        answers.append(describe(ans))
        if isinstance(ans, str):
            break
    s.close()
    text = " then ".join(answers)
    print(f"conn {label}: sent {sent} bytes {text}", flush=True)
    return text


# ---- modes ------------------------------------------------------------------
def garbage(host, port, seed=1, count=24):
    rnd = random.Random(seed)
    for i in range(count):
        kind = i % 4
        if kind == 0:      # random bytes
            data = rnd.randbytes(rnd.choice([1, 15, 16, 17, 200, 4096, 65536]))
        elif kind == 1:    # zeros
            data = bytes(rnd.choice([16, 1000]))
        elif kind == 2:    # magic, random type / flags / length / seq, good CRC
            rtype = MAGIC | rnd.randrange(0, 20)
            payload = rnd.randbytes(rnd.randrange(0, 600))
            data = record(rtype, payload, rnd.choice([0, 0, 1, 7]), flags=rnd.choice([0, 0, 1]),
                          length=rnd.choice([None, None, rnd.randrange(1 << 32)]))
        else:              # HELLO with random fields, good CRC
            p = bytearray(hello_payload(name=rnd.choice(["g", "x" * 40, "-bad", "ok.1"]),
                                        mem_mib=rnd.choice([0, 1, 16, 1 << 20]),
                                        vcpus=rnd.choice([0, 1, 65]),
                                        tsc_hz=rnd.choice([0, 10**9, 10**12])))
            for _ in range(rnd.randrange(0, 6)):
                p[rnd.randrange(len(p))] = rnd.randrange(256)
            data = record(T["HELLO"], bytes(p), 0)
        conn(f"garbage-{i}-kind{kind}", host, port, data)


def load_hello(path):
    if not path:
        return hello_payload()
    with open(path, "rb") as f:
        recs = split_records(f.read())
    assert recs and recs[0][0] == T["HELLO"], "no HELLO in the capture"
    return recs[0][2]


def badcrc(host, port, hello_file=None):
    p = load_hello(hello_file)
    conn("badcrc", host, port, record(T["HELLO"], p, 0, crc_xor=0x00010000))
    conn("badcrc-flipped-payload", host, port,
         record(T["HELLO"], p, 0)[:HDR] + bytes([p[0] ^ 0x80]) + p[1:])


def lying(host, port, hello_file=None):
    p = load_hello(hello_file)
    good = record(T["HELLO"], p, 0)
    # a length beyond HELLO's bound: refused from the header alone
    conn("len-huge", host, port, record(T["HELLO"], p, 0, length=0xFFFFFFF0))
    conn("len-4097", host, port, record(T["HELLO"], p, 0, length=4097))
    # a length within bounds, then the stream ends short of it
    conn("len-long-eof", host, port, record(T["HELLO"], p, 0, length=4096))
    # a length within bounds, the bytes never come; we go away after 3 s
    conn("len-long-stall", host, port, record(T["HELLO"], p, 0, length=4096),
         wait=3.0, half_close=False)
    # a short length: the record ends inside the fixed fields
    conn("len-short", host, port, record(T["HELLO"], p[:10], 0))
    # a string whose length runs past the record
    fixed = struct.calcsize(HELLO_FIXED)
    conn("strlen-lies", host, port,
         record(T["HELLO"], p[:fixed] + struct.pack("<H", 4000) + p[fixed + 2:], 0))
    # bytes left over after the last string
    conn("left-over", host, port, record(T["HELLO"], p + b"\0" * 64, 0))
    # a record that must not come first, and one the source never sends
    conn("pages-first", host, port,
         record(T["PAGES"], struct.pack("<IQB", 1, 0, 1), 0))
    conn("ready-from-source", host, port, record(T["READY"], struct.pack("<Q", 0), 0))
    # sequence number wrong, flags set
    conn("seq-1", host, port, record(T["HELLO"], p, 1))
    conn("flags", host, port, record(T["HELLO"], p, 0, flags=1))
    # the same HELLO twice in one connection (a replayed record)
    conn("hello-twice", host, port, good + good)


def capture(lport, out, to=None, cut=None, hello_only=False, timeout=120):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", lport))
    ls.listen(1)
    ls.settimeout(timeout)
    print("listening", flush=True)
    src, addr = ls.accept()
    ls.close()
    src.settimeout(timeout)
    if hello_only:
        ans = read_record(src, 30)
        if isinstance(ans, str):
            print(f"capture: no HELLO: {ans}", flush=True)
            return
        rtype, p = ans
        with open(out, "wb") as f:
            f.write(record(rtype, p, 0))
        fixed, strs, _ = parse_hello(p)
        print(f"capture: {tname(rtype)} from {addr[0]} name={strs[1].decode()} "
              f"mem_mib={fixed[5] >> 20}", flush=True)
        src.close()
        return
    host, port = to.rsplit(":", 1)
    dst = socket.create_connection((host, int(port)), timeout=30)
    sent, back, log, end = 0, 0, bytearray(), time.time() + timeout
    open_ends = {src, dst}
    while open_ends and time.time() < end:
        r, _, _ = select.select(list(open_ends), [], [], 1.0)
        for s in r:
            try:
                d = s.recv(1 << 16)
            except OSError:
                d = b""
            other = dst if s is src else src
            if not d:
                open_ends.discard(s)
                try:
                    other.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                continue
            if s is src:
                if cut is not None and sent + len(d) >= cut:
                    d = d[:cut - sent]
                    send_quietly(dst, d)
                    log += d
                    sent += len(d)
                    open_ends.clear()
                    break
                log += d
                sent += len(d)
            else:
                back += len(d)
            send_quietly(other, d)
    src.close()
    dst.close()
    with open(out, "wb") as f:
        f.write(log)
    kinds = {}
    for rtype, _, _, _ in split_records(bytes(log)):
        kinds[tname(rtype)] = kinds.get(tname(rtype), 0) + 1
    summary = " ".join(f"{k}={v}" for k, v in kinds.items())
    print(f"capture: relayed {sent} bytes to {to}, {back} back{' (cut)' if cut else ''}; "
          f"records {summary}", flush=True)


def replay(host, port, path, rename=None, until=None, cut=None):
    with open(path, "rb") as f:
        recs = split_records(f.read())
    stop_type = T[until] if until else None
    s = connect(host, port)
    if s is None:
        print("conn replay: refused", flush=True)
        return
    sent, total = 0, 0
    for rtype, seq, p, raw in recs:
        if rtype == stop_type:
            break
        if rtype == T["HELLO"] and rename:
            raw = record(rtype, rename_hello(p, rename), seq)
        if cut is not None and sent + len(raw) > cut:
            raw = raw[:cut - sent]
        if send_quietly(s, raw) < 0:
            ans = read_record(s, 2)
            print(f"conn replay: peer stopped us after {sent} bytes {describe(ans)}", flush=True)
            s.close()
            return
        sent += len(raw)
        total += 1
        if rtype == T["HELLO"]:
            ans = read_record(s, 15)
            print(f"conn replay-hello: {describe(ans)}", flush=True)
            if isinstance(ans, str) or ans[0] != T["HELLO_REPLY"] or \
                    struct.unpack_from("<I", ans[1], 4)[0] != 0:
                s.close()
                return
        if rtype == T["END"]:
            ans = read_record(s, 30)
            if not isinstance(ans, str) and ans[0] == T["ROUND_ACK"]:
                print(f"conn replay-ack: {describe(ans)}", flush=True)
                ans = read_record(s, 30)     # the listener acks round 0 before READY
            print(f"conn replay-end: {describe(ans)}", flush=True)
        if cut is not None and sent >= cut:
            break
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    ans = read_record(s, 15)
    s.close()
    print(f"conn replay: sent {sent} bytes in {total} records, then closed; {describe(ans)}",
          flush=True)


def main(argv):
    mode = argv[1]
    if mode == "garbage":
        garbage(argv[2], int(argv[3]), int(argv[4]) if len(argv) > 4 else 1,
                int(argv[5]) if len(argv) > 5 else 24)
    elif mode == "badcrc":
        badcrc(argv[2], int(argv[3]), argv[4] if len(argv) > 4 else None)
    elif mode == "lying":
        lying(argv[2], int(argv[3]), argv[4] if len(argv) > 4 else None)
    elif mode in ("capture", "replay"):
        opts, pos, i = {}, [], 2
        while i < len(argv):
            if argv[i].startswith("--"):
                key = argv[i][2:].replace("-", "_")
                if key == "hello_only":
                    opts[key] = True
                    i += 1
                    continue
                opts[key] = argv[i + 1]
                i += 2
            else:
                pos.append(argv[i])
                i += 1
        if "cut" in opts:
            opts["cut"] = int(opts["cut"])
        if mode == "capture":
            capture(int(pos[0]), pos[1], **opts)
        else:
            replay(pos[0], int(pos[1]), pos[2], **opts)
    else:
        sys.exit(f"unknown mode {mode}")
    print("migpeer: done", flush=True)


if __name__ == "__main__":
    main(sys.argv)
