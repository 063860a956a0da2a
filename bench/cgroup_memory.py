# SPDX-License-Identifier: MIT
"""What a memory cgroup holds, sampled through a run: its page cache
(file, shared memory included) and its anonymous memory, from memory.stat.

The peak usage counter (memory.max_usage_in_bytes) says only that the
cgroup filled; whether the bytes in it are the dataset once or twice (the
daemon's copy beside the mount's page cache, or the backing's pages beside
the mount's) needs the split, and the split at its largest.
"""
import os
import threading
import time

# cgroup v1 names first (what slowfs.py makes), v2's after.
FILE_KEYS = ("total_cache", "file")
ANON_KEYS = ("total_rss", "anon")
SHMEM_KEYS = ("total_shmem", "shmem")


def read_stat(cg_dir):
    """memory.stat of CG_DIR as {key: bytes}."""
    out = {}
    with open(os.path.join(cg_dir, "memory.stat")) as f:
        for line in f:
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
    return out


def _first(stat, keys):
    for k in keys:
        if k in stat:
            return stat[k]
    return 0


def split(stat):
    """(file, anon, shmem) bytes of one memory.stat."""
    return _first(stat, FILE_KEYS), _first(stat, ANON_KEYS), _first(stat, SHMEM_KEYS)


def drop_file_pages(roots):
    """POSIX_FADV_DONTNEED on every regular file under ROOTS (the job's
    interpreter and libraries): their unmapped page cache leaves whatever
    cgroup it is charged to. Returns the number of files dropped."""
    n = 0
    for root in roots:
        for d, _, fs in os.walk(root):
            for name in fs:
                path = os.path.join(d, name)
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    n += 1
                except OSError:
                    pass
                finally:
                    os.close(fd)
    return n


class Sampler:
    """Samples CG_DIR's memory.stat every PERIOD seconds on a thread of its
    own between start() and stop(); result() is the peak of file + anon and
    its split, with one sample a second for the run's record."""

    def __init__(self, cg_dir, period=0.25):
        self.cg_dir, self.period = cg_dir, period
        self.samples = []  # (seconds since start, file, anon, shmem)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = None

    def start(self):
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def _run(self):
        while True:
            try:
                f, a, s = split(read_stat(self.cg_dir))
                self.samples.append((round(time.perf_counter() - self._t0, 2), f, a, s))
            except OSError:
                pass  # the cgroup went away: the run is over
            if self._stop.wait(self.period):
                return

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.result()

    def result(self):
        if not self.samples:
            return None
        peak = max(self.samples, key=lambda s: s[1] + s[2])
        per_second, last = [], None
        for s in self.samples:
            if last is None or s[0] - last >= 1.0:
                per_second.append(list(s))
                last = s[0]
        return {"peak_file_anon": peak[1] + peak[2], "peak_at_s": peak[0],
                "peak_file": peak[1], "peak_anon": peak[2], "peak_shmem": peak[3],
                "series": per_second}
