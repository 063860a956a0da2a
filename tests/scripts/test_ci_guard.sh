#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/ci-fuse-check.sh, the CI guard of scripts/test.sh: with CI=true a
# FUSE device that is missing, not a character device, or a character device
# that cannot be opened fails with exactly one stderr line naming it; a
# usable character device (/dev/null stands in) passes; outside CI nothing is
# checked. And scripts/test.sh itself stops on the guard, before installing
# anything. CLAIRFS_FUSE_DEVICE points the guard at each case.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
guard="$root/scripts/ci-fuse-check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checked=0

# expect RC LINES ENV... : runs the guard (or $cmd) with the environment given.
cmd=(bash "$guard")
expect() {
  local rc_want=$1 lines_want=$2 rc=0
  shift 2
  env -u CI "$@" "${cmd[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  checked=$((checked + 1))
  if [ "$rc" -ne "$rc_want" ] || [ "$lines" -ne "$lines_want" ] ||
    { [ "$lines_want" -eq 1 ] && ! grep -q "^test: .*${CLAIRFS_FUSE_DEVICE_SHOWN:-} is missing or cannot be opened" "$tmp/err"; }; then
    echo "FAIL [$*] ${cmd[*]}: exit $rc (want $rc_want), $lines stderr lines (want $lines_want):"
    sed 's/^/    /' "$tmp/err"
    fails=$((fails + 1))
  else
    echo "ok [$*]: exit $rc${lines_want:+, $(head -c 200 "$tmp/err")}"
  fi
}

touch "$tmp/regular-file"
CLAIRFS_FUSE_DEVICE_SHOWN=$tmp/missing expect 1 1 CI=true CLAIRFS_FUSE_DEVICE="$tmp/missing"
CLAIRFS_FUSE_DEVICE_SHOWN=$tmp/regular-file expect 1 1 CI=true CLAIRFS_FUSE_DEVICE="$tmp/regular-file"
expect 0 0 CI=true CLAIRFS_FUSE_DEVICE=/dev/null
expect 0 0 CLAIRFS_FUSE_DEVICE="$tmp/missing"            # not CI: nothing checked
expect 0 0 CI=false CLAIRFS_FUSE_DEVICE="$tmp/missing"
# A character device node with no driver behind it (major 240 is reserved for
# local use): it exists, but open() fails with ENXIO, as /dev/fuse does in a
# container that may not use it. Needs root for mknod.
if mknod "$tmp/dead-device" c 240 77 2>/dev/null && [ -c "$tmp/dead-device" ] &&
  ! { : 2<>"$tmp/dead-device"; } 2>/dev/null; then
  CLAIRFS_FUSE_DEVICE_SHOWN=$tmp/dead-device expect 1 1 CI=true CLAIRFS_FUSE_DEVICE="$tmp/dead-device"
else
  echo "note: no unopenable character device could be made here (not root?); that case is not checked"
fi
# scripts/test.sh stops on the guard first: one line, no install-deps output.
cmd=(bash "$root/scripts/test.sh")
CLAIRFS_FUSE_DEVICE_SHOWN=$tmp/missing expect 1 1 CI=true CLAIRFS_FUSE_DEVICE="$tmp/missing"
if [ -s "$tmp/out" ]; then
  echo "FAIL scripts/test.sh printed on stdout before the guard stopped it:"
  sed 's/^/    /' "$tmp/out"
  fails=$((fails + 1))
fi

echo "$((checked - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
