#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Many concurrent readers (16 threads, then 4 processes) doing random-offset
preads and sequential reads through the mount must get exactly the backing
bytes. Readers drop the file's page cache now and then (fadvise DONTNEED) so
that reads keep reaching the daemon instead of the kernel's cache.

Then a mount with --max-read 64K --blksize 4K: st_blksize must be 4096 and
reads larger than max_read (split by the kernel) must still be exact."""
import json
import os
import random
import re
import subprocess
import sys
import threading

from mountlib import make_dirs, MIB, check, log, main, make_files, mounted, run_cases, temp_dir

SIZES = [0, 1, 511, 4095, 4096, 4097, 65535, 65536 + 7, 131072, MIB - 1, MIB + 1,
         3 * MIB + 123, 8 * MIB]
THREADS, READS_PER_THREAD = 16, 250
PROCESSES, READS_PER_PROCESS = 4, 600


def load(backing):
    """{name: bytes} read straight from the backing directory."""
    out = {}
    for name in sorted(os.listdir(backing)):
        with open(os.path.join(backing, name), "rb") as f:
            out[name] = f.read()
    return out


def reader(mp, expected, seed, count, errors):
    """count reads over random files, each compared with expected[name];
    mismatches go to errors. Each reader opens its own descriptors."""
    rng = random.Random(seed)
    names = sorted(expected)
    fds = {}
    try:
        for _ in range(count):
            name = rng.choice(names)
            if name not in fds:
                fds[name] = os.open(os.path.join(mp, name), os.O_RDONLY)
            data, fd = expected[name], fds[name]
            if rng.random() < 0.1:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if rng.random() < 0.15:
                # Sequential read of the whole file with an odd chunk size.
                chunk = rng.choice([1000, 4096, 65536, 200_000, MIB])
                got = bytearray()
                os.lseek(fd, 0, os.SEEK_SET)
                while part := os.read(fd, chunk):
                    got += part
                if bytes(got) != data:
                    errors.append(f"sequential read of {name} (chunk {chunk}) differs")
                continue
            off = rng.randrange(0, len(data) + 4097)  # past EOF too
            length = rng.choice([1, 7, 4096, rng.randrange(1, 300_000), 2 * MIB])
            got = os.pread(fd, length, off)
            if got != data[off:off + length]:
                errors.append(f"pread({name}, {length}, {off}) returned {len(got)} bytes "
                              f"that differ from backing")
    except OSError as e:
        errors.append(f"reader {seed}: {e}")
    finally:
        for fd in fds.values():
            os.close(fd)


def run_threads(mp, expected):
    errors = []
    threads = [threading.Thread(target=reader, daemon=True,
                                args=(mp, expected, 100 + i, READS_PER_THREAD, errors))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
        check(not t.is_alive(), "a reader thread is stuck (mount hangs?)")
    for e in errors[:20]:
        log(f"  {e}")
    check(not errors, f"{len(errors)} bad reads from {THREADS} threads")
    log(f"{THREADS} threads x {READS_PER_THREAD} reads: ok")


def run_processes(mp, backing):
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", mp, backing, str(200 + i)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(PROCESSES)]
    bad = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            bad.append("worker process timed out")
        if p.returncode != 0:
            bad.append(f"worker exit {p.returncode}: {out.strip()[:2000]}")
    for b in bad:
        log(f"  {b}")
    check(not bad, f"{len(bad)} of {PROCESSES} reader processes failed")
    log(f"{PROCESSES} processes x {READS_PER_PROCESS} reads: ok")


def worker(mp, backing, seed):
    errors = []
    reader(mp, load(backing), int(seed), READS_PER_PROCESS, errors)
    for e in errors[:20]:
        print(e)
    sys.exit(1 if errors else 0)


def small_requests(backing, mp, data):
    with mounted(backing, mp, "--max-read", "64K", "--blksize", "4K", "-t", "3",
                 "--scan-threads", "1"):
        for name, content in data.items():
            path = os.path.join(mp, name)
            st = os.stat(path)
            check(st.st_blksize == 4096, f"{name}: st_blksize {st.st_blksize} with --blksize 4K")
            with open(path, "rb") as f:
                check(f.read() == content, f"{name}: bytes differ with --max-read 64K")
            with open(path, "rb", buffering=0) as f:
                # One 2 MiB pread becomes 32+ FUSE requests of 64K each.
                check(os.pread(f.fileno(), 2 * MIB, 12345) == content[12345:12345 + 2 * MIB],
                      f"{name}: 2 MiB pread differs with --max-read 64K")
        errors = []
        reader(mp, data, 300, 400, errors)
        check(not errors, f"random reads with --max-read 64K: {errors[:5]}")
    log("--max-read 64K --blksize 4K: ok")


def option_sources(backing, mp, tmp):
    """st_blksize follows --blksize from the command line, -o or a --config
    file (the command line overrides the file); without it, or with 0, it
    is the backing file's, whatever max_read is."""
    cfg = os.path.join(tmp, "clairfs.json")
    with open(cfg, "w") as f:
        json.dump({"max_read": "64K", "blksize": 8192, "cache_timeout": 1.5}, f)
    backing_blksize = os.stat(os.path.join(backing, "f-4097")).st_blksize
    cases = [(["--max-read", "64K"], backing_blksize), (["-o", "max_read=128K"], backing_blksize),
             (["-o", "blksize=16K,max_read=64K"], 16384), (["--config", cfg], 8192),
             (["--config", cfg, "--blksize", "2K"], 2048), (["--blksize", "0"], backing_blksize)]
    for opts, want in cases:
        with mounted(backing, mp, *opts):
            got = os.stat(os.path.join(mp, "f-4097")).st_blksize
            check(got == want, f"{' '.join(opts)}: st_blksize {got}, expected {want}")
    log(f"st_blksize from {len(cases)} option sources: ok")


