#!/usr/bin/env python3
"""The path each of connscope's kept slow requests asked, from the client's
log: a request is told by its connection (the client's port, the
server's peer_port) and its number on it (index, from 0), the order of
that port's lines in csload's --log (one request at a time on each).

usage: kept_paths.py CLIENT_LOG SLOWEST_JSON
prints "path upstream_wait_us total_us" for each kept request joined to
an upstream exchange ("-" for a request the log has no line for).
"""
import collections
import json
import sys


def main():
    paths = collections.defaultdict(list)
    with open(sys.argv[1]) as log:
        for fields in sorted((line.split() for line in log), key=lambda f: int(f[1])):
            paths[int(fields[4])].append(fields[6])
    with open(sys.argv[2]) as report:
        slowest = json.load(report)["slowest"]
    for s in slowest:
        if not s["upstream"]:
            continue
        asked = paths[s["peer_port"]]
        path = asked[s["index"]] if s["index"] < len(asked) else "-"
        print(path, s["upstream"]["wait_us"], s["total_us"])


if __name__ == "__main__":
    main()
