#!/usr/bin/env python3
"""A raw client of connscoped's control socket, for the integration tests:
it speaks the protocol of daemon/service/ctl_proto.h byte by byte, so that the
tests can send what connscope never would (bad magic, other versions,
oversized or unknown requests, half a request) and read exactly what
comes back.

  ctl_client.py SOCKET hello|status|stream N|bad-magic|bad-version|
                oversized|unknown|partial|slow-reader SECONDS
Prints one line per frame received: TYPE LENGTH [error CODE TEXT].
Exits 3 when the connection is refused or closed before the answer.

  ctl_client.py SOCKET crowd STREAMS IDLE SECONDS READY_FILE
Opens STREAMS live views (as top does) one after the other, then IDLE
clients that say nothing; writes READY_FILE; for SECONDS reads the streams
and watches the idle clients; prints how many streams were taken and
refused as busy, the updates read, and how many idle clients the daemon
closed.
"""
import json
import selectors
import socket
import struct
import sys
import time

RESPONSE = 0x80


def frame(ftype, payload=b"", version=1, magic=b"CSCT"):
    return magic + struct.pack("<HHII", version, ftype, len(payload), 0) + payload


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("closed")
        data += chunk
    return data


def read_frame(sock):
    head = read_exact(sock, 16)
    if head[:4] != b"CSCT":
        raise ValueError("bad magic from the daemon")
    version, ftype, length, reserved = struct.unpack("<HHII", head[4:])
    return ftype, read_exact(sock, length)


def show(ftype, payload):
    if ftype == 0xFF:
        code = struct.unpack("<H", payload[:2])[0]
        print(f"ERROR {len(payload)} error {code} {payload[4:].decode(errors='replace')}")
    else:
        print(f"{ftype:#x} {len(payload)}")
    sys.stdout.flush()


def crowd(path, streams, idle, seconds, ready_file):
    sel = selectors.DefaultSelector()
    taken = busy = updates = idle_closed = 0
    for _ in range(streams):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(15)
        s.connect(path)
        s.sendall(frame(1, struct.pack("<HH", 1, 1)) + frame(3, struct.pack("<BBHI", 0, 0, 0, 99000)))
        read_frame(s)  # HELLO's answer
        ftype, payload = read_frame(s)
        if ftype == 0xFF and struct.unpack("<H", payload[:2])[0] == 7:
            busy += 1
            s.close()
            continue
        taken += 1
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "stream")
    for _ in range(idle):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "idle")
    open(ready_file, "w").close()
    end = time.monotonic() + seconds
    while time.monotonic() < end and idle_closed < idle:
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(1 << 20)
            except (BlockingIOError, ConnectionResetError):
                data = b"" if key.data == "idle" else None
            if data is None:
                continue
            if key.data == "stream":
                updates += data.count(b"CSCT")
                if data:
                    continue
            idle_closed += key.data == "idle"
            sel.unregister(key.fileobj)
            key.fileobj.close()
    print(f"crowd: streams {taken} taken, {busy} refused busy, {updates} frames read; "
          f"idle {idle_closed} of {idle} closed by the daemon")


def main():
    path, what = sys.argv[1], sys.argv[2]
    if what == "crowd":
        crowd(path, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(15)
    try:
        sock.connect(path)
    except OSError as e:
        print(f"connect failed: {e.strerror}")
        sys.exit(3)
    hello = frame(1, struct.pack("<HH", 1, 1))
    try:
        if what == "hello":
            try:
                sock.sendall(hello)
            except BrokenPipeError:
                pass  # refused at once: its error frame is still there to read
            show(*read_frame(sock))
        elif what == "status":
            sock.sendall(frame(5))
            ftype, payload = read_frame(sock)
            show(ftype, payload)
            print(json.dumps(json.loads(payload)))
        elif what == "stream":
            count = int(sys.argv[3])
            sock.sendall(hello + frame(3, struct.pack("<BBHI", 0, 0, 0, 99000)))
            show(*read_frame(sock))  # HELLO's answer
            for _ in range(count):
                ftype, payload = read_frame(sock)
                show(ftype, payload)
                snap = json.loads(payload)
                assert "live" in snap and "latency_us" in snap, "not a snapshot"
                print(f"update requests={snap['requests']} seconds={len(snap['live']['seconds'])}")
                sys.stdout.flush()
        elif what == "bad-magic":
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
            show(*read_frame(sock))
            print("closed" if sock.recv(1) == b"" else "still open")
        elif what == "bad-version":
            sock.sendall(frame(1, struct.pack("<HH", 2, 2), version=2))
            show(*read_frame(sock))
            print("closed" if sock.recv(1) == b"" else "still open")
        elif what == "oversized":
            # The header announces 64 KiB + 1; the daemon must not wait for it.
            sock.sendall(b"CSCT" + struct.pack("<HHII", 1, 2, 64 * 1024 + 1, 0))
            show(*read_frame(sock))
            print("closed" if sock.recv(1) == b"" else "still open")
        elif what == "unknown":
            # An unknown type and a bad payload get errors; the connection goes on.
            sock.sendall(frame(77, b"xyz") + frame(2, b"\x09" * 8) + frame(5))
            for _ in range(3):
                show(*read_frame(sock))
        elif what == "partial":
            sock.sendall(frame(5)[:9])
            start = time.monotonic()
            show(*read_frame(sock))
            print(f"after {time.monotonic() - start:.0f} s")
        elif what == "slow-reader":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(frame(3))
            time.sleep(float(sys.argv[3]))  # read nothing
            try:
                while sock.recv(65536):
                    pass
                print("closed by the daemon")
            except OSError as e:
                print(f"closed by the daemon ({e.strerror})")
        else:
            sys.exit(f"unknown action {what}")
    except (EOFError, ConnectionResetError) as e:
        print(f"connection closed: {e}")
        sys.exit(3)


if __name__ == "__main__":
    main()
