#!/usr/bin/env python3
"""A Redis client for the tests: N connections, each sending PING at a
constant rate, optionally K at a time (a pipeline, written at once), and
optionally one more connection that runs a busy Lua script of Y ms every
X ms (it blocks Redis's event loop). Bounded by --duration.

Writes --json: commands sent and answered (PINGs, EVALs), and each
command's latency from its send (a pipeline's commands from the
pipeline's send to its last answer; a script's too) as percentiles, in the shape assert_p99_agrees reads
(service_us and from_send_us are the same: the connections are open
before the first send). --log: one line per exchange, "commands send_ns
answer_ns conn local_port", CLOCK_MONOTONIC.
"""
import argparse
import json
import selectors
import socket
import time

PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"


def lua_eval(busy_ms):
    # TIME is allowed in scripts (effects are replicated, Redis 7): spin until busy_ms passed.
    script = ("local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]; "
              "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start >= %d; return 1" % (busy_ms * 1000))
    parts = [b"EVAL", script.encode(), b"0"]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def percentiles(values):
    values = sorted(values)
    if not values:
        return {"p50": 0, "p99": 0, "max": 0, "count": 0}
    at = lambda q: values[min(len(values) - 1, max(0, int(len(values) * q + 0.999999) - 1))]
    return {"p50": at(0.50), "p99": at(0.99), "max": values[-1], "count": len(values)}


class Conn:
    def __init__(self, port, index, payload, answer, interval_s, start):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.index, self.payload, self.answer = index, payload, answer
        self.interval_s, self.next_send = interval_s, start
        self.pending, self.sent_ns, self.buf = 0, 0, b""


def run(args):
    sel = selectors.DefaultSelector()
    start = time.monotonic() + 0.05
    pipeline = PING * args.pipeline
    conns = [Conn(args.port, i, pipeline, PONG * args.pipeline, args.pipeline / args.rate,
                  start + i * (args.pipeline / args.rate) / max(1, args.connections))
             for i in range(args.connections)]
    if args.lua_every_ms:
        lua = Conn(args.port, len(conns), lua_eval(args.lua_ms), b":1\r\n", args.lua_every_ms / 1000.0,
                   start + args.lua_every_ms / 2000.0)
        conns.append(lua)
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
    end = start + args.duration
    latencies, log = [], []
    pings = evals = answered = 0
    while True:
        now = time.monotonic()
        busy = any(c.pending for c in conns)
        if now >= end and not busy:
            break
        if now >= end + 10:
            raise SystemExit("answers still missing 10 s after the end")
        for c in conns:
            if not c.pending and now < end and now >= c.next_send:
                c.sent_ns = time.monotonic_ns()
                c.sock.sendall(c.payload)
                c.pending = 1
                c.next_send += c.interval_s
                if c.next_send < now:  # late: the next one goes at once, none skipped
                    c.next_send = now
        wait = min([c.next_send for c in conns if not c.pending and c.next_send < end] + [now + 0.005]) - now
        for key, _ in sel.select(timeout=max(0.0, wait)):
            c = key.data
            chunk = c.sock.recv(65536)
            if not chunk:
                raise SystemExit("the server closed a connection")
            c.buf += chunk
            if len(c.buf) < len(c.answer):
                continue
            if c.buf != c.answer:
                raise SystemExit("unexpected answer %r" % c.buf[:80])
            got_ns = time.monotonic_ns()
            is_eval = c.answer == b":1\r\n"
            commands = 1 if is_eval else args.pipeline
            if is_eval:
                evals += 1
            else:
                pings += commands
            # Every command's, the scripts' too: connscope's p99 counts them.
            latencies.extend([(got_ns - c.sent_ns) / 1000.0] * commands)
            answered += commands
            log.append("%d %d %d %d %d" % (commands, c.sent_ns, got_ns, c.index, c.sock.getsockname()[1]))
            c.buf, c.pending = b"", 0
    for c in conns:
        c.sock.close()
    summary = percentiles(latencies)
    out = {"pings": pings, "evals": evals, "commands": pings + evals, "answered": answered,
           "service_us": summary, "from_send_us": summary}
    with open(args.json, "w") as f:
        json.dump(out, f)
    if args.log:
        with open(args.log, "w") as f:
            f.write("\n".join(log) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--rate", type=float, default=50.0, help="PINGs a second, per connection")
    p.add_argument("--pipeline", type=int, default=1, help="PINGs written at once")
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--lua-every-ms", type=int, default=0)
    p.add_argument("--lua-ms", type=int, default=12)
    p.add_argument("--json", required=True)
    p.add_argument("--log")
    run(p.parse_args())


if __name__ == "__main__":
    main()
