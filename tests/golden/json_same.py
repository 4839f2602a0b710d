#!/usr/bin/env python3
"""json_same.py KEPT NEW: exit 0 when the two files hold the same JSON value.

The same value, not the same bytes: key order and number spelling (1.000
against 1.0) may change when the writer changes; the keys, the strings, the
lists' order and the numbers (within 1e-9, relative) may not. Each
difference is printed with its path.
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


def main():
    with open(sys.argv[1]) as kept_file, open(sys.argv[2]) as new_file:
        kept, new = json.load(kept_file), json.load(new_file)
    found = list(diffs(kept, new))
    for line in found[:40]:
        print(line)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
