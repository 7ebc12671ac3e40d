#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Where the gap seen from outside goes, move by move, from a capture of
the bridge that `FERRY_PCAP=FILE linux_bench.py --outside-only` writes.

The migration is sealed, but its hand-over records have fixed sizes on the
wire (TCP payload: a sealed record is 2 + 16 + its bytes + 16): END 50 (the
last of the state, source to destination), READY 42 (back), COMMIT 46
(there), COMMITTED 34 (back).  The destination sends the guest's RARP when
COMMIT has been taken.  For each move (a burst of RARPs) it prints, in ms:
the guest's last ping reply before the move to END (pause, the last round
and the state), END to READY (the destination loading the state), READY to
COMMIT (the source), COMMIT to the RARP (the destination setting time and
devices), the RARP to COMMITTED, and the RARP to the guest's first reply.

  python3 tests/bench/gap_trace.py FILE.pcap [GUEST_IP]
"""
import subprocess
import sys

SIZES = {"END": (50, "src"), "READY": (42, "dst"), "COMMIT": (46, "src"),
         "COMMITTED": (34, "dst")}


def frames(path):
    out = subprocess.run(["tcpdump", "-r", path, "-tt", "-n", "-e"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        t, _, rest = line.partition(" ")
        yield float(t), rest


def moves(rarps):
    """The first RARP of each burst (the announce repeats for under 1 s)."""
    return [t for i, t in enumerate(rarps) if i == 0 or t - rarps[i - 1] > 2]


def record_at(fs, name, t0, t1):
    """Times of hand-over records `name` (by size) in [t0, t1]."""
    size = SIZES[name][0]
    return [t for t, x in fs if t0 <= t <= t1 and ".7447" in x and "Flags [P.]" in x
            and x.endswith(f"length {size}")]


def one(fs, r, replies):
    before = [t for t in replies if t < r]
    after = [t for t in replies if t > r]
    if not before or not after:
        return None
    a, b = before[-1], after[0]
    end = record_at(fs, "END", a, r)
    ready = record_at(fs, "READY", a, r)
    commit = record_at(fs, "COMMIT", a, r)
    done = record_at(fs, "COMMITTED", r, b + 1)
    if not (end and ready and commit and done):
        return None
    return {"gap": b - a, "to END": end[-1] - a, "END-READY": ready[-1] - end[-1],
            "READY-COMMIT": commit[-1] - ready[-1], "COMMIT-RARP": r - commit[-1],
            "RARP-COMMITTED": done[0] - r, "RARP-reply": b - r}


def main(argv):
    guest = argv[1] if len(argv) > 1 else "10.200.0.50"
    fs = list(frames(argv[0]))
    replies = [t for t, x in fs if f"{guest} > " in x and "ICMP echo reply" in x]
    for r in moves([t for t, x in fs if "Reverse Request" in x]):
        m = one(fs, r, replies)
        if m:
            print("  ".join(f"{k} {1000 * v:.2f}" for k, v in m.items()))
        else:
            print(f"move at {r:.6f}: hand-over records not all found")


if __name__ == "__main__":
    main(sys.argv[1:])
