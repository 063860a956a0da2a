#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages clairfs needs to build, test and benchmark.
# Idempotent: packages already installed are skipped, so a second run makes
# no network access at all.
set -euo pipefail

build_pkgs=(g++ meson ninja-build pkg-config libfuse3-dev fuse3 libmpich-dev
  mpich libaio-dev nlohmann-json3-dev doctest-dev)
test_pkgs=(python3 bindfs procps)
want=("${build_pkgs[@]}")
case "${1:-build}" in
build) ;;
test) want+=("${test_pkgs[@]}") ;;
*)
  echo "usage: $0 [build|test]" >&2
  exit 2
  ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || {
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
