#!/usr/bin/env python3
"""Files and functions a reader can hold: no .c or .h file over
MAX_FILE_LINES lines (but the wire format, EXEMPT_FILES) and no function
over MAX_FUNCTION_LINES lines (in .c and .h files: the BPF object's parts
are headers), in the given folders. A Criterion test, `Test(suite, name)`
and its body, is a function.

A function runs from the line of its name to its closing brace at column 0
(the tree's style: `name(args)` then `{` and `}` alone at column 0). Data
tables (`... = {` at column 0) are not functions and are not counted.

usage: test_sizes.py [--list] DIR... [functions:DIR]...
  functions:DIR  only the function limit there (BPF objects, benches and
                 tests may be long files)
  --list         print what is over, longest first, without failing
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
# A definition's first line: a name and '(' at its top level, no ';' and no
# '=' (a declaration or a table).
SIGNATURE = re.compile(r"^[A-Za-z_][\w\s\*,()]*?\b(\w+)\s*\(")
# A Criterion test's first line: Test(suite, name[, options]).
TEST = re.compile(r"^(?:Test|ParameterizedTest)\s*\(\s*(\w+)\s*,\s*(\w+)")
# The one header every side shares (BPF, daemon, tools, tests): the wire
# format, whose records and their rules are read together.
EXEMPT_FILES = {os.path.join("bpf", "connscope.h")}


def functions(path):
    with open(path, errors="replace") as source:
        lines = source.read().split("\n")
    start = name = None
    for number, line in enumerate(lines, 1):
        if start is None:
            test = TEST.match(line)
            if test:
                start, name = number, f"Test({test.group(1)}, {test.group(2)})"
                continue
            match = SIGNATURE.match(line)
            if match and not line.rstrip().endswith(";") and "=" not in line.split("(")[0]:
                start, name = number, match.group(1)
            continue
        if line.startswith("}"):
            yield name, start, number - start + 1
            start = None
        elif line.rstrip().endswith(";") and not line.startswith((" ", "\t", "{")):
            start = None  # a prototype spread over several lines


def main():
    args = sys.argv[1:]
    listing = "--list" in args
    dirs = [a for a in args if a != "--list"]
    problems = []
    for top in dirs:
        whole_files = not top.startswith("functions:")
        top = top.removeprefix("functions:")
        for root, _, files in os.walk(top):
            for file in sorted(files):
                if not file.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, file)
                with open(path, errors="replace") as source:
                    count = source.read().count("\n")
                if whole_files and count > MAX_FILE_LINES and os.path.normpath(path) not in EXEMPT_FILES:
                    problems.append((count, f"{path}: {count} lines (at most {MAX_FILE_LINES})"))
                for name, start, length in functions(path):
                    if length > MAX_FUNCTION_LINES:
                        shown = name if name.startswith("Test(") else f"{name}()"
                        problems.append((length, f"{path}:{start}: {shown} is {length} lines (at most {MAX_FUNCTION_LINES})"))
    for _, text in sorted(problems, reverse=True):
        print(text)
    if problems and not listing:
        print(f"sizes: {len(problems)} file(s) or function(s) too long: split them by what they do")
        sys.exit(1)


if __name__ == "__main__":
    main()
