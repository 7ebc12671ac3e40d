# SPDX-License-Identifier: BSD-2-Clause
"""A TCP relay between two ferry hosts that breaks the sealed migration
channel once, as someone on the wire would: it knows only the framing
(docs/migration.md, "The handshake on the wire"): one handshake frame each
way (le16 type, le16 length, body), then sealed records (le16 length,
ciphertext and tag).  It cannot read or forge a record; it can change,
repeat, drop or cut one.

  tamper_relay.py LPORT DST_HOST:DST_PORT MODE AT

MODE, on the source's direction at the first sealed record that starts at
or after byte AT of its sealed records:
  none   forward everything (the control: the relay itself is harmless)
  flip   flip one bit in the middle of that record
  replay send that record twice
  drop   leave that record out
  cut    send the first half of that record, then close both connections
and on the destination's direction:
  flip-back      flip one bit in its AT-th sealed record (1: the first, the
                 answer to HELLO)
  flip-back-len  the same in its first sealed record of AT bytes on the
                 wire (34: a record with no payload, as COMMITTED is)

Runs until both sides have closed (or 180 s); prints one line saying what
it did, so that a test can tell that the fault happened."""
import select
import socket
import struct
import sys
import time


class Way:
    """One direction: bytes in, whole handshake frames and records out."""

    def __init__(self, name):
        self.name, self.buf, self.hs_done = name, b"", False
        self.records, self.offset = 0, 0     # sealed records seen, their bytes

    def units(self):
        """Split off every whole unit: (is_record, bytes)."""
        out = []
        while True:
            if not self.hs_done:
                if len(self.buf) < 4:
                    return out
                n = 4 + struct.unpack_from("<H", self.buf, 2)[0]
            else:
                if len(self.buf) < 2:
                    return out
                n = 2 + struct.unpack_from("<H", self.buf, 0)[0]
            if len(self.buf) < n:
                return out
            unit, self.buf = self.buf[:n], self.buf[n:]
            out.append((self.hs_done, unit))
            self.hs_done = True


def flip(unit):
    b = bytearray(unit)
    b[2 + (len(b) - 2) // 2] ^= 0x10
    return bytes(b)


def main():
    lport, dst, mode, at = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    host, port = dst.rsplit(":", 1)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", lport))
    ls.listen(1)
    ls.settimeout(120)
    print("listening", flush=True)
    src, _ = ls.accept()
    ls.close()
    dstc = socket.create_connection((host, int(port)), timeout=30)
    dstc.settimeout(None)
    src.settimeout(None)
    fwd, back = Way("forward"), Way("back")
    done, did = False, f"tamper: {mode}: no record reached"
    ends = {src: (fwd, dstc), dstc: (back, src)}
    open_ends = set(ends)
    gone = set()                    # peers that can no longer be written
    end = time.time() + 180
    while open_ends and time.time() < end:
        r, _, _ = select.select(list(open_ends), [], [], 1.0)
        for s in r:
            way, other = ends[s]
            try:
                d = s.recv(1 << 16)
            except OSError:
                d = b""
            if not d:
                open_ends.discard(s)
                try:
                    other.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                continue
            way.buf += d
            for is_rec, unit in way.units():
                send = [unit]
                if is_rec:
                    way.records += 1
                    here = way.offset
                    way.offset += len(unit)
                    hit = not done and (
                        (way is fwd and mode in ("flip", "replay", "drop", "cut") and here >= at)
                        or (way is back and mode == "flip-back" and way.records == at)
                        or (way is back and mode == "flip-back-len" and len(unit) == at))
                    if hit:
                        done = True
                        did = (f"tamper: {mode} at {way.name} record {way.records} "
                               f"(offset {here}, {len(unit)} bytes)")
                        if mode in ("flip", "flip-back", "flip-back-len"):
                            send = [flip(unit)]
                        elif mode == "replay":
                            send = [unit, unit]
                        elif mode == "drop":
                            send = []
                        elif mode == "cut":
                            send = [unit[:len(unit) // 2]]
                            open_ends.clear()      # and nothing after it
                for u in send:
                    if other in gone:
                        break
                    try:
                        other.sendall(u)
                    except OSError as e:
                        # after the fault the peer that caught it hangs up
                        # (what it says back still goes through); before
                        # it, a loss of our own would be a fault
                        if not done:
                            print(f"tamper: {way.name} send failed: {e}", flush=True)
                            open_ends.clear()
                        gone.add(other)
                        break
                if not open_ends:
                    break
            if not open_ends:
                break
    for s in (src, dstc):
        try:
            s.close()
        except OSError:
            pass
    print(f"{did}; forward {fwd.records} records ({fwd.offset} bytes), "
          f"back {back.records} records", flush=True)


if __name__ == "__main__":
    main()
