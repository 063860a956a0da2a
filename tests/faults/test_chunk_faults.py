#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Faults under files held by chunk (--chunk-size 256K; files above the
1 MiB that --mem 16M holds whole), through faultfs:

- eio: the backing store fails reads of one large file: its reads fail
  with EIO (again on a retry: an error is never cached as content), the
  other large files read back byte for byte, status counts the failed
  chunk fetches, and the mount keeps serving;
- hang: reads of one large file never return, under --io-timeout 2: its
  read fails with EIO after about the timeout, the other large files are
  read meanwhile with the right bytes, and `clairfs umount` completes
  with the read still hung; hang-two: the same with two files hung at
  once (their READs in flight outnumber the chunk fetch threads);
- corrupt: under --mem 4M (chunks above 256 KiB, RAM for 4 MiB of the
  9 MiB of them), the chunks' SSD cache file (faultfs as --cache-dir) returns
  flipped bytes: every read still returns the backing file's bytes (the
  checksum catches them, the chunks are read again from the backing
  store), and status counts the errors."""
import errno
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

BAD = "big/shard-1.bin"
CHUNKED = ("--mem", "16M", "--chunk-size", "256K", "--no-detect")


def make_big(root):
    rng = random.Random(4)
    out = {}
    os.makedirs(os.path.join(root, "big"))
    for i in range(3):
        rel = f"big/shard-{i}.bin"
        data = rng.randbytes(3 * ml.MIB + 777 * i)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        out[rel] = fl.sha1_of(os.path.join(root, rel))
    return out


def case_eio(tmp, ff, expected):
    mp = ml.make_dirs(tmp, "mnt-eio")[0]
    ff.rule(f"eio /{BAD}")
    try:
        with ml.mounted(ff.mp, mp, *CHUNKED):
            failed, wrong = fl.read_and_compare(mp, expected)
            again, _ = fl.read_and_compare(mp, expected, [BAD])
            st = fl.status(mp)
            ml.log(f"eio: failed {failed}, wrong {wrong}, chunks fetch_errors "
                   f"{st['chunks']['fetch_errors']}, backing errors {st['backing']['errors']}")
            ml.check(not wrong, f"eio: wrong bytes in {wrong}")
            ml.check(failed == {BAD: errno.EIO}, f"eio: failed {failed}")
            ml.check(again == {BAD: errno.EIO}, f"eio: a second read gave {again}")
            ml.check(st["chunks"]["fetch_errors"] >= 2, f"eio: status {st['chunks']}")
            ml.check(st["chunks"]["files"] == len(expected), f"eio: status {st['chunks']}")
    finally:
        ff.rule()


def case_hang(tmp, ff, expected, bad=(BAD,), name="hang"):
    mp = ml.make_dirs(tmp, f"mnt-{name}")[0]
    ff.rule(*(f"hang /{rel}" for rel in bad))
    try:
        with ml.mounted(ff.mp, mp, *CHUNKED, "--io-timeout", "2") as m:
            results = {rel: {} for rel in bad}

            def read_bad(rel):
                result = results[rel]
                t = time.monotonic()
                try:
                    fl.sha1_of(os.path.join(mp, rel))
                    result["err"] = None
                except OSError as e:
                    result["err"] = e.errno
                result["s"] = time.monotonic() - t

            threads = [threading.Thread(target=read_bad, args=(rel,), daemon=True)
                       for rel in bad]
            for th in threads:
                th.start()
            time.sleep(0.3)
            others = [rel for rel in expected if rel not in bad]
            failed, wrong = fl.read_and_compare(mp, expected, others)
            ml.check(not failed and not wrong, f"{name}: others failed {failed}, wrong {wrong}")
            for th in threads:
                th.join(30)
            for rel, result in results.items():
                ml.check("err" in result, f"{name}: the read of hung {rel} has not returned")
                ml.check(result["err"] in (errno.EIO, errno.EAGAIN) and 1.5 <= result["s"] < 30,
                         f"{name}: the hung read of {rel} ended with {result}")
            ml.log(f"{name}: hung reads {results}, {len(others)} other files read meanwhile")
            r = ml.clairfs("umount", mp, timeout=60)
            ml.check(r.returncode == 0 and not ml.is_mounted(mp),
                     f"{name}: clairfs umount rc {r.returncode}: {r.stderr}")
            # The daemon's threads in the hung read(2)s hold the process until
            # they return (as in test_backing_hang): released, it ends.
            ff.rule("clear")
            ml.check(ml.wait_exit(m.pids, 30),
                     f"{name}: daemon {m.pids} still running 30 s after its hung reads were released")
    finally:
        ff.rule()


def case_hang_two(tmp, ff, expected):
    case_hang(tmp, ff, expected, ("big/shard-1.bin", "big/shard-2.bin"), "hang-two")


def case_corrupt(tmp, src, expected):
    cache, faulty, mp = ml.make_dirs(tmp, "cache-corrupt", "faulty-corrupt", "mnt-corrupt")
    with fl.faultfs(cache, faulty) as ff, \
            ml.mounted(src, mp, "--mem", "4M", "--chunk-size", "256K", "--no-detect",
                       "--cache-dir", faulty, "--ssd", "64M"):
        failed, wrong = fl.read_and_compare(mp, expected)
        ml.check(not failed and not wrong, f"corrupt: fill failed {failed}, wrong {wrong}")
        total = fl.status(mp)["chunks"]["chunks"]
        ml.check(ml.wait_until(lambda: fl.status(mp)["chunks"]["ssd"]["chunks"] == total, 30),
                 f"corrupt: the SSD holds {fl.status(mp)['chunks']['ssd']} of {total} chunks")
        before = fl.status(mp)
        ff.rule("corrupt .cache")
        fl.drop_caches()
        # RAM holds 4M of the 9 MiB of chunks: most come back from the SSD.
        failed, wrong = fl.read_and_compare(mp, expected)
        st = fl.status(mp)
        errors = st["chunks"]["ssd"]["errors"] - before["chunks"]["ssd"]["errors"]
        refetched = st["backing"]["bytes"] - before["backing"]["bytes"]
        ml.log(f"corrupt: failed {failed}, wrong {wrong}, {errors} SSD errors, {refetched} bytes "
               f"read again, faultfs {ff.counters()}")
        ml.check(not failed and not wrong, f"corrupt: failed {failed}, wrong {wrong}")
        ml.check(errors > 0 and refetched > 0,
                 f"corrupt: {errors} SSD errors, {refetched} backing bytes read again")


def test():
    with ml.temp_dir() as tmp:
        src = ml.make_dirs(tmp, "source")[0]
        expected = make_big(src)

        def backing_fault(case, name):
            def run():
                faulty = ml.make_dirs(tmp, f"faulty-{name}")[0]
                with fl.faultfs(src, faulty) as ff:
                    case(tmp, ff, expected)
            return name, run

        ml.run_cases(backing_fault(case_eio, "eio"), backing_fault(case_hang, "hang"),
                     backing_fault(case_hang_two, "hang-two"),
                     ("corrupt", lambda: case_corrupt(tmp, src, expected)))


if __name__ == "__main__":
    ml.main(test)
