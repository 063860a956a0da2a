#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Remount right after unmount, as a restarted job does it:
`clairfs umount M && clairfs mount B M --cache-dir D ...` back to back, in
one shell command, five times. Each new mount must find the cache free and
warm: the SSD tier on, every file reused from the last mount, and a full
read served with no backing read."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

ROUNDS = 5


def stored_all(mp, n):
    st = fl.status(mp)["ssd"]
    return st["files"] >= n and st["pending_bytes"] == 0


def test():
    with ml.temp_dir() as tmp:
        src, mp, cache = ml.make_dirs(tmp, "source", "mnt", "cache")
        expected = fl.make_dataset(src)
        opts = ["--mem", fl.SMALL_MEM, "--cache-dir", cache]
        with ml.mounted(src, mp, *opts):
            failed, wrong = fl.read_and_compare(mp, expected)
            ml.check(not failed and not wrong, f"first mount: failed {failed}, wrong {wrong}")
            ml.check(ml.wait_until(lambda: stored_all(mp, len(expected)), 60),
                     f"first mount: the SSD tier holds {fl.status(mp)['ssd']}")
            for n in range(ROUNDS):
                cmd = f"'{ml.CLAIRFS}' umount '{mp}' && '{ml.CLAIRFS}' mount '{src}' '{mp}' " + \
                      " ".join(f"'{o}'" for o in opts)
                r = ml.run(["bash", "-c", cmd], timeout=120)
                ml.check(r.returncode == 0, f"round {n}: {cmd}: rc {r.returncode}: {r.stderr}")
                st = fl.status(mp)
                ml.log(f"round {n}: ssd enabled {st['ssd']['enabled']}, reused "
                       f"{st['ssd']['reused']}, error {st['ssd']['error']!r}")
                ml.check(st["ssd"]["enabled"], f"round {n}: SSD tier off: {st['ssd']['error']}")
                ml.check(st["ssd"]["reused"] == len(expected),
                         f"round {n}: reused {st['ssd']['reused']} of {len(expected)} files")
                fl.drop_caches()
                failed, wrong = fl.read_and_compare(mp, expected)
                st = fl.status(mp)
                ml.check(not failed and not wrong, f"round {n}: failed {failed}, wrong {wrong}")
                ml.check(st["backing"]["files"] == 0,
                         f"round {n}: {st['backing']['files']} backing reads on a warm cache")
                ml.check(st["ssd"]["hits"] > 0, f"round {n}: no SSD hit")


if __name__ == "__main__":
    ml.main(test)
