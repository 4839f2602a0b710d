#!/usr/bin/env bash
# The manual pages format without a warning (groff -man -ww) and stay in
# step with the programs: every command connscope lists has its entry, and
# every option each --help shows is in the page.
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
