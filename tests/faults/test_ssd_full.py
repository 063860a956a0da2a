#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The SSD cache directory fills up (a small tmpfs), and the SSD tier
degrades; no read ever fails and every byte is the backing file's:

- full before the mount (--ssd larger than the room left): the tier is off
  with one status line that says "No space left", and the mount serves
  everything from RAM and the backing store;
- full during the mount (another file takes the rest of the tmpfs after
  the cache file was preallocated): the tier stays on and serves hits,
  the journal's failure is counted, and a remount with the same directory
  (room made again) serves only right bytes;
- a cache device whose writes fail with ENOSPC (faultfs over the tmpfs,
  as a file system that does not honour fallocate would): the tier turns
  itself off with one status line, and reads go on."""
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

MEM = fl.SMALL_MEM


@contextlib.contextmanager
def tmpfs(path, size):
    r = ml.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path])
    ml.check(r.returncode == 0, f"cannot mount a tmpfs (root is needed): {r.stderr.strip()}")
    try:
        yield path
    finally:
        ml.run(["umount", "-l", path])


def fill(path):
    """Takes every free byte of the file system at path."""
    fd = os.open(os.path.join(path, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (1 << 20, 4096):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * block):
                    pass
    finally:
        os.close(fd)
    ml.check(os.statvfs(path).f_bavail == 0, f"{path} is not full")


def one_line(err, what):
    ml.check(err and "\n" not in err, f"{what}: ssd.error {err!r} is not one line")


def read_twice(mp, expected, what):
    """Reads everything twice (dropping the kernel's pages in between, so
    the second pass reaches the tiers); no read may fail or differ."""
    for n in (1, 2):
        failed, wrong = fl.read_and_compare(mp, expected)
        ml.check(not failed and not wrong, f"{what}, pass {n}: failed {failed}, wrong {wrong[:5]}")
        fl.drop_caches()


def case_full_at_mount(tmp, src, expected):
    cache, mp = ml.make_dirs(tmp, "cache-a", "mnt-a")
    with tmpfs(cache, "8M"), ml.mounted(src, mp, "--mem", MEM, "--cache-dir", cache,
                                         "--ssd", "64M") as m:
        st = fl.status(mp)["ssd"]
        ml.log(f"full at mount: {st['error']}")
        ml.check(not st["enabled"], f"full at mount: the tier is on: {st}")
        one_line(st["error"], "full at mount")
        ml.check("No space left" in st["error"], f"full at mount: {st['error']!r}")
        ml.check("ssd" in m.stderr.lower(), f"full at mount: nothing logged: {m.stderr!r}")
        read_twice(mp, expected, "full at mount")
        kept = [n for n in os.listdir(cache) if n.endswith(".cache")
                and os.stat(os.path.join(cache, n)).st_blocks > 0]
        ml.check(not kept, f"full at mount: a disabled tier keeps its space: {kept}")


def case_fills_during_mount(tmp, src, expected):
    cache, mp = ml.make_dirs(tmp, "cache-b", "mnt-b")
    with tmpfs(cache, "8M"):
        with ml.mounted(src, mp, "--mem", MEM, "--cache-dir", cache):
            fill(cache)
            read_twice(mp, expected, "fills during mount")
            st = fl.status(mp)["ssd"]
            ml.log(f"fills during mount: enabled {st['enabled']}, files {st['files']}, "
                   f"hits {st['hits']}, errors {st['errors']}, error {st['error']}")
            # The cache file was preallocated: only its journal can fail,
            # which costs the restart-warm of later entries, not the tier.
            ml.check(st["enabled"] and st["hits"] > 0, f"fills during mount: {st}")
            ml.check(st["errors"] >= 1, f"fills during mount: the journal failure is not counted")
        # The journal ends where the disk was full: a remount must not trust
        # what it cannot vouch for.
        os.unlink(os.path.join(cache, "filler"))
        with ml.mounted(src, mp, "--mem", MEM, "--cache-dir", cache):
            st = fl.status(mp)["ssd"]
            read_twice(mp, expected, "remount after a full disk")
            ml.log(f"remount after a full disk: enabled {st['enabled']}, reused {st['reused']}, "
                   f"error {st['error']}")
            ml.check(st["enabled"], f"remount after a full disk: tier off: {st['error']}")


def case_enospc_writes(tmp, src, expected):
    cache, faulty, mp = ml.make_dirs(tmp, "cache-c", "faulty-c", "mnt-c")
    with tmpfs(cache, "64M"), fl.faultfs(cache, faulty) as ff:
        with ml.mounted(src, mp, "--mem", MEM, "--cache-dir", faulty, "--ssd", "32M"):
            ff.rule("enospc .cache")  # after the preallocation
            read_twice(mp, expected, "enospc writes")
            ok = ml.wait_until(lambda: not fl.status(mp)["ssd"]["enabled"], 30)
            st = fl.status(mp)["ssd"]
            ml.log(f"enospc writes: enabled {st['enabled']}, errors {st['errors']}, "
                   f"error {st['error']}, faultfs {ff.counters()}")
            ml.check(ff.counters()["enospc"] > 0, "enospc writes: faultfs refused no write")
            ml.check(ok, f"enospc writes: the tier is still on: {st}")
            one_line(st["error"], "enospc writes")
            ml.check("No space left" in st["error"], f"enospc writes: {st['error']!r}")
            ml.check(st["files"] == 0 and st["capacity"] == 0,
                     f"enospc writes: a disabled tier still counts files or room: {st}")


def test():
    with ml.temp_dir() as tmp:
        src = ml.make_dirs(tmp, "source")[0]
        # ~19 MB: more than any of the tmpfs caches can take.
        expected = fl.make_dataset(src, per_class=80)
        ml.run_cases(("full at mount", lambda: case_full_at_mount(tmp, src, expected)),
                     ("fills during mount", lambda: case_fills_during_mount(tmp, src, expected)),
                     ("enospc writes", lambda: case_enospc_writes(tmp, src, expected)))


if __name__ == "__main__":
    ml.main(test)
