#!/usr/bin/env bash
# Runs the Criterion unit tests under valgrind memcheck, in parallel.
#   usage: valgrind-unit-tests.sh UNIT_TESTS LOG_DIR JOBS ["SUITE ..."]
# With a list of suites, only those run (`make test` runs a subset).
#
# Criterion runs each test in a child it starts by re-executing the test
# binary, so valgrind follows exec'd children (--trace-children=yes). Under
# valgrind, one Criterion runner starts its tests one after another whatever
# --jobs says, and each test process costs valgrind about a second to start;
# so the suites are split into JOBS groups of about equal test counts, one
# runner per group, side by side (an extglob --filter per group).
#
# A child's valgrind exit status does not fail its test (Criterion judges a
# test by its assertions), so the verdict is valgrind's per-process logs:
# with -q they hold only errors and definite or indirect leaks, and any
# non-empty log fails the run. --read-inline-info=no saves a third of each
# start-up (stacks then show no inlined frames); --vgdb=no, the gdbserver
# polling nobody uses here.
set -uo pipefail
tests=${1:?usage: valgrind-unit-tests.sh UNIT_TESTS LOG_DIR JOBS}
logs=${2:?log directory}
jobs=${3:-2}
only=" ${4:-} "

rm -rf "$logs" && mkdir -p "$logs"

# "suite: N tests" lines -> JOBS extglob patterns, largest suites first,
# each to the group with the fewest tests so far.
mapfile -t patterns < <("$tests" --list | awk -v n="$jobs" -v only="$only" '
	/^[^ ]+: [0-9]+ tests?$/ {
		sub(":", "", $1)
		if (only == "  " || index(only, " " $1 " "))
			suite[$1] = $2
	}
	END {
		for (i = 0; i < n; i++) { load[i] = 0; group[i] = "" }
		while (length(suite)) {
			best = ""
			for (s in suite) if (best == "" || suite[s] > suite[best]) best = s
			g = 0
			for (i = 1; i < n; i++) if (load[i] < load[g]) g = i
			group[g] = group[g] (group[g] == "" ? "" : "|") best
			load[g] += suite[best]
			delete suite[best]
		}
		for (i = 0; i < n; i++) if (group[i] != "") print "@(" group[i] ")/*"
	}')
[[ ${#patterns[@]} -gt 0 ]] || { echo "valgrind: no test suites listed by $tests" >&2; exit 1; }

pids=()
for i in "${!patterns[@]}"; do
	valgrind -q --trace-children=yes --read-inline-info=no --vgdb=no \
		--leak-check=full --errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect --log-file="$logs/vg.%p" \
		"$tests" --filter "${patterns[$i]}" >"$logs/runner.$i.out" 2>&1 &
	pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || failed=1
	echo "  ${patterns[$i]}: $(grep -h 'Synthesis' "$logs/runner.$i.out" | sed 's/.*Synthesis: //')"
done
if [[ $failed -ne 0 ]]; then
	cat "$logs"/runner.*.out
	echo "test-valgrind: unit tests failed under valgrind" >&2
	exit 1
fi
if grep -q . "$logs"/vg.*; then
	grep -H . "$logs"/vg.*
	echo "test-valgrind: valgrind errors or leaks above (logs in $logs)" >&2
	exit 1
fi
echo "test-valgrind: no error, no leak"
