#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages clairfs needs to build, test and benchmark.
# Idempotent: packages already installed are skipped, so a second run makes
# no network access at all.
set -euo pipefail

build_pkgs=(g++ meson ninja-build pkg-config libfuse3-dev fuse3 libmpich-dev
  mpich libaio-dev libxxhash-dev nlohmann-json3-dev doctest-dev)
# The mount tests use Debian's /usr/bin/python3 (stdlib only), pgrep,
# setpriv/unshare and mount; the order tests compare with real torch and
# torchvision (never python3-mpi4py: it pulls in OpenMPI over MPICH), and
# the dataset generator's test decodes its JPEGs with PIL; the
# benchmarks compare with bindfs, mergerfs and rclone, and the end-to-end
# harness (bench/scenarios.py) needs PIL for its JPEGs, matplotlib for its
# plot and e2fsprogs for the throttled loop-device file system.
# scripts/fuzz.sh builds with clang; its libFuzzer runtime is a package
# named by clang's major version, which the unversioned clang does not pull
# in: the candidate clang's version, else Debian 12's 14 or 13's 19.
clang_rt() {
  local major
  major=$(apt-cache policy clang 2>/dev/null |
    sed -n 's/ *Candidate: \([0-9]*:\)\{0,1\}\([0-9]*\).*/\2/p')
  if [ -z "$major" ]; then
    case "$(cut -d. -f1 /etc/debian_version 2>/dev/null)" in
    13) major=19 ;;
    *) major=14 ;;
    esac
  fi
  echo "libclang-rt-$major-dev"
}
test_pkgs=(python3 procps util-linux mount python3-torch python3-torchvision python3-pil
  clang "$(clang_rt)")
bench_pkgs=(python3 procps bindfs mergerfs rclone python3-matplotlib python3-pil
  e2fsprogs)
want=("${build_pkgs[@]}")
case "${1:-build}" in
build) ;;
test) want+=("${test_pkgs[@]}") ;;
bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
*)
  echo "usage: $0 [build|test|bench]" >&2
  exit 2
  ;;
esac

mapfile -t want < <(printf '%s\n' "${want[@]}" | sort -u)
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
