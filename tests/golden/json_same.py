#!/usr/bin/env python3
"""json_same.py KEPT NEW [KEPT NEW]...: exit 0 when each pair of files holds
the same JSON value, else the number of pairs that differ.

The same value, not the same bytes: key order and number spelling (1.000
against 1.0) may change when the writer changes; the keys, the strings, the
lists' order and the numbers (within 1e-9, relative) may not. Each
difference is printed with its path, under the name of the pair's NEW file
when there are several pairs. Pairs are checked in one process: a Python
start costs more than the comparison.
"""
import json
import math
import sys


def diffs(kept, new, path="$"):
    if isinstance(kept, bool) or isinstance(new, bool):
        if kept is not new:
            yield f"{path}: {kept!r} became {new!r}"
    elif isinstance(kept, (int, float)) and isinstance(new, (int, float)):
        if not math.isclose(kept, new, rel_tol=1e-9, abs_tol=1e-12):
            yield f"{path}: {kept!r} became {new!r}"
    elif isinstance(kept, dict) and isinstance(new, dict):
        for key in kept.keys() - new.keys():
            yield f"{path}.{key}: gone"
        for key in new.keys() - kept.keys():
            yield f"{path}.{key}: new"
        for key in kept.keys() & new.keys():
            yield from diffs(kept[key], new[key], f"{path}.{key}")
    elif isinstance(kept, list) and isinstance(new, list):
        if len(kept) != len(new):
            yield f"{path}: {len(kept)} items became {len(new)}"
        for i, (k, n) in enumerate(zip(kept, new)):
            yield from diffs(k, n, f"{path}[{i}]")
    elif kept != new:
        yield f"{path}: {kept!r} became {new!r}"


def differs(kept_path, new_path, named):
    """Print the pair's differences (40 at most); True if there are any."""
    with open(kept_path) as kept_file, open(new_path) as new_file:
        kept, new = json.load(kept_file), json.load(new_file)
    found = list(diffs(kept, new))
    if found and named:
        print(f"{new_path} differs from {kept_path}:")
    for line in found[:40]:
        print(line)
    return bool(found)


def main():
    paths = sys.argv[1:]
    if not paths or len(paths) % 2:
        sys.exit("usage: json_same.py KEPT NEW [KEPT NEW]...")
    pairs = list(zip(paths[0::2], paths[1::2]))
    failed = [pair for pair in pairs if differs(*pair, named=len(pairs) > 1)]
    sys.exit(min(len(failed), 100))


if __name__ == "__main__":
    main()
