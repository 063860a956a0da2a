#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's test command: installs what is missing, builds with warnings
# as errors, and runs every test (unit and real-mount). Mount tests need root
# or a usable fusermount3; they skip (exit 77) only where the machine lacks
# /dev/fuse. Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
# In CI a machine without a usable /dev/fuse fails here, with one line,
# before minutes of installing and building.
bash scripts/ci-fuse-check.sh
bash scripts/install-deps.sh test
bash scripts/build.sh
build=${CLAIRFS_BUILD_DIR:-build}

# FUSE over io_uring (--io-uring auto, the default) is used only while the
# kernel's switch is on, which it is not by default and clairfs never
# turns on. The suite turns it on for its run where the kernel has it
# (CLAIRFS_TEST_IO_URING=off turns it off instead, to run over /dev/fuse),
# puts it back afterwards, and says which transport the mounts used.
switch=/sys/module/fuse/parameters/enable_uring
want=${CLAIRFS_TEST_IO_URING:-on}
case "$want" in
on) value=Y ;;
off) value=N ;;
*)
  echo "test: CLAIRFS_TEST_IO_URING must be on or off, not '$want'" >&2
  exit 2
  ;;
esac
if ! grep -q 'CLAIRFS_HAVE_IO_URING 1' "$build/clairfs_config.h"; then
  transport="/dev/fuse (this build's libfuse has no io_uring: see scripts/install-deps.sh)"
elif [ ! -e "$switch" ]; then
  transport="/dev/fuse (this kernel has no FUSE over io_uring: no $switch)"
else
  was=$(cat "$switch")
  if [ "$was" != "$value" ]; then
    if echo "$value" 2>/dev/null >"$switch"; then
      trap 'echo "$was" >"$switch"' EXIT
      trap 'exit 130' INT TERM
      restored=", $was restored afterwards"
    else
      echo "test: cannot set $switch to $value (not root?); it stays $was" >&2
    fi
  fi
  now=$(cat "$switch")
  if [ "$now" = Y ]; then
    transport="io_uring ($switch is Y for this run${restored:-})"
  else
    transport="/dev/fuse ($switch is $now for this run${restored:-})"
  fi
fi
echo "test: mounts use $transport"
rc=0
meson test -C "$build" --print-errorlogs --num-processes 1 "$@" || rc=$?
echo "test: mounts used $transport"
exit $rc
