#!/usr/bin/env python3
"""Hostile clients of connscoped's /metrics, and a scraper that times it.

  metrics_hostile.py hold PORT IDLE HALF SLOW SECONDS READY_FILE
      Holds IDLE connections that send nothing, HALF that send half a
      request head and stop, and SLOW that send a whole scrape and then
      read its answer one byte a second (through a 1 KB receive buffer).
      A connection the daemon closes is opened again (at most 20 times
      the total, in all), so the load stays while it runs. READY_FILE is
      written once all are established (or after 10 s, with how many
      are); READY_FILE.tally, each second, "IDLE_CLOSED TIMEOUTS": the idle
      connections the daemon closed and the 408 answers the half-sent ones
      got. Runs SECONDS at most, or until SIGTERM; then prints what it
      held, opened and saw closed.

  metrics_hostile.py scrape PORT DAEMON_PID COUNT BOUND_MS MAX_SCRAPES OUT_JSON
      Scrapes (a new connection each, Prometheus's request) until COUNT in
      a row were each answered within BOUND_MS, MAX_SCRAPES at most and 90 s
      at most. Each scrape's time is set beside how long, meanwhile, the
      daemon's threads (the metrics thread, and the engine's that hold the
      lock it renders under) and this scraper waited for a CPU (run_delay,
      /proc/.../schedstat): a scrape over the bound
      that those waits explain (the machine was busy: less than BOUND_MS
      left without them) restarts the run; one they do not explain is the
      server's fault, and fails at once. A scrape not answered in 15 s
      counts as 15 s. BOUND_MS 0: measure only (MAX_SCRAPES, no verdict). Prints the distribution of the run judged (or of all
      scrapes, when none was) and writes every scrape to OUT_JSON.
      Exit 0: COUNT in a row within the bound; 1: a slow scrape the machine
      does not explain; 2: no run of COUNT within MAX_SCRAPES (the machine
      too busy throughout).
"""
import errno
import glob
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time

REQUEST = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Prometheus/2.42.0\r\n"
           b"Accept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
           b"X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n")
HALF = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: half"
SCRAPE_TIMEOUT_S = 15


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))


class Holder:
    def __init__(self, port):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.conns = {}          # socket -> [kind, established]
        self.reopens = 0
        self.closed = {"idle": 0, "half": 0, "slow": 0}
        self.slow_bytes = 0
        self.timeouts = 0        # 408 answers: a half-sent request's deadline

    def open(self, kind):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if kind == "slow":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return
        self.conns[s] = [kind, False]
        self.sel.register(s, selectors.EVENT_WRITE)

    def established(self, s):
        kind = self.conns[s][0]
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            return self.lost(s)
        self.conns[s][1] = True
        try:
            if kind == "half":
                s.send(HALF)
            elif kind == "slow":
                s.send(REQUEST)
        except OSError:
            return self.lost(s)
        # idle and half only listen for the daemon closing them; slow ones are read by the clock
        if kind == "slow":
            self.sel.unregister(s)
        else:
            self.sel.modify(s, selectors.EVENT_READ)

    def lost(self, s, limit=0):
        kind = self.conns.pop(s)[0]
        self.closed[kind] += 1
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        if self.reopens < limit:
            self.reopens += 1
            self.open(kind)

    def readable(self, s, limit):
        try:
            data = s.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data.startswith(b"HTTP/1.1 408 "):
            self.timeouts += 1
        if not data:
            self.lost(s, limit)

    def read_slow(self, limit):
        for s, (kind, up) in list(self.conns.items()):
            if kind != "slow" or not up:
                continue
            try:
                data = s.recv(1)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                self.slow_bytes += 1
            else:
                self.lost(s, limit)

    def count_up(self):
        return sum(1 for kind, up in self.conns.values() if up)


