#!/usr/bin/env python3
"""Writes fuzz_ctl_proto's seeds into tests/fuzz/corpus/fuzz_ctl_proto/.

Each seed: a byte choosing the payload limit (>= 128: a client's 16 MiB,
64-127: the daemon's 64 KiB), a byte choosing the read size, then a byte
stream of control frames (daemon/service/ctl_proto.h). The snapshot seeds frame a
real `connscope snapshot --json` answer, given as the argument:

  connscope snapshot --json > /tmp/snap.json
  python3 tests/fuzz/make_ctl_corpus.py /tmp/snap.json
"""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_ctl_proto")
RESPONSE = 0x80


def frame(ftype, payload=b"", version=1, magic=b"CSCT"):
    return magic + struct.pack("<HHII", version, ftype, len(payload), 0) + payload


def write(name, limit_byte, chunk_byte, stream):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([limit_byte, chunk_byte]) + stream)


def main():
    os.makedirs(OUT, exist_ok=True)
    snapshot = open(sys.argv[1], "rb").read().rstrip(b"\n")
    hello = frame(1, struct.pack("<HH", 1, 1))
    view = frame(2, struct.pack("<BBHI", 0, 0, 0, 99000))
    write("requests", 64, 3, hello + view + frame(3, struct.pack("<BBHI", 1, 0, 0, 99900)) + frame(4) + frame(5))
    write("hello-bad-version", 64, 7, frame(1, struct.pack("<HH", 2, 9), version=2))
    write("oversized", 64, 1, b"CSCT" + struct.pack("<HHII", 1, 2, 64 * 1024 + 1, 0))
    write("bad-magic", 64, 5, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    write("unknown-type", 64, 2, frame(77, b"abc") + frame(RESPONSE | 2, b"{}"))
    write("error", 200, 4, frame(0xFF, struct.pack("<HH", 3, 0) + b"request too large\x1b[2J"))
    write("snapshot", 200, 63, hello + frame(RESPONSE | 1, struct.pack("<HH", 1, 0) + b"connscoped pid 1")
          + frame(RESPONSE | 2, snapshot))
    write("stream", 200, 9, frame(RESPONSE | 3, snapshot) + frame(RESPONSE | 3, snapshot[: len(snapshot) // 2]))
    write("status", 200, 11, frame(RESPONSE | 5, b'{"daemon_pid":1,"uptime_s":3.5,"ports":[8080]}'))


if __name__ == "__main__":
    main()
