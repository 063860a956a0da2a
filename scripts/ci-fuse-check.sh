#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI's FUSE guard, the first thing scripts/test.sh runs: in CI (CI=true) a
# machine whose /dev/fuse is missing or cannot be opened must fail, not pass
# with every mount test skipped: a green run that tested nothing is the worse
# outcome. One line on stderr, exit 1. Outside CI it checks nothing (the mount
# tests skip themselves there). CLAIRFS_FUSE_DEVICE names another device
# path, for the guard's own test (tests/scripts/test_ci_guard.sh).
set -euo pipefail
dev=${CLAIRFS_FUSE_DEVICE:-/dev/fuse}
if [ "${CI:-}" = true ] && ! { [ -c "$dev" ] && : 2<>"$dev"; } 2>/dev/null; then
  echo "test: $dev is missing or cannot be opened; CI needs FUSE to run the mount tests" >&2
  exit 1
fi
