#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Torn cache: kill -9 of the daemon in the middle of heavy SSD writes,
then a remount with the same cache directory, 50 times over one cache.

Before each round a third of the files change in the backing directory
(new bytes, new mtime), so every round has stale entries to drop and
files to write again. Each round mounts with --stage (the whole dataset
copied through a tiny RAM tier into the SSD tier) while a reader checks
files in a random order, and kills the daemon after a random moment. Every read that
returns bytes must return the backing file's bytes (reads cut off by the
kill fail with ENOTCONN or ECONNABORTED, which is allowed). A last mount
then reads every file: all right, and the cache was really reused across
the kills (ssd.reused > 0 in some round), so the rounds did test what the
journal vouched for."""
import errno
import hashlib
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

ROUNDS = 50
MAX_SIZE = 60_000  # under --mem / 16, so every file goes through the tiers
# Over io_uring (--io-uring, scripts/test.sh turns the kernel's switch on),
# a request the dead daemon's rings held ends with ECANCELED.
CUT = (errno.ENOTCONN, errno.ECONNABORTED, errno.ECANCELED)


def reader(mp, expected, names, out, stop):
    for rel in names:
        if stop.is_set():
            return
        try:
            got = fl.sha1_of(os.path.join(mp, rel))
        except OSError as e:
            out["errors"].append((rel, e.errno))
            continue
        out["read"] += 1
        if got != expected[rel]:
            out["wrong"].append(rel)


def change_files(src, expected, rng, n):
    """Rewrites a third of the files with new bytes and a later mtime."""
    for rel in rng.sample(sorted(expected), len(expected) // 3):
        path = os.path.join(src, rel)
        data = rng.randbytes(rng.randint(1, MAX_SIZE))
        with open(path, "wb") as f:
            f.write(data)
        t = (1_700_000_000 + n) * 10**9 + rng.randrange(10**9)
        os.utime(path, ns=(t, t))
        expected[rel] = hashlib.sha1(data).hexdigest()


def one_round(n, src, mp, cache, expected, rng, totals):
    change_files(src, expected, rng, n)
    with ml.mounted(src, mp, "--mem", str(1 << 20), "--cache-dir", cache, "--stage") as m:
        reused = fl.status(mp)["ssd"]["reused"]
        names = sorted(expected)
        rng.shuffle(names)
        out, stop = {"read": 0, "wrong": [], "errors": []}, threading.Event()
        t = threading.Thread(target=reader, args=(mp, expected, names, out, stop), daemon=True)
        t.start()
        time.sleep(rng.uniform(0.0, 0.3))
        written = fl.status(mp)["ssd"]["written"]
        for pid in m.pids:
            os.kill(pid, signal.SIGKILL)
        ml.check(ml.wait_exit(m.pids, 10), f"round {n}: the daemon survived kill -9")
        stop.set()
        t.join(30)
        ml.check(not t.is_alive(), f"round {n}: the reader hangs on the dead mount")
    bad = [e for _, e in out["errors"] if e not in CUT]
    ml.check(not out["wrong"], f"round {n}: wrong bytes in {out['wrong'][:5]}")
    ml.check(not bad, f"round {n}: reads failed with {set(bad)} (only ENOTCONN, ECONNABORTED or ECANCELED are expected)")
    totals["reads"] += out["read"]
    totals["reused"] += reused
    totals["warm_rounds"] += reused > 0
    totals["written"] += written


def test():
    with ml.temp_dir() as tmp:
        src, mp, cache = ml.make_dirs(tmp, "source", "mnt", "cache")
        expected = fl.make_dataset(src, classes=5, per_class=60, max_size=MAX_SIZE)
        rng = random.Random(23)
        totals = {"reads": 0, "reused": 0, "warm_rounds": 0, "written": 0}
        t = time.monotonic()
        for n in range(ROUNDS):
            one_round(n, src, mp, cache, expected, rng, totals)
        ml.log(f"{ROUNDS} kill -9 rounds in {time.monotonic() - t:.0f} s: {totals}")
        with ml.mounted(src, mp, "--mem", str(1 << 20), "--cache-dir", cache):
            st = fl.status(mp)["ssd"]
            failed, wrong = fl.read_and_compare(mp, expected)
            after = fl.status(mp)
            ml.log(f"last mount: ssd {st}, backing {after['backing']}")
            ml.check(not failed and not wrong, f"last mount: failed {failed}, wrong {wrong[:5]}")
            ml.check(st["enabled"], f"last mount: the SSD tier is off: {st['error']}")
        ml.check(totals["warm_rounds"] > 0, f"no round reused the cache: {totals}")
        ml.check(totals["reads"] > 0, f"no read completed in any round: {totals}")
        ml.check(totals["written"] > 0, f"no round wrote to the SSD before its kill: {totals}")


if __name__ == "__main__":
    ml.main(test)
