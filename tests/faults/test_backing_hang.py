#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A backing file system that hangs (faultfs: a read of one file that never
returns), under `clairfs mount --io-timeout 2`:

- while a reader waits on the hung file, every other file is read with the
  right bytes (readers of other files continue);
- the hung file's read fails with EIO or EAGAIN after about the timeout
  (generous bounds: not before 1.5 s, and well before 60 s), and so does a
  second try (still hung; it may fail at once);
- both for files the RAM tier takes (a fetch is waited on) and with
  --mem 0 (each READ is a bounded call of its own);
- `clairfs umount` completes while the backing read is still hung (the
  rule is cleared only afterwards), and the mount is gone; once the read
  is released the daemon exits."""
import errno
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

HUNG = "class01/img0003.jpg"
TIMEOUT = 2


def timed_read(path):
    """(errno or None, seconds) of reading a whole file."""
    t = time.monotonic()
    try:
        fl.sha1_of(path)
        return None, time.monotonic() - t
    except OSError as e:
        return e.errno, time.monotonic() - t


def check_hung_read(result, what, at_least=1.5):
    ml.check(result is not None, f"{what}: the read of the hung file has not returned")
    err, secs = result
    ml.log(f"{what}: read of the hung file: {errno.errorcode.get(err, err)} after {secs:.1f} s")
    ml.check(err in (errno.EIO, errno.EAGAIN),
             f"{what}: expected EIO or EAGAIN, got {errno.errorcode.get(err, err)}")
    ml.check(at_least <= secs <= 60, f"{what}: failed after {secs:.1f} s, --io-timeout {TIMEOUT}")


def test():
    # Tiered files wait for their fetch; with --mem 0 every READ is a
    # bounded call of its own (src/fuse/read_through.cpp).
    for mem in ("64M", "0"):
        one_case(mem)


def one_case(mem):
    ml.log(f"--mem {mem}")
    with ml.temp_dir() as tmp:
        src, faulty, mp = ml.make_dirs(tmp, "source", "faulty", "mnt")
        expected = fl.make_dataset(src)
        others = [rel for rel in sorted(expected) if rel != HUNG]
        with fl.faultfs(src, faulty) as ff:
            ff.rule(f"hang {HUNG}")
            with ml.mounted(faulty, mp, "--mem", mem, "--io-timeout", str(TIMEOUT)) as m:
                box = {}
                path = os.path.join(mp, HUNG)
                hung = threading.Thread(target=lambda: box.update(r=timed_read(path)), daemon=True)
                hung.start()
                ml.check(ml.wait_until(lambda: ff.counters()["hung_now"] > 0, 20),
                         "the read of the hung file never reached faultfs")
                done, result, exc = ml.in_thread(fl.read_and_compare, mp, expected, others,
                                                 timeout=60)
                ml.check(done and exc is None, f"readers of other files: done={done}, {exc}")
                failed, wrong = result
                ml.check(not failed and not wrong,
                         f"other files: failed {failed}, wrong {wrong[:5]}")
                hung.join(90)
                check_hung_read(box.get("r"), "first")
                done, result, _ = ml.in_thread(timed_read, path, timeout=90)
                # The fetch is still stuck: failing at once is as right as waiting.
                check_hung_read(result if done else None, "second", at_least=0)
                t = time.monotonic()
                r = ml.clairfs("umount", mp, timeout=120)
                secs = time.monotonic() - t
                ml.log(f"umount with a hung backing read: rc {r.returncode} in {secs:.1f} s, "
                       f"faultfs {ff.counters()}")
                ml.check(r.returncode == 0, f"umount failed: {r.stderr.strip()}")
                ml.check(not ml.is_mounted(mp), "still mounted after clairfs umount")
                # The daemon's thread in the hung read(2) holds the process
                # until the read returns: release it, and the daemon ends
                # (before, teardown waited 15 s for it, then killed it).
                ff.rule("clear")
                ml.check(ml.wait_exit(m.pids, 30),
                         f"daemon {m.pids} still running 30 s after its hung read was released")


if __name__ == "__main__":
    ml.main(test)
