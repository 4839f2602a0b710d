#!/usr/bin/env bash
# Lists the hooks connscope's probes attach to, as FLOOR_HOOK() lines for
# bench/floor.bpf.c: the floor benchmark then follows bpf/connscope.bpf.c
# as it changes. Left out: maps, the license, and iter/tcp (run only when
# the daemon walks the listeners, never on the server's path).
set -euo pipefail
src=${1:?usage: floor_hooks.sh bpf/connscope.bpf.c}
grep -o 'SEC("[^"]*")' "$src" |
	sed -e 's/^SEC("\(.*\)")$/\1/' |
	grep -v -e '^license$' -e '^\.maps$' -e '^iter/' |
	sed -e 's/.*/FLOOR_HOOK("&")/'