def hold(port, idle, half, slow, seconds, ready_file):
    total = idle + half + slow
    raise_nofile(total + 64)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    h = Holder(port)
    for kind, n in (("idle", idle), ("half", half), ("slow", slow)):
        for _ in range(n):
            h.open(kind)
    start = time.monotonic()
    ready = False
    next_slow = start + 1
    limit = 20 * total
    while not stop and time.monotonic() - start < seconds:
        for key, _ in h.sel.select(timeout=0.1):
            s = key.fileobj
            if s not in h.conns:
                continue
            if not h.conns[s][1]:
                h.established(s)
            else:
                h.readable(s, limit if ready else 0)
        now = time.monotonic()
        if not ready and (h.count_up() == total or now - start > 10):
            ready = True
            with open(ready_file, "w") as f:
                f.write(f"{h.count_up()}\n")
            print(f"hold: {h.count_up()} of {total} established after {now - start:.1f} s", flush=True)
        if now >= next_slow:
            h.read_slow(limit if ready else 0)
            next_slow += 1
            with open(ready_file + ".tally", "w") as f:
                f.write(f"{h.closed['idle']} {h.timeouts}\n")
    print(f"hold: {h.count_up()} held at the end; reopened {h.reopens}; closed by the daemon: "
          f"idle {h.closed['idle']}, half-sent {h.closed['half']}, slow readers {h.closed['slow']}; "
          f"slow readers read {h.slow_bytes} bytes", flush=True)


def run_delay_ns(path):
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def daemon_run_delay_ns(pid):
    """The daemon's threads' waits for a CPU so far: the metrics thread's, and the
    engine's holders' (a scrape waits for the engine's lock while they hold it)."""
    return sum(run_delay_ns(path) for path in glob.glob(f"/proc/{pid}/task/*/schedstat"))


def one_scrape(port):
    """Seconds to a whole answer (status 200 and its Content-Length of body), or SCRAPE_TIMEOUT_S."""
    start = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=SCRAPE_TIMEOUT_S)
        s.settimeout(max(0.1, SCRAPE_TIMEOUT_S - (time.monotonic() - start)))
        s.sendall(REQUEST)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed before the head")
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise OSError(head.split(b"\r\n")[0].decode(errors="replace"))
        length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed before the body's end")
            body += chunk
        s.close()
        return time.monotonic() - start, None
    except (OSError, socket.timeout) as e:
        return SCRAPE_TIMEOUT_S, str(e)


def quantiles(ms):
    xs = sorted(ms)
    if not xs:
        return "none"
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]
    return (f"n={len(xs)} min={xs[0]:.1f} p50={q(0.5):.1f} p90={q(0.9):.1f} p99={q(0.99):.1f} "
            f"max={xs[-1]:.1f} ms")


def scrape(port, pid, count, bound_ms, max_scrapes, out_json):
    own = "/proc/thread-self/schedstat"
    measure_only = bound_ms <= 0
    scrapes, run = [], []
    verdict = 2
    start = time.monotonic()
    while len(scrapes) < max_scrapes and time.monotonic() - start < 90:
        before = daemon_run_delay_ns(pid) + run_delay_ns(own)
        took_s, error = one_scrape(port)
        waited_ms = (daemon_run_delay_ns(pid) + run_delay_ns(own) - before) / 1e6
        ms = took_s * 1e3
        entry = {"ms": round(ms, 2), "cpu_wait_ms": round(waited_ms, 2), "error": error}
        scrapes.append(entry)
        if measure_only:
            continue
        if ms <= bound_ms and not error:
            run.append(ms)
            if len(run) == count:
                verdict = 0
                break
            continue
        explained = not error and ms - waited_ms <= bound_ms
        print(f"scrape {len(scrapes)}: {ms:.1f} ms ({waited_ms:.1f} ms waiting for a CPU)"
              f"{': ' + error if error else ''}{', the machine was busy: a new run' if explained else ''}")
        if not explained:
            verdict = 1
            break
        run = []
    judged = run if verdict == 0 else [e["ms"] for e in scrapes]
    print(f"scrapes: {len(scrapes)} in all; {'the run of ' + str(count) if verdict == 0 else 'all'}: "
          f"{quantiles(judged)}")
    print("scrape ms: " + " ".join(f"{e['ms']:.1f}" for e in scrapes))
    with open(out_json, "w") as f:
        json.dump({"scrapes": scrapes, "run_ms": run, "verdict": verdict}, f)
    return verdict


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "hold":
        a = sys.argv
        hold(int(a[2]), int(a[3]), int(a[4]), int(a[5]), float(a[6]), a[7])
        return 0
    if len(sys.argv) == 8 and sys.argv[1] == "scrape":
        a = sys.argv
        return scrape(int(a[2]), int(a[3]), int(a[4]), float(a[5]), int(a[6]), a[7])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
