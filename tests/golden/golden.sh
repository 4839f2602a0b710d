#!/usr/bin/env bash
# The reports of every recorded trace in tests/fixtures, compared with the
# ones kept in tests/golden/out: text, JSON, the slowest requests,
# intervals and a diff. Text byte for byte; JSON value for value
# (json_same.py: key order and number spelling may change, nothing else).
# A change to how connscope analyses or prints must show here as a
# reviewed change to those files.
#
# usage: golden.sh check BUILD     (fails on any difference, printing it)
#        golden.sh update BUILD    (rewrites tests/golden/out)
set -u
mode=${1:?usage: golden.sh check|update BUILD}
build=${2:?usage: golden.sh check|update BUILD}
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/../fixtures
out=$here/out
cs=$build/connscope
[[ -x $cs ]] || { echo "golden: $cs is missing: build it first" >&2; exit 2; }

# name|command arguments (FIX is the fixture directory)
cases() {
  local f base
  for f in "$fixtures"/*.cstrace; do
    base=$(basename "$f" .cstrace)
    echo "$base.txt|report $f"
    echo "$base.json|report $f --json"
    echo "$base.slowest.txt|report $f --slowest 3"
    echo "$base.slowest.json|report $f --json --slowest 3"
    echo "$base.interval.txt|report $f --interval 1"
  done
  echo "diff-s5.txt|diff $fixtures/s5close.cstrace $fixtures/s5keep.cstrace"
  echo "diff-s5.json|diff $fixtures/s5close.cstrace $fixtures/s5keep.cstrace --json"
  echo "diff-s4.txt|diff $fixtures/s4a.cstrace $fixtures/s4b.cstrace"
}

tmp=$(mktemp -d /tmp/connscope-golden.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[[ $mode == update ]] && mkdir -p "$out"
failed=0 checked=0
json_pairs=() # KEPT NEW ...: compared at the end, in one json_same.py
while IFS='|' read -r name args; do
  # shellcheck disable=SC2086 # the arguments are words by design
  if ! "$cs" $args >"$tmp/$name" 2>"$tmp/$name.err"; then
    echo "golden: connscope $args failed:"; cat "$tmp/$name.err"; failed=$((failed + 1)); continue
  fi
  # The fixtures' paths differ between checkouts: keep them relative.
  sed -i "s|$fixtures/|fixtures/|g" "$tmp/$name"
  checked=$((checked + 1))
  if [[ $mode == update ]]; then
    cp "$tmp/$name" "$out/$name"
  elif [[ $name == *.json ]]; then
    json_pairs+=("$out/$name" "$tmp/$name")
  elif ! diff -u "$out/$name" "$tmp/$name" >"$tmp/$name.diff"; then
    echo "golden: $name differs (connscope $args):"; head -n 40 "$tmp/$name.diff"
    failed=$((failed + 1))
  fi
done < <(cases)
if [[ ${#json_pairs[@]} -gt 0 ]]; then
  python3 "$here/json_same.py" "${json_pairs[@]}"
  differ=$?
  checked=$((checked - differ)) failed=$((failed + differ))
fi
# No verdict of the fixtures' reports may contradict its evidence.
if ! python3 "$here/../integration/consistent.py" --reports-in "$tmp"; then
  echo "golden: a report's verdict contradicts its evidence (consistent.py)"
  failed=$((failed + 1))
fi
if [[ $failed -gt 0 ]]; then
  echo "golden: $failed of $((checked + failed)) outputs differ (after a reviewed change: bash tests/golden/golden.sh update $build)"
  exit 1
fi
echo "golden: $checked outputs as kept"
