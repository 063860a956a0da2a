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
#
# The whole run (no arguments) runs in two phases. First the pure
# computations (suite `computation`: the order tests against real torch and
# TensorFlow, the fuzz smoke test, the dataset generator's checks), then
# the unit tests and the fault tests (which mostly wait for the faults they
# inject), one at a time, beside the real-mount tests of the areas whose
# tests wait on a slow file system and on framework jobs (suites prefetch,
# mount, python, ranges, docs), also one at a time: those leave about 40%
# of two cores idle, which the other side takes. Then the rest alone, as
# before: stress and the benchmark checks, which load the machine or
# measure. Every test keeps to the rules of tests/README.md
# under two busy loops (scripts/flake-hunt.sh), a heavier load than a
# neighbour. About five minutes less on two cores (tests/README.md).
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
# At exit, however it comes: the computations still running (an
# interrupted whole run) are stopped, and the io_uring switch restored.
computing=
finish() {
  if [ -n "$computing" ]; then kill "$computing" 2>/dev/null || true; fi
  if [ -n "$io_uring_restore" ]; then eval "$io_uring_restore"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM
echo "test: mounts use $transport"

# The ten slowest tests of this run and their total time, from meson's
# testlog*.json (one per phase of a whole run; testlog-SETUP.json under
# --setup): only those written since $2, so a run that stopped before its
# tests shows no older run's times.
slowest() {
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
logs = [p for p in glob.glob(os.path.join(sys.argv[1], "testlog*.json"))
        if os.path.getmtime(p) >= float(sys.argv[2])]
if not logs:
    sys.exit(0)
rows = []
for p in logs:
    with open(p) as f:
        rows += [json.loads(line) for line in f if line.strip()]
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
if [ ${#args[@]} -gt 0 ]; then
  # Two processes, but only the pure computations take the second (tests/
  # meson.build says which): every mount and unit test runs alone.
  meson test -C "$build" --print-errorlogs --num-processes 2 "${args[@]}" || rc=$?
else
  # The whole run, in two phases (above). Built already: two meson test
  # processes must not both run ninja in one build directory. The
  # computations' output goes to a file, shown once they end, so that the
  # log reads one test at a time.
  beside=(--suite prefetch --suite mount --suite python --suite ranges --suite docs)
  computed="$build/meson-logs/computation.txt"
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 1 \
    --suite computation --suite unit --suite faults --logbase testlog-computation \
    >"$computed" 2>&1 &
  computing=$!
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 1 \
    "${beside[@]}" --logbase testlog-mounts || rc=$?
  crc=0
  wait "$computing" || crc=$?
  computing=
  echo "test: the computations, unit and fault tests, run beside the tests above (exit $crc):"
  cat "$computed"
  [ "$crc" -eq 0 ] || rc=$crc
  rest=(--no-suite computation --no-suite unit --no-suite faults)
  for s in "${beside[@]}"; do [ "$s" = --suite ] || rest+=(--no-suite "$s"); done
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 1 \
    "${rest[@]}" --logbase testlog-rest || rc=$?
fi
echo "test: mounts used $transport"
slowest "$build/meson-logs" "$started" || true
exit $rc
