#!/usr/bin/env bash
# Lists the hooks connscope's probes attach to, as FLOOR_HOOK() lines for
# bench/floor.bpf.c: the floor benchmark then follows bpf/connscope.bpf.c
# and its parts (bpf/*.bpf.h) as they change. Left out: maps, the license, the iterators (run only when
# the daemon walks listeners or threads, never on the server's path) and
# net_dev_start_xmit (attached only while an answer drains: see
# daemon/source/probes.c; the loads here never hold bytes back) and
# sched_waking (attached only once a reader parked a request; these loads'
# readers answer before they poll again).
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: floor_hooks.sh bpf/connscope.bpf.c bpf/*.bpf.h" >&2; exit 2; }
grep -ho 'SEC("[^"]*")' "$@" |
	sed -e 's/^SEC("\(.*\)")$/\1/' |
	grep -v -e '^license$' -e '^\.maps$' -e '^iter/' -e '^tp_btf/net_dev_start_xmit$' \
		-e '^tp_btf/sched_waking$' |
	sed -e 's/.*/FLOOR_HOOK("&")/'
