#!/usr/bin/env python3
"""Every command the test scripts run is installed by scripts/deps.sh's
test set, or comes with every Debian system (its essential packages).

A test that calls a tool nobody installs passes on the machine where it
was written and fails on a fresh one. This reads the shell scripts of
tests/integration/ and scripts/ (not the Python or other code inside
their here-documents), takes the word in each command position, and
reports the words that are neither a shell builtin or keyword, a function
or variable the scripts define, a program the project builds, nor in the
two lists. Exit 1 names them, with the file and line.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Essential packages (coreutils, bash, grep, sed, findutils, util-linux's
# essential part, mawk, gzip, tar, diffutils, hostname, debianutils, ...).
ESSENTIAL = set("""
cat cp mv rm ln ls mkdir rmdir touch chmod chown head tail wc sort uniq cut tr tee
seq sleep date env printf echo test true false basename dirname readlink realpath
mktemp nproc id stat du df sync yes dd od sha256sum md5sum expr timeout nice nohup
comm paste join split fold tac numfmt shuf base64 install truncate kill
grep egrep sed awk mawk find xargs bash sh gzip zcat tar diff cmp hostname which
uname more mount umount dmesg sysctl getconf ionice renice flock logger mkfifo
setpriv unshare nsenter prlimit findmnt script dpkg dpkg-query apt-get systemctl
""".split())

SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function select time
return exit break continue local declare typeset readonly export unset shift set
source . eval exec trap wait read cd pwd pushd popd alias type command builtin
let printf echo test [ [[ ]] ]] { } ! : true false getopts hash ulimit umask
mapfile readarray jobs disown fg bg kill shopt caller compgen complete times
""".split())

# Words after which the next word is a command (their options skipped).
WRAPPERS = {"timeout", "taskset", "setsid", "nice", "env", "exec", "command", "ionice",
            "cs_bg", "nohup", "time", "xargs", "script", "chrt", "stdbuf", "sudo", "!"}


def deps_commands():
    text = (ROOT / "scripts/deps.sh").read_text()
    names = set()
    for block in re.findall(r"_commands=\((.*?)\)", text, re.S):
        names.update(entry.split()[0] for entry in re.findall(r'"([^"]+)"', block))
    return names


def built_programs():
    """Programs the Makefiles build (connscope, csserver, csload, ...)."""
    return {"connscope", "connscoped", "csserver", "csload", "csidle", "floor", "trace_amplify"}


def strip_heredocs(lines):
    """Yields (number, line) outside here-document bodies."""
    end = None
    for number, line in enumerate(lines, 1):
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*(['\"]?)([A-Za-z_]+)\1", line)
        if m and not re.search(r"<<<", line):
            end = m.group(2)
        yield number, line


def code_lines(lines):
    """Yields (number, code, continued) for each line: the shell code without
    comments and quoted text (each quoted string a placeholder word, _Q_),
    but with the command substitutions inside double quotes, which run
    commands; continued when the line starts inside a quoted string."""
    stack = ["code"]   # code, sq, dq, or sub: $( ... ) with its open parens
    parens = []
    joined = False     # the line before ended with a backslash
    array = False      # inside a multi-line array: name=( ... )
    for number, line in lines:
        continued = stack[-1] in ("sq", "dq") or joined or array
        joined = line.rstrip().endswith("\\")
        if stack[-1] == "code" and re.match(r"\s*[A-Za-z_][A-Za-z0-9_]*\+?=\(", line) and ")" not in line:
            array = True
            continue
        if array:
            array = ")" not in line
            continue
        line = re.sub(r"\$?\(\((?:[^()]|\([^()]*\))*\)\)", " _A_ ", line)    # arithmetic
        line = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\+?=\([^()]*\)", " _A_ ", line)  # an array
        out, i = [], 0
        while i < len(line):
            c, top = line[i], stack[-1]
            if top in ("code", "sub"):
                if c == "#" and (i == 0 or line[i - 1].isspace()):
                    break
                if c == "'":
                    stack.append("sq")
                elif c == '"':
                    stack.append("dq")
                elif c == "\\":
                    i += 1
                elif top == "sub" and c == "(":
                    parens[-1] += 1
                    out.append(c)
                elif top == "sub" and c == ")":
                    if parens[-1]:
                        parens[-1] -= 1
                        out.append(c)
                    else:
                        stack.pop(); parens.pop()
                        out.append(" ; ")
                elif line.startswith("$(", i) and not line.startswith("$((", i):
                    stack.append("sub"); parens.append(0)
                    out.append(" ; ")
                    i += 1
                else:
                    out.append(c)
            elif top == "sq":
                if c == "'":
                    stack.pop()
                    out.append(" _Q_ ")
            else:  # dq
                if c == "\\":
                    i += 1
                elif c == '"':
                    stack.pop()
                    out.append(" _Q_ ")
                elif line.startswith("$(", i) and not line.startswith("$((", i):
                    stack.append("sub"); parens.append(0)
                    out.append(" ; ")
                    i += 1
            i += 1
        yield number, "".join(out), continued


def command_words(code):
    # Command positions: line start, after | || && ; ( $( { ` and keywords.
    parts = re.split(r"\|\||&&|[|;`&]|\(|\{|\bthen\b|\bdo\b|\belse\b", code)
    for part in parts:
        words = part.split()
        i = 0
        while i < len(words):
            word = words[i]
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word) or word in ("if", "while", "until", "!", "time"):
                i += 1
                continue
            if word in WRAPPERS:
                i += 1
                # skip the wrapper's options and their values (timeout 60, taskset -c 0)
                while i < len(words) and (words[i].startswith("-") or re.fullmatch(r"[0-9.,]+[smhd]?", words[i])):
                    i += 1
                if i < len(words):
                    yield from command_words(" ".join(words[i:]))
                break
            yield word
            break


def main():
    known = ESSENTIAL | SHELL_WORDS | deps_commands() | built_programs()
    scripts = sorted((ROOT / "tests/integration").glob("*.sh")) + sorted((ROOT / "scripts").glob("*.sh"))
    defined = set()
    for path in scripts:
        for line in path.read_text().splitlines():
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)", line)
            if m:
                defined.add(m.group(1))
    unknown = []
    for path in scripts:
        for number, code, continued in code_lines(strip_heredocs(path.read_text().splitlines())):
            if continued:  # inside a quoted string: not a command position
                code = ";" + code.split(";", 1)[1] if ";" in code else ""
            for word in command_words(code):
                word = word.strip("\"")
                if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", word):
                    continue  # "$VAR", paths, redirections: not a named command
                if word in known or word in defined:
                    continue
                unknown.append("%s:%d: %s" % (path.relative_to(ROOT), number, word))
    if unknown:
        print("commands the tests run that scripts/deps.sh's test set does not install "
              "(add them to its test_commands and test_packages):", file=sys.stderr)
        print("\n".join("  " + u for u in unknown), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
