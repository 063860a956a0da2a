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
exec meson test -C "$build" --print-errorlogs --num-processes 1 "$@"
