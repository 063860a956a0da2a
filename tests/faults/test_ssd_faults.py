#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Read errors and corrupt bytes on the SSD cache device (faultfs as the
--cache-dir, with rules on the cache file). Every file is first stored in
the SSD tier; then, with the kernel's pages dropped so reads reach the
tiers:

- corrupt bytes: every read still returns the backing file's bytes; the
  checksum caught the bad entries (ssd.errors counts them), they were
  refetched from the backing store (backing.files grew by as many), and
  the tier stays on (the entry was bad, not the device);
- read errors (EIO): every read still returns the right bytes, the errors
  are counted, and after repeated device errors the tier turns itself off
  with one status line; the mount keeps serving."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402


def stored_all(mp, n):
    st = fl.status(mp)["ssd"]
    return st["files"] >= n and st["pending_bytes"] == 0


def settled(mp, before, seen):
    """Background fetches (the detected order's prefetch, stage-in) count
    an SSD error when their read fails and a backing read only after it:
    status taken between the two would see an error not yet refetched.
    Nor is one idle moment the end: the scheduler queues its next round
    up to 10 ms later (seen: 12 more SSD errors after an idle snapshot).
    So: wait for an idle pool whose counts agree. An error never
    refetched keeps them apart, and the wait's timeout fails the case."""
    st = seen["status"] = fl.status(mp)
    p = st["prefetch"]
    refetched = st["backing"]["files"] - before["backing"]["files"]
    errors = st["ssd"]["errors"] - before["ssd"]["errors"]
    return p["queued"] == 0 and p["running"] == 0 and refetched >= errors


def fill_ssd(mp, expected, what):
    failed, wrong = fl.read_and_compare(mp, expected)
    ml.check(not failed and not wrong, f"{what}: failed {failed}, wrong {wrong[:5]}")
    ok = ml.wait_until(lambda: stored_all(mp, len(expected)), 60)
    ml.check(ok, f"{what}: the SSD tier holds {fl.status(mp)['ssd']} of {len(expected)} files")
    fl.drop_caches()


def case(tmp, src, expected, rule, what):
    cache, faulty, mp = ml.make_dirs(tmp, f"cache-{what}", f"faulty-{what}", f"mnt-{what}")
    with fl.faultfs(cache, faulty) as ff, \
            ml.mounted(src, mp, "--mem", fl.SMALL_MEM, "--cache-dir", faulty, "--ssd", "64M"):
        fill_ssd(mp, expected, what)
        before = fl.status(mp)
        ff.rule(rule)
        failed, wrong = fl.read_and_compare(mp, expected)
        seen = {}
        ok = ml.wait_until(lambda: settled(mp, before, seen), 60)
        # The snapshot that settled: a later one may catch the next round.
        after = seen["status"]
        refetched = after["backing"]["files"] - before["backing"]["files"]
        errors = after["ssd"]["errors"] - before["ssd"]["errors"]
        ml.log(f"{what}: {len(failed)} failed, {len(wrong)} wrong, {errors} ssd errors, "
               f"{refetched} refetched, ssd.error {after['ssd']['error']!r}, "
               f"prefetched {after['prefetch']['prefetched'] - before['prefetch']['prefetched']}, "
               f"faultfs {ff.counters()}")
        ml.check(not failed and not wrong, f"{what}: failed {failed}, wrong {wrong[:5]}")
        ml.check(ok, f"{what}: fetches not settled after 60 s: {after['prefetch']}")
        ml.check(errors > 0, f"{what}: no SSD error counted")
        ml.check(refetched >= errors, f"{what}: {errors} bad entries, {refetched} refetched")
        return after


def test():
    with ml.temp_dir() as tmp:
        src = ml.make_dirs(tmp, "source")[0]
        expected = fl.make_dataset(src)

        def corrupt():
            st = case(tmp, src, expected, "corrupt .cache", "corrupt")
            # A mismatch is the entry's fault, not the device's: the tier stays.
            ml.check(st["ssd"]["enabled"], f"corrupt: the tier turned off: {st['ssd']}")

        def eio():
            st = case(tmp, src, expected, "eio .cache", "eio")
            err = st["ssd"]["error"] or ""
            ml.check(not st["ssd"]["enabled"], f"eio: the tier is still on: {st['ssd']}")
            ml.check("Input/output error" in err and "\n" not in err, f"eio: ssd.error {err!r}")

        ml.run_cases(("corrupt", corrupt), ("eio", eio))


if __name__ == "__main__":
    ml.main(test)
