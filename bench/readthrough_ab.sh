#!/bin/bash
# SPDX-License-Identifier: MIT
# A/B of the read-through path (--mem 0: every READ goes to the backing
# store) between two clairfs binaries, alternating, on 2,000 files of
# 110 KiB whose backing pages are cached: what one READ round trip costs
# the daemon, not the disk. As root:
#   OLD=path/to/old/clairfs bash bench/readthrough_ab.sh
# (the dataset is made once in /var/tmp/ab).
set -euo pipefail
cd "$(dirname "$0")/.."
old=${OLD:?set OLD to the clairfs binary to compare with}
new=${NEW:-$PWD/build/src/clairfs}
rf=$PWD/build/bench/read_files
mkdir -p /var/tmp/ab/data/c /var/tmp/ab/m
if [ ! -f /var/tmp/ab/list.txt ]; then
  python3 -c "
import os
for i in range(2000):
    open(f'/var/tmp/ab/data/c/{i:05d}.jpg', 'wb').write(os.urandom(110 * 1024))"
  ls /var/tmp/ab/data/c | sed 's|^|/var/tmp/ab/m/c/|' >/var/tmp/ab/list.txt
fi
for rep in 1 2 3 4; do
  for b in old new; do
    bin=${!b}
    $bin mount /var/tmp/ab/data /var/tmp/ab/m --mem 0 >/dev/null 2>&1
    cat /var/tmp/ab/data/c/* > /dev/null
    sync; echo 3 > /proc/sys/vm/drop_caches; cat /var/tmp/ab/data/c/* > /dev/null
    pid=$(pgrep -f "clairfs mount /var/tmp/ab/data")
    t0=$(date +%s.%N); $rf /var/tmp/ab/list.txt >/dev/null; t1=$(date +%s.%N)
    cpu=$(awk '{print $14+$15}' /proc/$pid/stat)
    echo "$b rep$rep $(echo "$t1 - $t0" | bc) s, daemon cpu ticks $cpu"
    $bin umount /var/tmp/ab/m
  done
done
