#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""daemon/'s rooms keep the data flow one-way.

Usage: test_includes.py [ROOM ...]   (earliest first; default: the
Makefile's DAEMON_ROOMS)

Every file under daemon/ sits in a room, daemon/ROOM/. A file may include
the headers of its own room and of earlier rooms, never those of a later
one: the engine does not know the analysis, the analysis does not know how
it is rendered. Headers outside daemon/ (bpf/connscope.h, the wire
records, and the generated BPF skeletons) are open to every room. cli/ and
the tests may include anything, so they are not read.

Includes are bare ("engine.h"): the build puts every room on the include
path, so a header's name is unique across rooms and says its room.

Prints file:line for each include that breaks a rule; exits 1 if any does.
"""

import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DAEMON = os.path.join(ROOT, "daemon")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Open to every room: the wire records and the bpftool skeletons.
OPEN_HEADERS = {name for name in os.listdir(os.path.join(ROOT, "bpf")) if name.endswith(".h")}
SKELETON = re.compile(r"^[a-z0-9_]+\.skel\.h$")


def makefile_rooms():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^DAEMON_ROOMS\s*:?=\s*(.*)$", line)
            if m:
                return m.group(1).split()
    sys.exit("test_includes: no DAEMON_ROOMS in the Makefile")


def main():
    rooms = sys.argv[1:] or makefile_rooms()
    rank = {room: i for i, room in enumerate(rooms)}
    errors = []

    # Every source file's room; every header's room by its name.
    files = []      # (path relative to ROOT, room)
    header_room = {}
    for dirpath, _, names in os.walk(DAEMON):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), ROOT)
            parts = path.split(os.sep)
            if len(parts) != 3 or parts[1] not in rank:
                errors.append(f"{path}: not in a room: daemon/ROOM/{name}, ROOM one of {' '.join(rooms)}")
                continue
            room = parts[1]
            files.append((path, room))
            if name.endswith(".h"):
                if name in header_room:
                    errors.append(f"{path}: {name} is also in daemon/{header_room[name]}/: "
                                  "bare includes need one header of a name")
                header_room.setdefault(name, room)

    for path, room in sorted(files):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                header = m.group(1)
                where = f"{path}:{lineno}"
                if "/" in header:
                    errors.append(f'{where}: #include "{header}": includes are bare names '
                                  "(every room is on the include path)")
                    continue
                if header in header_room:
                    other = header_room[header]
                    if rank[other] > rank[room]:
                        errors.append(f'{where}: #include "{header}": {room} must not include a '
                                      f"header of {other}, a later room ({' < '.join(rooms)})")
                elif header not in OPEN_HEADERS and not SKELETON.match(header):
                    errors.append(f'{where}: #include "{header}": in no room, not in bpf/, '
                                  "not a BPF skeleton")

    for error in errors:
        print(error)
    if errors:
        print(f"test_includes: {len(errors)} problem(s) with daemon/'s rooms", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
