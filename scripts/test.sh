#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's test command: installs what is missing, builds with warnings
# as errors, and runs every test (unit and real-mount). Mount tests need root
# or a usable fusermount3; they skip (exit 77) only where the machine lacks
# /dev/fuse. Extra arguments go to `meson test` (e.g. --suite unit).
# --quick runs meson's suite `quick` alone: the unit tests and a few
# real-mount tests, one or two per area (`quick` in tests/**/meson.build),
# about 2-3 minutes of tests on 2 cores, under 5 with an incremental build.
# It ends with the ten slowest tests and the total test time, failed or not.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
for arg in "$@"; do
  if [ "$arg" = --quick ]; then
    args+=(--suite quick)
  else
    args+=("$arg")
  fi
done
# In CI a machine without a usable /dev/fuse fails here, with one line,
# before minutes of installing and building.
bash scripts/ci-fuse-check.sh
bash scripts/install-deps.sh test
bash scripts/build.sh
build=${CLAIRFS_BUILD_DIR:-build}

# Mounts run over FUSE over io_uring where the kernel has it, as CI's do
# (scripts/lib/io-uring-switch.sh; CLAIRFS_TEST_IO_URING=off for /dev/fuse).
# shellcheck source=scripts/lib/io-uring-switch.sh
. scripts/lib/io-uring-switch.sh
io_uring_switch test "$build"
if [ -n "$io_uring_restore" ]; then
  trap 'eval "$io_uring_restore"' EXIT
  trap 'exit 130' INT TERM
fi
echo "test: mounts use $transport"

# The ten slowest tests of this run and their total time, from meson's
# testlog.json (testlog-SETUP.json under --setup): only one written since
# $2, so a run that stopped before its tests shows no older run's times.
slowest() {
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
logs = [p for p in glob.glob(os.path.join(sys.argv[1], "testlog*.json"))
        if os.path.getmtime(p) >= float(sys.argv[2])]
if not logs:
    sys.exit(0)
with open(max(logs, key=os.path.getmtime)) as f:
    rows = [json.loads(line) for line in f if line.strip()]
rows.sort(key=lambda r: -r["duration"])
total = sum(r["duration"] for r in rows)
print("test: the ten slowest tests (of %d, total %.1f s):" % (len(rows), total))
for r in rows[:10]:
    # "clairfs:suite / name": the name alone, and a result other than OK.
    result = "" if r["result"] == "OK" else "  " + r["result"]
    print("  %6.1f s  %s%s" % (r["duration"], r["name"].split(" / ", 1)[-1], result))
PY
}
rc=0
started=$(date +%s.%N)
# Two processes, but only the pure computations take the second (tests/
# meson.build says which): every mount and unit test runs alone.
meson test -C "$build" --print-errorlogs --num-processes 2 "${args[@]}" || rc=$?
echo "test: mounts used $transport"
slowest "$build/meson-logs" "$started" || true
exit $rc
