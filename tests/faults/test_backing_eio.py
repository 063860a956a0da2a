#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Backing EIO on some files, through faultfs as the backing directory:

- demand reads: exactly those files fail with EIO (again on a retry: an
  error is never cached as content), every other file is byte for byte the
  source's, files with short or slow reads included; backing.errors
  counts them;
- a registered job with room for the whole dataset: prefetch reaches past
  the failing files (every other file lands in RAM) and counts each
  failure in status (backing.errors) before the job reads them; the job,
  reading in its order, gets EIO for exactly those files and the right
  bytes for all others."""
import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

BAD = ("img0003.jpg", "img0017.jpg")  # in every class: 8 files
SHORT = "img0005.jpg"
SLOW = "img0009.jpg"  # each read 50 ms late


def bad_files(expected):
    return sorted(rel for rel in expected if os.path.basename(rel) in BAD)


def case_demand(tmp, ff, expected):
    mp = os.path.join(tmp, "mnt-demand")
    os.makedirs(mp)
    bad = bad_files(expected)
    with ml.mounted(ff.mp, mp, "--mem", "64M"):
        failed, wrong = fl.read_and_compare(mp, expected)
        again, _ = fl.read_and_compare(mp, expected, bad)
        st = fl.status(mp)
        ml.log(f"demand: {len(failed)} failed, {len(wrong)} wrong, backing {st['backing']}, "
               f"faultfs {ff.counters()}")
        ml.check(not wrong, f"demand: wrong bytes in {wrong[:5]}")
        ml.check(sorted(failed) == bad, f"demand: failed {sorted(failed)}, expected {bad}")
        ml.check(set(failed.values()) == {errno.EIO}, f"demand: errnos {set(failed.values())}")
        ml.check(sorted(again) == bad and set(again.values()) == {errno.EIO},
                 f"demand: a second read of the failing files gave {again}")
        ml.check(st["backing"]["errors"] >= len(bad),
                 f"demand: backing.errors {st['backing']['errors']} for {len(bad)} failing files")
        ml.check(ff.counters()["short"] > 0, "demand: faultfs injected no short read")
        ml.check(ff.counters()["delay"] > 0, "demand: faultfs delayed no read")


def case_prefetch(tmp, ff, expected):
    mp = os.path.join(tmp, "mnt-prefetch")
    os.makedirs(mp)
    bad = bad_files(expected)
    good = len(expected) - len(bad)
    order = fl.job_order(ff.source)
    with ml.mounted(ff.mp, mp, "--mem", "256M"):
        fl.register(mp, **fl.JOB_KEYS, epochs=1)
        # Opening the first file starts the job; prefetch then runs ahead.
        first, _ = fl.read_and_compare(mp, expected, order[:1])
        # Every readable file lands in RAM, those after a failing one too
        # (the one read whole already handed over to the kernel's page cache).
        def in_ram(st):
            return st["ram"]["files"] + st["ram"]["kernel"]["files"]
        done = ml.wait_until(lambda: in_ram(fl.status(mp)) >= good, 60)
        st = fl.status(mp)
        ml.log(f"prefetch: {st['prefetch']}, ram files {st['ram']['files']} "
               f"(+{st['ram']['kernel']['files']} the kernel's), backing {st['backing']}, "
               f"mode {st['mode']}")
        ml.check(done, f"prefetch: RAM holds {in_ram(st)} of the {good} good files")
        ml.check(st["backing"]["errors"] >= len(bad) - (order[0] in bad),
                 f"prefetch: backing.errors {st['backing']['errors']}, {len(bad)} failing files")
        failed, wrong = fl.read_and_compare(mp, expected, order[1:])
        failed.update(first)
        ml.check(not wrong, f"prefetch: wrong bytes in {wrong[:5]}")
        ml.check(sorted(failed) == bad, f"prefetch: failed {sorted(failed)}, expected {bad}")
        ml.check(set(failed.values()) == {errno.EIO}, f"prefetch: errnos {set(failed.values())}")
        st = fl.status(mp)
        ml.check(st["mode"] == "clairvoyant", f"prefetch: mode {st['mode']} ({st['reason']})")


def test():
    with ml.temp_dir() as tmp:
        src, faulty = ml.make_dirs(tmp, "source", "faulty")
        expected = fl.make_dataset(src)
        with fl.faultfs(src, faulty) as ff:
            ff.rule(*(f"eio {name}" for name in BAD), f"short {SHORT}", f"delay 50 {SLOW}")
            ml.run_cases(("demand", lambda: case_demand(tmp, ff, expected)),
                         ("prefetch", lambda: case_prefetch(tmp, ff, expected)))


if __name__ == "__main__":
    ml.main(test)
