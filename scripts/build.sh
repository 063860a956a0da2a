#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures (once) and builds clairfs into $CLAIRFS_BUILD_DIR (default: build).
# Warnings are errors here, as in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLAIRFS_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true >/dev/null
elif [ subprojects/libfuse/.fetched -nt "$build/build.ninja" ]; then
  # libfuse 3.18 was unpacked (install-deps.sh) after this directory was
  # configured against the system's: meson would not look again by itself.
  meson setup --reconfigure "$build" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "build: $(pwd)/$build/src/clairfs"
