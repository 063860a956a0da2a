#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs meson tests again and again on a loaded machine, to make a flaky test
# fail where a quiet machine lets it pass (issue 46):
#
#   bash scripts/flake-hunt.sh [options] TEST... [-- MESON_TEST_ARGS...]
#
#   -n, --runs N     runs of each test (default 10; a bare number says the
#                    same: `flake-hunt.sh mount_parity 20`)
#   --busy K         busy loops alongside (default 2, one per core here;
#                    0 for none)
#   --hog[=PCT]      also hold PCT% of MemTotal (default 30), every page
#                    touched, for the page cache and the RAM tiers to feel
#   --results DIR    where the logs go (default a new /tmp/flake-hunt.XXXXXX)
#   --rebuild        build first (scripts/build.sh); without it nothing is
#                    rebuilt, and an out-of-date build is only warned about
#   -h, --help       this text
#
# Each run is `meson test -C BUILD --no-rebuild --print-errorlogs TEST`
# (BUILD: $CLAIRFS_BUILD_DIR, default build), one run at a time, TESTs in
# turn; arguments after `--` go to each of them (e.g. -t 2). Each run's own
# output (the testlog's stdout) is saved as DIR/TEST.RUN.log, meson's
# console as DIR/TEST.RUN.meson.out. It ends with the passes and failures
# of each test and the log of every failed run. The load starts before the
# first run and is killed on exit, however the script ends. The mounts use
# FUSE over io_uring where the kernel has it, as scripts/test.sh's (CI's)
# do; CLAIRFS_TEST_IO_URING=off runs them over /dev/fuse.
# Exit status: 0 only if every run passed (a skip is not a pass), 1 if any
# did not, 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}
die() {
  echo "flake-hunt: $*" >&2
  echo "flake-hunt: see --help" >&2
  exit 2
}

runs=10 busy=2 hog=0 results='' rebuild=0
tests=() meson_args=()
while [ $# -gt 0 ]; do
  case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
  -n | --runs)
    [ $# -ge 2 ] || die "$1 needs a number"
    runs=$2
    shift
    ;;
  --runs=*) runs=${1#*=} ;;
  --busy)
    [ $# -ge 2 ] || die "$1 needs a number"
    busy=$2
    shift
    ;;
  --busy=*) busy=${1#*=} ;;
  --hog) hog=30 ;;
  --hog=*) hog=${1#*=} ;;
  --results)
    [ $# -ge 2 ] || die "$1 needs a directory"
    results=$2
    shift
    ;;
  --results=*) results=${1#*=} ;;
  --rebuild) rebuild=1 ;;
  --)
    shift
    meson_args=("$@")
    break
    ;;
  -*) die "unknown option $1" ;;
  *[!0-9]*) tests+=("$1") ;;
  *) runs=$1 ;;
  esac
  shift
