#!/usr/bin/env bash
# Lists the hooks connscope's probes attach to, as FLOOR_HOOK() lines for
# bench/floor.bpf.c: the floor benchmark then follows bpf/connscope.bpf.c
# as it changes. Left out: maps, the license, the iterators (run only when
# the daemon walks listeners or threads, never on the server's path) and
# net_dev_start_xmit (attached only while an answer drains: see
# daemon/source/probes.c; the loads here never hold bytes back) and
# sched_waking (attached only once a reader parked a request; these loads'
# readers answer before they poll again).
set -euo pipefail
src=${1:?usage: floor_hooks.sh bpf/connscope.bpf.c}
grep -o 'SEC("[^"]*")' "$src" |
	sed -e 's/^SEC("\(.*\)")$/\1/' |
	grep -v -e '^license$' -e '^\.maps$' -e '^iter/' -e '^tp_btf/net_dev_start_xmit$' \
		-e '^tp_btf/sched_waking$' |
	sed -e 's/.*/FLOOR_HOOK("&")/'
