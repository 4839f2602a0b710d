#!/usr/bin/env bash
# Installs the Debian packages connscope needs to build, test and demo.
# Root: apt-get installs what is missing. Not root: names the packages and
# exits 1, so the user knows exactly what to ask for.
set -euo pipefail

packages=(
  make gcc clang pkg-config
  libbpf-dev bpftool libelf-dev zlib1g-dev
  libcriterion-dev libncurses-dev
  wrk apache2-utils nginx libbpf-tools iproute2 procps python3
  valgrind clang-tidy cppcheck libclang-rt-14-dev
  prometheus curl
  bpftrace time
  chromium tesseract-ocr
  groff-base
  tomcat10 libnetty-java
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "connscope: missing Debian packages: ${missing[*]}" >&2
  echo "connscope: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "connscope: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Server packages are test targets, started by the tests in private
# directories: never a system service left running or enabled.
if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
  systemctl disable --now tomcat10 >/dev/null 2>&1 || true
fi
