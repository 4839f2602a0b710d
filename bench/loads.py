"""The loads: each runs once against 127.0.0.1:port, bounded in time, and
returns {"rps": requests (or connections) per second, "p99_us", "errors"}."""
import re
import subprocess

from common import pin


def parse_wrk_time_us(value, unit):
    return float(value) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def run_wrk(port, args, pinned=True, seconds_s=None):
    seconds_s = seconds_s or args.wrk_seconds
    out = subprocess.run([*pin("load", pinned), "wrk", "-t2", "-c50", f"-d{seconds_s}s", "--latency",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         timeout=seconds_s + 30).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return {"rps": float(rps.group(1)) if rps else None,
            "p99_us": parse_wrk_time_us(*p99.groups()) if p99 else None,
            "errors": errors.group(0) if errors else ""}


def parse_ab(out):
    rps = re.search(r"Requests per second:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+(\d+)", out, re.M)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    errors = " ".join(x for x in (f"failed {failed.group(1)}" if failed and failed.group(1) != "0" else "",
                                  f"non-2xx {non2xx.group(1)}" if non2xx else "") if x)
    return {"rps": float(rps.group(1)) if rps else None,
            "p99_us": float(p99.group(1)) * 1e3 if p99 else None,  # ab: whole ms
            "errors": errors}


def ab_command(port, seconds_s, requests, concurrency=50):
    # -t bounds a run on a slow (busy) machine; -n after it keeps the count.
    return ["ab", "-q", "-t", str(seconds_s), "-n", str(requests), "-c", str(concurrency), "-s", "10",
            f"http://127.0.0.1:{port}/"]


def run_ab(port, args, pinned=True, seconds_s=None):
    """ab -c50: with seconds_s, a run of that length (-n beyond what it reaches);
    without, -n --ab-requests cut at --ab-seconds."""
    if seconds_s:
        cmd = ab_command(port, seconds_s, 50000 * seconds_s)
    else:
        cmd = ab_command(port, args.ab_seconds, args.ab_requests)
    out = subprocess.run([*pin("load", pinned), *cmd], capture_output=True, text=True,
                         timeout=(seconds_s or args.ab_seconds) + 60).stdout
    return parse_ab(out)


def run_churn(port, args, pinned=True, seconds_s=None):
    """Connections per request at the highest rate this machine reaches: csidle --churn
    (connect, GET with Connection: close, read to EOF, close), 2 threads of 64 in
    flight, over 32 source addresses (no ephemeral-port exhaustion)."""
    seconds_s = seconds_s or args.wrk_seconds
    out = subprocess.run([*pin("load", pinned), f"{args.build}/bench/csidle", "--port", str(port),
                          "--churn", str(seconds_s), "--threads", "2", "--parallel", "64",
                          "--sources", "32"], capture_output=True, text=True,
                         timeout=seconds_s + 60).stdout
    m = re.search(r"churn (\d+) in ([\d.]+) s = (\d+)/s, errors (\d+)", out)
    return {"rps": float(m.group(3)) if m else None, "p99_us": None,
            "errors": f"errors {m.group(4)}" if m and m.group(4) != "0" else ("" if m else "no output")}


LOADS = {
    "wrk": ("wrk -t2 -c50 keep-alive", run_wrk),
    "ab": ("ab -c50 no keep-alive", run_ab),
    "churn": ("churn: csidle 2x64 conn/req", run_churn),
}
