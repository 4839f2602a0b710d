#!/usr/bin/env bash
# Installs the Debian packages one of connscope's uses needs, and checks
# that the commands it runs are there.
#
#   deps.sh build    compile and install connscope (`make`, `make install`)
#   deps.sh demo     `make demo`: build, and the load generator it drives
#   deps.sh bench    `make bench`: build, and the servers and peers it measures
#   deps.sh test     `make test`: everything any test runs
#   deps.sh --list SET   print the set's packages, one a line
#
# Root: apt-get installs what is missing. Not root: names the packages and
# exits 1, so the user knows exactly what to ask for. An install never
# leaves a server package's service running or enabled when it was not
# before (the tests start their own servers in private directories).
set -euo pipefail

# package sets; each names the packages it adds to build. python3.11-dbg:
# the symbols of Debian's python3 by build-id, which name the interpreter's
# functions in flame graphs (test_gunicorn_pool); it requires python3.11 of
# its own version, so installing it may upgrade the interpreter.
build_packages=(make gcc clang pkg-config libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libncurses-dev libjansson-dev libssl-dev)
demo_packages=(apache2-utils procps)
bench_packages=(apache2-utils wrk nginx bpftrace time python3 util-linux procps linux-perf)
test_packages=(
  libcriterion-dev python3 procps iproute2 util-linux bsdutils curl git
  apache2-utils wrk nginx libbpf-tools bpftrace time
  valgrind clang-tidy clang-format cppcheck libclang-rt-14-dev
  prometheus chromium groff-base tmux
  tomcat10 openjdk-17-jre-headless openjdk-17-jdk-headless libnetty-java jetty9
  openssl nghttp2-client gunicorn golang-go apache2-bin python3.11-dbg
  redis-server redis-tools postgresql mariadb-server mariadb-client haproxy
)

# The commands each set runs, "command package": after an install each
# must be on PATH (a package that moved a command fails here, not in a test
# an hour later). tests/lint/test_commands.py checks that every command the
# tests call is listed here or comes with every Debian system.
test_commands=(
  "python3 python3" "pgrep procps" "ss iproute2" "ip iproute2" "taskset util-linux"
  "setsid util-linux" "script bsdutils" "curl curl" "ab apache2-utils" "wrk wrk"
  "nginx nginx" "bpftrace bpftrace" "valgrind valgrind" "clang-tidy clang-tidy" "clang-format clang-format"
  "cppcheck cppcheck" "promtool prometheus" "chromium chromium" "groff groff-base"
  "tmux tmux" "java openjdk-17-jre-headless" "javac openjdk-17-jdk-headless" "clang clang" "ps procps" "pkill procps"
  "tcplife libbpf-tools" "prometheus prometheus" "git git" "make make"
  "openssl openssl" "h2load nghttp2-client" "chrt util-linux" "gunicorn gunicorn" "go golang-go" "apache2 apache2-bin"
  "redis-server redis-server" "redis-benchmark redis-tools" "redis-cli redis-tools" "runuser util-linux"
  "pg_lsclusters postgresql-common" "mariadbd mariadb-server" "mariadb-install-db mariadb-server" "mysqlslap mariadb-client" "mariadb mariadb-client"
  "haproxy haproxy"
)
demo_commands=("ab apache2-utils")
bench_commands=("ab apache2-utils" "wrk wrk" "nginx nginx" "bpftrace bpftrace" "taskset util-linux" "perf linux-perf")
build_commands=("clang clang" "bpftool bpftool" "gcc gcc" "pkg-config pkg-config")

# Server packages whose Debian service an install enables and starts.
services=(nginx tomcat10 jetty9 jetty9.timer prometheus redis-server postgresql mariadb haproxy)

set_name=${1:-}
if [[ $set_name == --list ]]; then
  set_name=${2:-}
  listing=1
fi
case $set_name in
  build) packages=("${build_packages[@]}"); commands=("${build_commands[@]}") ;;
  demo) packages=("${build_packages[@]}" "${demo_packages[@]}"); commands=("${build_commands[@]}" "${demo_commands[@]}") ;;
  bench) packages=("${build_packages[@]}" "${bench_packages[@]}"); commands=("${build_commands[@]}" "${bench_commands[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}"); commands=("${build_commands[@]}" "${test_commands[@]}") ;;
  *) echo "usage: deps.sh build|demo|bench|test (or --list SET)" >&2; exit 2 ;;
esac
if [[ ${listing:-0} == 1 ]]; then
  printf '%s\n' "${packages[@]}" | sort -u
  exit 0
fi

installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]; }

# One install at a time: `make -j` runs the build's and the tests' sets at
# once, and two apt-gets (and the service bookkeeping below) cannot share
# the machine. The second waits, then finds its packages there.
if [[ $(id -u) -eq 0 ]]; then
  exec 9>/run/lock/connscope-deps.lock
  flock 9
fi

missing=()
for p in $(printf '%s\n' "${packages[@]}" | sort -u); do
  installed "$p" || missing+=("$p")
done

if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "connscope: missing Debian packages for '$set_name': ${missing[*]}" >&2
    echo "connscope: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  # Services of the packages about to be installed: running or enabled now?
  # Whether a unit is enabled is its symlinks, which systemctl reads and
  # writes with or without a running systemd (a container, a microVM): an
  # install enables the unit all the same, for the next boot.
  declare -A had_running=() had_enabled=()
  systemd=0 unit_files=0
  if command -v systemctl >/dev/null; then unit_files=1; fi
  if [[ $unit_files == 1 && -d /run/systemd/system ]]; then systemd=1; fi
  for s in "${services[@]}"; do
    [[ $unit_files == 1 ]] || break
    [[ $systemd == 1 ]] && systemctl is-active --quiet "$s" 2>/dev/null && had_running[$s]=1
    systemctl is-enabled --quiet "$s" 2>/dev/null && had_enabled[$s]=1
  done
  # Packages' maintainer scripts ask policy-rc.d before they start a
  # service: none starts during this install (101: action forbidden).
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
  fi
  trap '[[ $own_policy == 1 ]] && rm -f "$policy"' EXIT
  echo "connscope: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Enabled at install (systemd's presets): back to how it was.
  for s in "${services[@]}"; do
    [[ $unit_files == 1 ]] || break
    [[ -n ${had_enabled[$s]:-} ]] || systemctl disable --quiet "$s" >/dev/null 2>&1 || true
    if [[ $systemd == 1 && -z ${had_running[$s]:-} ]]; then systemctl stop "$s" >/dev/null 2>&1 || true; fi
  done
fi

# Every command the set runs is there now.
absent=()
for entry in "${commands[@]}"; do
  command -v "${entry%% *}" >/dev/null || absent+=("${entry%% *} (package ${entry#* })")
done
if [[ ${#absent[@]} -gt 0 ]]; then
  echo "connscope: commands missing for '$set_name' although their packages are installed: ${absent[*]}" >&2
  exit 1
fi
