#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What one file costs when it comes from the SSD tier: read by the kernel
# itself from the entry's file (passthrough, the default as root) against
# read through the daemon (--no-passthrough) and a native directory on the
# same disk. 5,000 files of 110 KB, unregistered, --mem 16M (the RAM tier
# holds a few), read four times first so that every entry is stored and
# verified; then three warm passes (page cache hot) and one cold one
# (caches dropped), each timed by bench/read_files (1 MiB read() calls).
#   sudo bash bench/ssd_passthrough_cost.sh [WORKDIR]   (default /var/tmp/clairfs-ssd-cost)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLAIRFS_BUILD_DIR:-build}
w=${1:-/var/tmp/clairfs-ssd-cost}
mkdir -p "$w/data" "$w/mnt"
if [ ! -f "$w/list.native" ]; then
  python3 - "$w/data" <<'PY'
import os, random, sys
r = random.Random(1)
for i in range(5000):
    d = os.path.join(sys.argv[1], f"c{i % 50}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{i:05d}.jpg"), "wb") as f:
        f.write(r.randbytes(110_000))
PY
  find "$w/data" -type f | sort > "$w/list.native"
  sed "s#^$w/data#$w/mnt#" "$w/list.native" > "$w/list.mnt"
fi
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
for mode in passthrough no-passthrough; do
  rm -rf "$w/cache"; mkdir -p "$w/cache"
  opts=(--mem 16M --no-detect --cache-dir "$w/cache")
  [ "$mode" = no-passthrough ] && opts+=(--no-passthrough)
  "$build/src/clairfs" mount "$w/data" "$w/mnt" "${opts[@]}" 2>/dev/null
  for _ in 1 2 3 4; do "$build/bench/read_files" "$w/list.mnt" >/dev/null; sleep 2; drop; done
  echo "$mode warm:"; "$build/bench/read_files" "$w/list.mnt" --passes 3
  drop
  echo "$mode cold:"; "$build/bench/read_files" "$w/list.mnt"
  "$build/src/clairfs" status "$w/mnt" --json |
    python3 -c "import json,sys; s=json.load(sys.stdin); print('ssd.kernel', s['ssd']['kernel'])"
  "$build/src/clairfs" umount "$w/mnt"
done
echo "native warm:"; "$build/bench/read_files" "$w/list.native" --passes 3
drop
echo "native cold:"; "$build/bench/read_files" "$w/list.native"