done
number() { case "$2" in '' | *[!0-9]*) die "$1 must be a whole number, not '$2'" ;; esac }
number "runs" "$runs"
number "--busy" "$busy"
number "--hog" "$hog"
[ "$runs" -ge 1 ] || die "runs must be at least 1"
[ "$hog" -le 90 ] || die "--hog above 90% would starve the tests themselves"
[ ${#tests[@]} -gt 0 ] || die "no test named (meson test -C BUILD --list lists them)"

build=${CLAIRFS_BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || die "$build is not a configured build directory (CLAIRFS_BUILD_DIR)"
if [ "$rebuild" = 1 ]; then
  bash scripts/build.sh
elif [ -n "$(ninja -C "$build" -n 2>/dev/null | grep '^\[' || true)" ]; then
  echo "flake-hunt: warning: $build is out of date; its current binaries run (--rebuild builds first)" >&2
fi
known=$(meson test -C "$build" --no-rebuild --list 2>/dev/null | sed 's/.* \/ //')
for t in "${tests[@]}"; do
  grep -qxF -- "$t" <<<"$known" || die "no test named '$t' in $build"
done

if [ -z "$results" ]; then
  results=$(mktemp -d "${TMPDIR:-/tmp}/flake-hunt.XXXXXX")
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)

# The load: K busy loops, and the hog, which touches every page it holds
# and then says so, so that the first run starts on a loaded machine.
load=()
stop_load() {
  if [ ${#load[@]} -gt 0 ]; then
    kill "${load[@]}" 2>/dev/null || true
    wait "${load[@]}" 2>/dev/null || true
    load=()
  fi
}
# An interrupted run's meson logs go too (finished runs' go after saving).
# The mounts use the transport scripts/test.sh gives CI's run: io_uring
# where the kernel has it (CLAIRFS_TEST_IO_URING=off for /dev/fuse).
# shellcheck source=scripts/lib/io-uring-switch.sh
. scripts/lib/io-uring-switch.sh
io_uring_switch flake-hunt "$build"
trap 'stop_load; rm -f "$build/meson-logs/flake-hunt-$$-"*; eval "$io_uring_restore"' EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < busy; i++)); do
  sh -c 'while :; do :; done' &
  load+=("$!")
done
if [ "$hog" -gt 0 ]; then
  rm -f "$results/.hog-ready"
  python3 - "$hog" "$results/.hog-ready" <<'PY' &
import signal, sys
with open("/proc/meminfo") as f:
    total = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal:"))
held = bytearray(total * int(sys.argv[1]) // 100)
for i in range(0, len(held), 4096):
    held[i] = 1
open(sys.argv[2], "w").close()
signal.pause()
PY
  load+=("$!")
  for ((i = 0; i < 600; i++)); do
    [ -e "$results/.hog-ready" ] && break
    kill -0 "${load[-1]}" 2>/dev/null || die "the memory hog died (too little memory for --hog=$hog?)"
    sleep 0.2
  done
  [ -e "$results/.hog-ready" ] || die "the memory hog did not fill $hog% of MemTotal in 2 minutes"
  rm -f "$results/.hog-ready"
fi
held=''
[ "$hog" = 0 ] || held=", $hog% of MemTotal held"
echo "flake-hunt: ${#tests[@]} test(s) x $runs runs, $busy busy loop(s)$held; logs in $results"
echo "flake-hunt: mounts use $transport"

# One run's testlog entry to DIR/TEST.RUN.log; prints its result and time.
save_log() {
  python3 - "$1" "$2" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    rows = [json.loads(line) for line in f if line.strip()]
r = rows[-1]
with open(sys.argv[2], "w") as out:
    out.write("# %s: %s (exit %s) in %.1f s\n# %s\n" % (
        r["name"], r["result"], r["returncode"], r["duration"], " ".join(r["command"])))
    out.write(r.get("stdout") or "")
    if r.get("stderr"):
        out.write("\n# stderr\n" + r["stderr"])
print(r["result"], "%.1f" % r["duration"])
PY
}

declare -A passed failed skipped
failures=()
for t in "${tests[@]}"; do
  passed[$t]=0 failed[$t]=0 skipped[$t]=0
  for ((run = 1; run <= runs; run++)); do
    base=flake-hunt-$$-$t-$run
    rc=0
    meson test -C "$build" --no-rebuild --print-errorlogs --logbase "$base" \
      "${meson_args[@]}" "$t" >"$results/$t.$run.meson.out" 2>&1 || rc=$?
    json=$(find "$build/meson-logs" -maxdepth 1 -name "$base*.json" | head -n 1)
    if [ -n "$json" ]; then
      summary=$(save_log "$json" "$results/$t.$run.log") || summary="ERROR(unreadable-testlog) -"
      read -r result seconds <<<"$summary"
    else
      result="ERROR(meson exit $rc, no testlog)" seconds=-
      cp "$results/$t.$run.meson.out" "$results/$t.$run.log"
    fi
    rm -f "$build/meson-logs/$base"*
    case "$result" in
    OK) passed[$t]=$((passed[$t] + 1)) ;;
    SKIP) skipped[$t]=$((skipped[$t] + 1)) ;;
    *)
      failed[$t]=$((failed[$t] + 1))
      failures+=("$results/$t.$run.log")
      ;;
    esac
    echo "flake-hunt: $t run $run/$runs: $result ($seconds s)"
  done
done
stop_load

for log in "${failures[@]}"; do
  echo
  echo "==================== $log"
  cat "$log"
done
echo
bad=0
for t in "${tests[@]}"; do
  echo "flake-hunt: $t: ${passed[$t]} passed, ${failed[$t]} failed, ${skipped[$t]} skipped of $runs"
  [ "${passed[$t]}" = "$runs" ] || bad=1
done
echo "flake-hunt: logs in $results"
exit $bad
