#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hand-over (--handover) through a real mount: a file read whole through the
mount is in the kernel's page cache, so the RAM tier drops its own copy
(each byte in memory once), and takes it back when the kernel lets go.

- every file read whole once: status ram.kernel.files and .bytes are the
  dataset, the tier holds no copy (ram.files 0) but its budget counts them
  (ram.bytes), the backing store was read once per file;
- read again: the same bytes, no READ request, no backing read, every open
  a RAM hit (ram.kernel.hits);
- the kernel evicts the inodes (drop_caches 2): their FORGETs clear the
  marks (ram.kernel.forgotten), and the next pass reads those files from the
  backing store again, byte for byte;
- the kernel drops the pages but keeps the inodes (drop_caches 1): the READs
  that follow are counted as misses, and at the 64th hand-over stops with
  its reason in status; the
  RAM tier then keeps its copies, so a further drop costs no backing read;
- by default (no --handover): the RAM tier keeps every file, nothing is
  marked.

Needs root (drop_caches) and /dev/fuse (exit 77 without FUSE)."""
import os
import tempfile
import time

import mountlib as ml

FILES = 160  # past the 64 misses that stop hand-over


def make_dataset(root):
    return ml.random_dataset(root, FILES, 19, 200_000)


status, read_all, drop_caches = ml.status, ml.read_expected, ml.drop_caches


def settled(mp, cond, what, timeout=20):
    """RELEASE and FORGET are asynchronous: wait for their effect."""
    ok = ml.wait_until(lambda: cond(status(mp)), timeout)
    ml.check(ok, f"{what}: status {status(mp)['ram']}")
    return status(mp)


def case_handover(data, mp, expected):
    total = sum(len(d) for d in expected.values())
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--handover"):
        read_all(mp, expected, "first pass")
        st = settled(mp, lambda s: s["ram"]["kernel"]["files"] == FILES, "first pass")
        k = st["ram"]["kernel"]
        ml.check(k["handover"] == "on" and k["bytes"] == total and k["handed_over"] == FILES,
                 f"first pass: kernel {k}, dataset {total} bytes")
        ml.check(st["ram"]["files"] == 0, f"first pass: the RAM tier still holds copies: "
                                          f"{st['ram']}")
        # The budget counts the files wherever they are.
        ml.check(st["ram"]["bytes"] == total, f"first pass: ram.bytes {st['ram']['bytes']}, "
                                              f"{total} handed over")
        ml.check(st["backing"]["files"] == FILES, f"first pass: backing {st['backing']}")
        log_state("handed over", st)

        reads = st["requests"]["read"]
        read_all(mp, expected, "second pass")
        st = status(mp)
        # The status read itself (a read and the one that finds EOF) is all
        # the READ between the two documents.
        ml.check(st["requests"]["read"] - reads <= 2,
                 f"second pass: {st['requests']['read'] - reads} READs for files the kernel holds")
        ml.check(st["backing"]["files"] == FILES, f"second pass read the backing store: "
                                                  f"{st['backing']}")
        ml.check(st["ram"]["kernel"]["hits"] >= FILES, f"second pass: {st['ram']['kernel']}")

        # Inodes evicted: their pages went with them, and the FORGETs say so.
        drop_caches("2")
        st = settled(mp, lambda s: s["ram"]["kernel"]["forgotten"] > 0, "drop_caches 2")
        forgotten = st["ram"]["kernel"]["forgotten"]
        ml.check(st["ram"]["kernel"]["files"] == FILES - forgotten,
                 f"after {forgotten} FORGETs: {st['ram']['kernel']}")
        before = st["backing"]["files"]
        read_all(mp, expected, "after FORGETs")
        st = settled(mp, lambda s: s["ram"]["kernel"]["files"] == FILES, "after FORGETs")
        ml.check(st["backing"]["files"] - before >= forgotten,
                 f"{forgotten} forgotten files, {st['backing']['files'] - before} backing reads")
        ml.check(st["ram"]["kernel"]["handover"] == "on" and st["ram"]["kernel"]["misses"] == 0,
                 f"FORGETs counted as misses: {st['ram']['kernel']}")
        log_state(f"{forgotten} forgotten, read again", st)

        # Pages dropped, inodes kept: the READs are misses, and enough of
        # them stop hand-over.
        drop_caches("1")
        before = status(mp)["backing"]["files"]
        read_all(mp, expected, "after the pages were dropped")
        st = status(mp)
        k = st["ram"]["kernel"]
        ml.check(k["misses"] >= 64, f"pages dropped: {k}")
        ml.check(k["handover"] == "stopped" and "dropped" in (k["reason"] or ""),
                 f"hand-over not stopped after {k['misses']} misses: {k}")
        ml.check(st["backing"]["files"] - before >= k["misses"],
                 f"{k['misses']} misses but {st['backing']['files'] - before} backing reads")
        log_state("stopped", st)

        # From here the RAM tier keeps what it serves: once every file has
        # been served again (the ones still marked the kernel's come back at
        # their next READ, so drop the pages first), a drop costs no backing
        # read.
        drop_caches("1")
        read_all(mp, expected, "after hand-over stopped")
        st = settled(mp, lambda s: s["ram"]["files"] == FILES and s["ram"]["kernel"]["files"] == 0,
                     "after hand-over stopped")
        drop_caches("1")
        before = st["backing"]["files"]
        read_all(mp, expected, "every file in RAM")
        st = status(mp)
        ml.check(st["backing"]["files"] == before,
                 f"{st['backing']['files'] - before} backing reads with every file in RAM")
        ml.check(st["ram"]["kernel"]["handed_over"] == k["handed_over"],
                 f"handed over after the stop: {st['ram']['kernel']}")
        log_state("kept", st)


def case_no_handover(data, mp, expected):
    # Off by default (clairfs(1) says why): the tier keeps every file.
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect"):
        read_all(mp, expected, "default")
        st = settled(mp, lambda s: s["ram"]["files"] == FILES, "default")
        k = st["ram"]["kernel"]
        ml.check(k["handover"] == "off" and k["files"] == 0 and k["handed_over"] == 0,
                 f"default: {k}")
        log_state("default (no hand-over)", st)


def log_state(what, st):
    k = st["ram"]["kernel"]
    ml.log(f"{what}: ram {st['ram']['files']} files {st['ram']['bytes']} B; kernel "
           f"{k['files']} files {k['bytes']} B, handed over {k['handed_over']}, hits {k['hits']}, "
           f"misses {k['misses']}, forgotten {k['forgotten']}, {k['handover']}; "
           f"backing {st['backing']['files']} files")


def test():
    # On disk, not tmpfs: the backing files' own pages must be droppable too.
    with tempfile.TemporaryDirectory(prefix="clairfs-handover.", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        expected = make_dataset(data)
        mps = [os.path.join(tmp, m) for m in ("mnt-h", "mnt-n")]
        for mp in mps:
            os.makedirs(mp)
        t0 = time.monotonic()
        ml.run_cases(("hand-over", lambda: case_handover(data, mps[0], expected)),
                     ("default", lambda: case_no_handover(data, mps[1], expected)))
        ml.log(f"done in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    ml.main(test)