def beyond_4g(tmp, mp):
    """Offsets past 2^32 on a sparse 5 GiB file (no 32-bit truncation)."""
    backing = os.path.join(tmp, "sparse")
    os.makedirs(backing)
    size, tail = 5 << 30, b"the end of a 5 GiB file"
    with open(os.path.join(backing, "big"), "wb") as f:
        f.truncate(size)
        f.seek(size - len(tail))
        f.write(tail)
    with mounted(backing, mp):
        path = os.path.join(mp, "big")
        check(os.stat(path).st_size == size, f"5 GiB file has st_size {os.stat(path).st_size}")
        fd = os.open(path, os.O_RDONLY)
        try:
            check(os.pread(fd, 100, size - len(tail)) == tail, "read at 5 GiB - 23 differs")
            check(os.pread(fd, 8, (4 << 30) + 5) == bytes(8), "read at 4 GiB + 5 differs")
            check(os.pread(fd, 8, size) == b"", "read at EOF of a 5 GiB file is not empty")
        finally:
            os.close(fd)
    log("offsets past 4 GiB: ok")


def many_readers(backing, mp, tmp, data):
    logfile = os.path.join(tmp, "daemon.log")
    with mounted(backing, mp, "--log-file", logfile):
        for name in data:
            st = os.stat(os.path.join(mp, name))
            want = os.stat(os.path.join(backing, name)).st_blksize
            check(st.st_blksize == want, f"{name}: default st_blksize {st.st_blksize}, the "
                  f"backing's {want}")
        run_threads(mp, data)
        run_processes(mp, backing)
    # The daemon's closing line counts the reads it served: evidence that
    # the readers reached it rather than only the page cache.
    with open(logfile) as f:
        closing = [l for l in f if "unmounted" in l]
    check(closing, "the daemon logged no 'unmounted' line to --log-file")
    log(closing[-1].strip())
    served = int(re.search(r"(\d+) reads", closing[-1]).group(1))
    check(served >= 1000, f"the daemon served only {served} read requests")


def kernel_opens(backing, mp, tmp, data):
    """--kernel-opens: the kernel stops asking the daemon about opens, and
    every READ opens the backing file for itself; bytes must not change."""
    logfile = os.path.join(tmp, "kernel-opens.log")
    with mounted(backing, mp, "--kernel-opens", "--log-file", logfile):
        run_threads(mp, data)
    with open(logfile) as f:
        closing = [l for l in f if "unmounted" in l][-1]
    log(closing.strip())
    check("(0 opens" in closing, f"--kernel-opens still sent opens to the daemon: {closing}")
    check(int(re.search(r"(\d+) reads", closing).group(1)) > 0, "no read reached the daemon")


def test():
    with temp_dir() as tmp:
        backing, mp = make_dirs(tmp, "backing", "mnt")
        data = make_files(backing, SIZES)
        check(load(backing) == data, "generator wrote unexpected bytes")
        run_cases(("threads and processes", lambda: many_readers(backing, mp, tmp, data)),
                  ("--max-read 64K --blksize 4K", lambda: small_requests(backing, mp, data)),
                  ("option sources", lambda: option_sources(backing, mp, tmp)),
                  ("offsets past 4 GiB", lambda: beyond_4g(tmp, mp)),
                  ("--kernel-opens", lambda: kernel_opens(backing, mp, tmp, data)))

if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
    main(test)
