#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (tests/fuzz) with clang in their own build
# directory and runs each from the checked-in seed corpus: for SECONDS
# (default 60), or with --runs N for the seeds and then N inputs more (the
# test suite's fuzz_smoke: a fixed amount of work, so a loaded machine
# makes it slower, never shallower). Prints, per target, the executions and
# the coverage the seeds reached and the run ended with (libFuzzer's cov:
# edges, ft: features); exits non-zero on any crash, leak, timeout or broken
# invariant, keeping the input in $CLAIRFS_FUZZ_DIR/<target>/ (default
# build-fuzz/fuzz-runs).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: $0 [SECONDS | --runs N]" >&2
  exit 2
}
seconds=60 max_runs=
case ${1:-} in
--runs) max_runs=${2:-} ;;
'') ;;
*) seconds=$1 ;;
esac
case ${max_runs:-$seconds} in '' | *[!0-9]*) usage ;; esac
if [ -n "$max_runs" ]; then
  bound=(-runs="$max_runs") label="$max_runs runs"
else
  bound=(-max_total_time="$seconds") label="${seconds}s"
fi

# clang and its libFuzzer runtime are in install-deps.sh's test list.
install_clang() {
  local probe='extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }'
  if ! command -v clang++ >/dev/null ||
    ! echo "$probe" | clang++ -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    bash scripts/install-deps.sh test
  fi
}

build_targets() {
  local build=build-fuzz
  local out
  if [ ! -f "$build/build.ninja" ]; then
    # meson says what is wrong on stdout: show it when setup fails (a
    # source file the fuzz build lists and the tree no longer has, say).
    if ! out=$(CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false -Dwerror=true 2>&1); then
      printf '%s\n' "$out" | tail -20 >&2
      echo "fuzz: configuring $build failed (above)" >&2
      rm -rf "$build"
      return 1
    fi
  fi
  # Only the fuzz targets: the daemon itself stays a g++ build.
  # Quiet when it works; ninja prints a failure on stdout, so show it then.
  if ! out=$(ninja -C "$build" "${targets[@]/#/tests/fuzz/}" 2>&1); then
    printf '%s\n' "$out" | tail -40 >&2
    echo "fuzz: building the fuzz targets failed (above)" >&2
    return 1
  fi
}

# One target for its bound from a copy of its seed corpus; prints its line
# and returns libFuzzer's status.
run_target() {
  local name=$1 dir="$runs/$1" log rc=0
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  cp tests/fuzz/corpus/"${name#fuzz_}"/* "$dir/corpus/"
  log="$dir/log"
  local dict=() words="$PWD/tests/fuzz/${name#fuzz_}.dict"
  [ -f "$words" ] && dict=(-dict="$words")
  (cd "$dir" && "$OLDPWD/build-fuzz/tests/fuzz/$name" "${bound[@]}" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=4096 "${dict[@]}" \
    corpus) >"$log" 2>&1 || rc=$?
  local execs cov ft seeded
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  # libFuzzer's INITED line: the coverage of the seed corpus alone.
  seeded=$(grep -m1 'INITED' "$log" | grep -o 'cov: [0-9]*' | cut -d' ' -f2)
  printf 'fuzz: %-14s %-11s %9s execs  cov %5s (seeds %5s)  ft %6s  %s\n' "$name" "$label" \
    "${execs:-?}" "${cov:-?}" "${seeded:-?}" "${ft:-?}" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc, see $log)")"
  if [ $rc -ne 0 ]; then grep -m5 -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" >&2 || true; fi
  return $rc
}

targets=(fuzz_control fuzz_options fuzz_manifest fuzz_journal fuzz_frames)
runs=$(realpath -m "${CLAIRFS_FUZZ_DIR:-build-fuzz/fuzz-runs}")
install_clang
build_targets
# As many targets at once as there are cores: each is one process, so on
# two cores four targets of 30 s take a minute rather than two. Each line is printed once its target is done, in order.
parallel=$(nproc 2>/dev/null || echo 1)
failed=0
pids=() outs=()
for t in "${targets[@]}"; do
  out=$(mktemp)
  outs+=("$out")
  run_target "$t" >"$out" 2>&1 &
  pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "${outs[$i]}"
  rm -f "${outs[$i]}"
done
exit $failed
