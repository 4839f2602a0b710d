#!/usr/bin/env bash
# The manual pages format without a warning (groff -man -ww) and stay in
# step with the programs: every command connscope lists has its entry,
# every option each --help shows is in the page, and every cause and
# condition a report names is listed by the --help texts and the pages with
# the same line.
# integration: plain build
# (it formats pages and reads --help texts: a sanitizer adds nothing)
source "$(dirname "$0")/lib.sh"
man_dir=$(cd "$(dirname "$0")/../../man" && pwd)

for page in "$man_dir"/connscope.8 "$man_dir"/connscoped.8; do
  groff -man -ww -z "$page" 2>"$CS_TMP/groff.err" || fail "groff failed on $page"
  [[ ! -s $CS_TMP/groff.err ]] || { cat "$CS_TMP/groff.err"; fail "groff warns about $page"; }
  echo "ok: groff -man -ww: $(basename "$page") without a warning"
done

# options_of HELP_TEXT_FILE: every long option it names, one per line
options_of() { grep -oE -- '--[a-z][a-z0-9-]*' "$1" | sort -u; }
# in_page PAGE OPTION: the option appears in the page (roff escapes each '-')
in_page() { grep -qF -- "$(printf '%s' "$2" | sed 's/-/\\-/g')" "$1"; }

checked=0
"$CS_BIN" help >"$CS_TMP/help.txt"
commands=$(awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' "$CS_TMP/help.txt")
[[ -n $commands ]] || fail "no commands in 'connscope help'"
for command in $commands; do
  grep -qx "\.B $command" "$man_dir/connscope.8" || fail "connscope.8 has no entry for command '$command'"
  [[ $command == help || $command == version ]] && continue
  "$CS_BIN" "$command" --help >"$CS_TMP/$command.txt" || fail "connscope $command --help failed"
  for option in $(options_of "$CS_TMP/$command.txt"); do
    in_page "$man_dir/connscope.8" "$option" || fail "connscope.8 lacks $option (connscope $command --help shows it)"
    checked=$((checked + 1))
  done
done
echo "ok: connscope.8 has every command ($(echo $commands)) and their $checked options"

"$CS_BUILD/connscoped" --help >"$CS_TMP/connscoped.txt"
checked=0
for option in $(options_of "$CS_TMP/connscoped.txt"); do
  in_page "$man_dir/connscoped.8" "$option" || fail "connscoped.8 lacks $option (connscoped --help shows it)"
  checked=$((checked + 1))
done
assert_cmp "$checked" '>=' 9 "connscoped.8 has every option of connscoped --help"
# The config keys are the long options: each named in the page.
for key in port pid name cgroup metrics sample-hz ring-mb verbose; do
  grep -qE "^\.B(R)? $(printf '%s' "$key" | sed 's/-/\\\\-/g')( |$)" "$man_dir/connscoped.8" ||
    fail "connscoped.8 does not name config key $key"
done
echo "ok: connscoped.8 names every config key"

# Every cause and condition: the names a report carries (a recorded trace's
# JSON: tail.causes[].cause, conditions{}'s keys), each listed by the --help
# of attach, report and connscoped with its line from the table of words
# (daemon/render/words.c), and in each page as ".B NAME" over that line.
fixture=$(cd "$(dirname "$0")/../fixtures" && pwd)/s1.cstrace
"$CS_BIN" report "$fixture" --json >"$CS_TMP/report.json" || fail "connscope report $fixture --json failed"
python3 - "$CS_TMP/report.json" >"$CS_TMP/kinds.txt" <<'PY' || fail "no causes or conditions in the report"
import json, sys
report = json.load(open(sys.argv[1]))
causes = [c["cause"] for c in report["tail"]["causes"]]
conditions = list(report["conditions"])
if not causes or not conditions:
    sys.exit(1)
for name in causes:
    print("cause", name)
for name in conditions:
    print("condition", name)
PY
"$CS_BIN" attach --help >"$CS_TMP/attach.txt"
"$CS_BIN" report --help >"$CS_TMP/report-help.txt"
# line_of HELP KIND NAME: NAME's line in HELP's list of KIND (cause or condition)
line_of() {
  awk -v kind="$2" -v name="$3" '
    /^Causes of/ { list = "cause"; next }
    /^Conditions behind/ { list = "condition"; next }
    list == kind && $1 == name { sub(/^  [^ ]+ +/, ""); print; exit }' "$1"
}
# in_page_as PAGE NAME LINE: ".B NAME" in PAGE, the line after it LINE (roff escapes each '-')
in_page_as() {
  # (Through the environment: awk -v reads escapes, and "\-" is "-" to gawk, kept by mawk.)
  NAME=".B $2" LINE="$(printf '%s' "$3" | sed 's/-/\\-/g')" awk '
    prev == ENVIRON["NAME"] && $0 == ENVIRON["LINE"] { found = 1 } { prev = $0 } END { exit !found }' "$1"
}
listed=0
while read -r kind name; do
  summary=$(line_of "$CS_TMP/attach.txt" "$kind" "$name")
  [[ -n $summary ]] || fail "connscope attach --help does not list $kind $name"
  [[ $(line_of "$CS_TMP/report-help.txt" "$kind" "$name") == "$summary" ]] ||
    fail "connscope report --help does not list $kind $name as attach does"
  [[ $(line_of "$CS_TMP/connscoped.txt" "$kind" "$name") == "$summary" ]] ||
    fail "connscoped --help does not list $kind $name as connscope attach does"
  for page in "$man_dir"/connscope.8 "$man_dir"/connscoped.8; do
    in_page_as "$page" "$name" "$summary" ||
      fail "$(basename "$page") does not list $kind $name with its line: '$summary'"
  done
  listed=$((listed + 1))
done <"$CS_TMP/kinds.txt"
# The report's causes and conditions are every one the table has: none listed beyond them.
for help in "$CS_TMP/attach.txt" "$CS_TMP/connscoped.txt"; do
  shown=$(awk '/^(Causes of|Conditions behind)/ { on = 1; next } on && /^  [a-z]/ { n++ } END { print n + 0 }' "$help")
  assert_cmp "$shown" '==' "$listed" "$(basename "$help" .txt): the causes and conditions of a report, no more"
done
echo "ok: the --help texts and both pages list the $listed causes and conditions a report has, each with its line"
