#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""faultfs itself, which every other fault test trusts: without rules it
passes bytes and the SSD tier's calls through (O_DIRECT create, pwrite,
fallocate, fsync, rename, unlink, mkdir, statfs); each rule does what it
says to matching paths only and is counted; a hung read ends with EIO on
`clear`, and on SIGTERM, after which faultfs exits and is unmounted."""
import errno
import mmap
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402


def read(path, size=None, offset=0):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size or os.path.getsize(path), offset)
    finally:
        os.close(fd)


def case_passthrough(ff, data):
    for name, want in data.items():
        ml.check(read(os.path.join(ff.mp, name)) == want, f"passthrough: {name} differs")
    path = os.path.join(ff.mp, "dir", "cache")
    os.mkdir(os.path.dirname(path))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
    try:
        os.posix_fallocate(fd, 0, 1 << 20)
        block = mmap.mmap(-1, 8192)  # page-aligned, as O_DIRECT wants
        block.write(b"x" * 8192)
        ml.check(os.pwritev(fd, [block], 4096) == 8192, "passthrough: short O_DIRECT write")
        os.fsync(fd)
        back = mmap.mmap(-1, 8192)
        ml.check(os.preadv(fd, [back], 4096) == 8192 and back[:] == b"x" * 8192,
                 "passthrough: O_DIRECT read gave other bytes")
    finally:
        os.close(fd)
    ml.check(os.path.getsize(os.path.join(ff.source, "dir", "cache")) == 1 << 20,
             "passthrough: fallocate did not reach the source")
    os.rename(path, path + ".2")
    os.unlink(path + ".2")
    ml.check(os.listdir(os.path.join(ff.source, "dir")) == [], "passthrough: rename/unlink")
    ml.check(os.statvfs(ff.mp).f_blocks == os.statvfs(ff.source).f_blocks, "passthrough: statfs")


def case_rules(ff, data):
    mp = ff.mp
    ff.rule("eio a", "short b", "corrupt c", "delay 300 d", "enospc new")
    ml.expect_errno(errno.EIO, read, os.path.join(mp, "a"))
    got = read(os.path.join(mp, "b"), 8192)
    ml.check(0 < len(got) < 8192 and got == data["b"][:len(got)], f"short: {len(got)} bytes")
    got = read(os.path.join(mp, "c"))
    ml.check(len(got) == len(data["c"]) and got != data["c"], "corrupt: bytes unchanged")
    ml.check(got[1:4096] == data["c"][1:4096], "corrupt: more than one byte per 4 KiB changed")
    t = time.monotonic()
    ml.check(read(os.path.join(mp, "d")) == data["d"], "delay: wrong bytes")
    ml.check(time.monotonic() - t >= 0.25, "delay: the read was not delayed")
    ml.check(read(os.path.join(mp, "e")) == data["e"], "a file no rule matches was changed")
    fd = os.open(os.path.join(mp, "new"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        ml.expect_errno(errno.ENOSPC, os.write, fd, b"x")
    finally:
        os.close(fd)
        os.unlink(os.path.join(mp, "new"))
    c = ff.counters()
    ml.log(f"counters: {c}")
    ml.check(c["eio"] >= 1 and c["short"] >= 1 and c["corrupt"] >= 1 and c["delay"] >= 1
             and c["enospc"] == 1, f"counters: {c}")
    ff.rule("clear")
    ml.check(read(os.path.join(mp, "a")) == data["a"], "clear: the eio rule still applies")
    try:
        ff.rule("bogus rule")
        raise ml.TestFailure("a bad rule was accepted")
    except OSError as e:
        ml.check(e.errno == errno.EINVAL, f"a bad rule: {e}")


def hung_read(ff, name, release, what):
    ff.rule(f"hang {name}")
    t = time.monotonic()
    path = os.path.join(ff.mp, name)
    box = {}

    def body():
        try:
            read(path)
        except OSError as e:
            box["errno"] = e.errno

    th = threading.Thread(target=body, daemon=True)
    th.start()
    ml.check(ml.wait_until(lambda: ff.counters()["hung_now"] == 1, 10), f"{what}: no hung read")
    th.join(0.5)
    ml.check(th.is_alive(), f"{what}: the read returned without a release")
    release()
    th.join(15)
    ml.check(not th.is_alive(), f"{what}: the hung read was not released")
    ml.check(box.get("errno") in (errno.EIO, errno.ENOTCONN, errno.ECONNABORTED),
             f"{what}: the released read gave {box}")
    ml.log(f"{what}: released after {time.monotonic() - t:.1f} s with "
           f"{errno.errorcode[box['errno']]}")


def test():
    with ml.temp_dir() as tmp:
        src, mp = ml.make_dirs(tmp, "source", "faulty")
        data = {n: os.urandom(20000) for n in "abcde"}
        for name, b in data.items():
            with open(os.path.join(src, name), "wb") as f:
                f.write(b)
        with fl.faultfs(src, mp) as ff:
            ml.run_cases(("passthrough", lambda: case_passthrough(ff, data)),
                         ("rules", lambda: case_rules(ff, data)),
                         ("hang, clear", lambda: hung_read(ff, "a", lambda: ff.rule("clear"),
                                                           "clear")))
            hung_read(ff, "b", lambda: ff.proc.send_signal(signal.SIGTERM), "SIGTERM")
            rc = ff.proc.wait(15)
            ml.check(rc == 0, f"faultfs exited {rc} on SIGTERM: {ff.proc.stderr.read()}")
            ml.check(not ml.is_mounted(mp, None), "faultfs left its mount behind")


if __name__ == "__main__":
    ml.main(test)
