#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/<target>/.

Seeds are small (a few KB) so that libFuzzer mutates them quickly:
  fuzz_trace       recorded traces cut from tests/fixtures/*.cstrace: the
                   file header, a run of whole records from the start and
                   from the middle, and the summary; one without its
                   summary and one cut inside a record.
  fuzz_engine      the same runs of records without the file around them.
  fuzz_http_parse  a read size byte, then what a client sends.
  fuzz_metrics_request  a read size byte, a head limit byte (16 bytes a
                   step), then what a scraper (or anyone else) sends.

Run from the repository root: python3 tests/fuzz/make_corpus.py
Regression inputs for bugs the fuzzers found are committed beside the
seeds under names starting with "regress-" and are not touched here.
"""
import glob
import os
import struct

HEADER = 288   # struct cs_trace_header
SUMMARY = 72   # struct cs_trace_summary
SUMMARY_TYPE = 0x7F01
SLICE_BYTES = 3000


def records(body):
    """Split the record stream after the file header into (type, bytes)."""
    out, at = [], 0
    while at + 16 <= len(body):
        rtype, size = struct.unpack_from("<HH", body, at + 8)
        if size < 16 or at + size > len(body):
            break
        out.append((rtype, body[at:at + size]))
        at += size
    return out


def run_from(recs, start):
    """Whole records from index start, up to SLICE_BYTES."""
    out, total = [], 0
    for rtype, rec in recs[start:]:
        if rtype == SUMMARY_TYPE or total + len(rec) > SLICE_BYTES:
            break
        out.append(rec)
        total += len(rec)
    return b"".join(out)


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def trace_seeds(root):
    for path in sorted(glob.glob(os.path.join(root, "tests/fixtures/*.cstrace"))):
        name = os.path.basename(path)[:-len(".cstrace")]
        data = open(path, "rb").read()
        header, body = data[:HEADER], data[HEADER:]
        recs = records(body)
        summary = [r for t, r in recs if t == SUMMARY_TYPE]
        summary = summary[0] if summary else b""
        # A slice from the middle too: the bulk of a run's requests and closes.
        starts = {"head": 0, "mid": len(recs) // 2}
        # Different record types start each slice: look for the first request.
        first_request = next((i for i, (t, _) in enumerate(recs) if t == 6), None)
        if first_request is not None:
            starts["req"] = first_request
        for label, start in starts.items():
            run = run_from(recs, start)
            write(os.path.join(root, "tests/fuzz/corpus/fuzz_trace"), f"{name}-{label}", header + run + summary)
            write(os.path.join(root, "tests/fuzz/corpus/fuzz_engine"), f"{name}-{label}", run)
        run = run_from(recs, 0)
        write(os.path.join(root, "tests/fuzz/corpus/fuzz_trace"), f"{name}-nosummary", header + run)
        write(os.path.join(root, "tests/fuzz/corpus/fuzz_trace"), f"{name}-cut", header + run[:len(run) - 7])


HTTP_SEEDS = {
    "get": (1, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    "get-bytewise": (0, b"GET /index.html?x=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: csload\r\nAccept: */*\r\n\r\n"),
    "http10-keepalive": (7, b"GET /work?us=500 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
    "close": (15, b"HEAD /static HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive, close\r\n\r\n"),
    "pipelined": (31, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\n\r\n"),
    "body": (9, b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
    "content-length-twice": (3, b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
    "chunked": (5, b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    "bare-lf": (2, b"\r\n\nGET / HTTP/1.1\nHost: x\n\n"),
    "obs-fold": (4, b"GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n"),
    "space-before-colon": (6, b"GET / HTTP/1.1\r\nHost : x\r\n\r\n"),
    "bad-version": (8, b"GET / HTTP/2.0\r\n\r\n"),
    "tls-hello": (63, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    "utf8-target": (11, "GET /caf\u00e9 HTTP/1.1\r\nX-V: \u00e9t\u00e9 \t\r\n\r\n".encode()),
    "big-content-length": (12, b"GET / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n"),
    "cr-split": (0, b"GET / HTTP/1.1\r\nHost: x\r\n\r"),
}


def http_seeds(root):
    for name, (step, text) in HTTP_SEEDS.items():
        write(os.path.join(root, "tests/fuzz/corpus/fuzz_http_parse"), name, bytes([step]) + text)


PROMETHEUS_SCRAPE = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\n"
                     b"Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     b"version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
                     b"Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n")
METRICS_SEEDS = {
    "prometheus": (63, 255, PROMETHEUS_SCRAPE),
    "prometheus-bytewise": (0, 255, PROMETHEUS_SCRAPE),
    "prometheus-kept-alive": (17, 255, PROMETHEUS_SCRAPE * 3),
    "curl": (5, 255, b"GET /metrics HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"),
    "http10-head": (9, 255, b"HEAD /metrics?x=1 HTTP/1.0\nConnection: keep-alive\n\n"),
    "absolute-form": (3, 255, b"GET http://h:1/metrics HTTP/1.1\r\nHost: h:1\r\nConnection: close\r\n\r\n"),
    "post": (7, 255, b"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"),
    "not-found": (7, 255, b"GET /metrics/x HTTP/1.1\r\nHost: a\r\n\r\n"),
    "too-large": (63, 2, b"GET /metrics?" + b"q" * 80 + b" HTTP/1.1\r\n\r\n"),
    "no-host": (1, 255, b"GET /metrics HTTP/1.1\r\n\r\n"),
    "obs-fold": (4, 255, b"GET /metrics HTTP/1.1\r\nHost: a\r\n  folded\r\n\r\n"),
    "tls-hello": (63, 255, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    "stray-crlf": (2, 255, b"\r\n\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r"),
}


def metrics_seeds(root):
    for name, (step, limit, text) in METRICS_SEEDS.items():
        write(os.path.join(root, "tests/fuzz/corpus/fuzz_metrics_request"), name, bytes([step, limit]) + text)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    trace_seeds(root)
    http_seeds(root)
    metrics_seeds(root)
