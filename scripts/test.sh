#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's test command: installs what is missing, builds with warnings
# as errors, and runs every test (unit and real-mount). Mount tests need root
# or a usable fusermount3; they skip (exit 77) only where the machine lacks
# /dev/fuse. Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
# In CI a machine without a usable /dev/fuse must fail, not pass with every
# mount test skipped: a green run that tested nothing is the worse outcome.
if [ "${CI:-}" = true ] && ! { [ -c /dev/fuse ] && : 2<>/dev/fuse; } 2>/dev/null; then
  echo "test: /dev/fuse is missing or cannot be opened; CI needs FUSE to run the mount tests" >&2
  exit 1
fi
bash scripts/build.sh
build=${CLAIRFS_BUILD_DIR:-build}
exec meson test -C "$build" --print-errorlogs --num-processes 1 "$@"
