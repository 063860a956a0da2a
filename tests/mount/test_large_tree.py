#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""100,000 small files in 1,000 directories: the mount must list exactly
as many entries as the backing tree (find | wc -l), and a sample of files
must read back correctly. Scan time and the daemon's resident memory per
file are printed for the record, not asserted."""
import os
import random
import re
import time

from mountlib import check, indexed_line, log, main, mounted, run, temp_dir

DIRS, FILES_PER_DIR, MAX_SIZE = 1000, 100, 2048


def generate(root, seed=11):
    """Writes the tree with raw os calls (Python file objects are ~3x slower
    here); contents are slices of one random pool."""
    rng = random.Random(seed)
    pool = rng.randbytes(1 << 20)
    start = time.monotonic()
    for d in range(DIRS):
        dpath = os.path.join(root, f"d{d:04d}")
        os.mkdir(dpath)
        for f in range(FILES_PER_DIR):
            size, off = rng.randrange(0, MAX_SIZE + 1), rng.randrange(0, len(pool) - MAX_SIZE)
            fd = os.open(os.path.join(dpath, f"file-{f:03d}.bin"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, pool[off:off + size])
            os.close(fd)
    log(f"generated {DIRS * FILES_PER_DIR} files in {time.monotonic() - start:.1f} s")


def find_count(path):
    r = run(["sh", "-c", 'find "$1" | wc -l', "sh", path], timeout=600)
    check(r.returncode == 0, f"find {path} failed: {r.stderr}")
    return int(r.stdout.strip())


def vm_rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return kb * 1024


def test():
    with temp_dir() as tmp:
        backing, mp = os.path.join(tmp, "backing"), os.path.join(tmp, "mnt")
        os.makedirs(backing)
        os.makedirs(mp)
        generate(backing)
        files = DIRS * FILES_PER_DIR
        t0 = time.monotonic()
        with mounted(backing, mp, "--progress", "never", timeout=600) as m:
            log(f"mount command took {time.monotonic() - t0:.2f} s")
            line = indexed_line(m.stderr)
            log(f"daemon: {line}")
            scan = re.search(r" in ([0-9.]+) s", line)
            log(f"scan_seconds={scan.group(1) if scan else 'unknown'}")
            check(len(m.pids) == 1, f"expected one daemon, found {m.pids}")
            log(f"rss_per_file_bytes={vm_rss_bytes(m.pids[0]) / files:.1f} (after mount)")

            t0 = time.monotonic()
            in_mount = find_count(mp)
            log(f"find on the mount took {time.monotonic() - t0:.2f} s")
            in_backing = find_count(backing)
            log(f"find | wc -l: mount {in_mount}, backing {in_backing}")
            check(in_mount == in_backing, f"mount lists {in_mount} entries, backing {in_backing}")
            log(f"rss_per_file_bytes={vm_rss_bytes(m.pids[0]) / files:.1f} (after find)")

            rng = random.Random(12)
            for _ in range(500):
                rel = os.path.join(f"d{rng.randrange(DIRS):04d}",
                                   f"file-{rng.randrange(FILES_PER_DIR):03d}.bin")
                with open(os.path.join(mp, rel), "rb") as a, \
                        open(os.path.join(backing, rel), "rb") as b:
                    check(a.read() == b.read(), f"{rel}: bytes differ")
            log("500 sampled files read back correctly")


if __name__ == "__main__":
    main(test)
