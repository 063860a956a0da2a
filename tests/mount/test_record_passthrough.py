#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Record files (files held by chunk) read by the kernel whole from the
SSD tier (issue 44): a file's chunks live in one sparse file of its size
in the entries' directory, each at its own offset, and once every chunk
is there and verified, and its reader read it as a stream, the file's
next open is passed through from that file: no READ reaches the daemon.

With --mem 16M --chunk-size 256K (files above 1 MiB by chunk), the SSD
tier and --ssd-check once, where passthrough is on:
- layout: after a first pass each record file has one file in the
  entries' directory, of its size;
- streams: shards read in order are passed through on the next pass
  (chunks.ssd.kernel.opens, no READ for them), every byte the backing
  file's, also at random offsets, and two opens at once share one mode;
  a file read by random small preads (an LMDB's page faults) is not
  (not_streamed_opens) and keeps the chunks' path, with the same bytes;
- remount: the chunks are taken back; a shard's first open is the
  daemon's (its chunks are checked by their first read, and no stream
  was seen yet in this mount), the one after it the kernel's;
- resident (the default --ssd-check): chunks read with O_DIRECT are
  checked bytes, not pages, so no record file is passed through, and the
  bytes are the same.
Exit 77 only without FUSE."""
import os
import random

import mountlib as ml

CHUNK = 256 << 10
SHARDS = {f"shards/train-{i}.tfrecord": 3 * ml.MIB + 1000 * i for i in range(4)}
RANDOM = "db/data.mdb"


def make_dataset(root):
    expected = ml.random_dataset(root, 10, 45, 60_000)
    expected.update(ml.write_random_files(root, {**SHARDS, RANDOM: 2 * ml.MIB + 5},
                                          random.Random(7)))
    return expected


def options(cache, *more):
    return ml.chunk_options(cache, CHUNK, *more)


def kernel(mp):
    return ml.status(mp)["chunks"]["ssd"]["kernel"]


def read_stream(mp, rel, data):
    with open(os.path.join(mp, rel), "rb") as f:
        got = b"".join(iter(lambda: f.read(256 << 10), b""))
    ml.check(got == data, f"{rel}: differs read in order")


def read_random(mp, rel, data, rng):
    with open(os.path.join(mp, rel), "rb", buffering=0) as f:
        for _ in range(200):
            off = rng.randrange(len(data))
            ml.check(os.pread(f.fileno(), 4096, off) == data[off:off + 4096],
                     f"{rel}: pread(4096, {off}) differs")


def one_pass(mp, expected, rng):
    for rel in sorted(SHARDS):
        read_stream(mp, rel, expected[rel])
    read_random(mp, RANDOM, expected[RANDOM], rng)


def stored(mp):
    c = ml.status(mp)["chunks"]
    return c["ssd"]["chunks"] >= c["chunks"] and c["ssd"]["pending_bytes"] == 0


def case_once(data, cache, mp, expected):
    rng = random.Random(1)
    with ml.mounted(data, mp, *options(cache, "--ssd-check", "once")):
        st = ml.status(mp)
        if st["passthrough"]["state"] != "on":
            ml.check(not kernel(mp)["on"], f"passthrough off, kernel on: {kernel(mp)}")
            one_pass(mp, expected, rng)
            return False
        ml.check(kernel(mp)["on"], f"passthrough on, chunks' kernel off: {kernel(mp)}")
        one_pass(mp, expected, rng)
        ml.check(ml.wait_until(lambda: stored(mp), 60), f"not stored: {ml.status(mp)['chunks']}")
        entries = [os.path.join(cache, d, n) for d in os.listdir(cache) if d.endswith(".cache.d")
                   for n in os.listdir(os.path.join(cache, d))]
        shared = sorted(os.path.getsize(p) for p in entries if os.path.basename(p).startswith("r-"))
        want = sorted(len(expected[r]) for r in list(SHARDS) + [RANDOM])
        ml.check(shared == want, f"shared files {shared}, record files {want}")

        ml.drop_caches("3")
        before, k0 = ml.status(mp), kernel(mp)
        for rel in sorted(SHARDS):
            read_stream(mp, rel, expected[rel])
        after, k1 = ml.status(mp), kernel(mp)
        handed = k1["opens"] - k0["opens"]
        reads = after["chunks"]["reads"] - before["chunks"]["reads"]
        read_random(mp, RANDOM, expected[RANDOM], rng)
        k2 = kernel(mp)
        not_streamed = k2["not_streamed_opens"] - k1["not_streamed_opens"]
        ml.log(f"once: {handed} passed through, {reads} chunk READs for them, {not_streamed} "
               f"not streamed; kernel {k2}; passthrough {after['passthrough']}")
        ml.check(handed == len(SHARDS), f"{handed} of {len(SHARDS)} shards passed through: {k1}")
        ml.check(reads == 0, f"{reads} chunk READs of shards passed through")
        ml.check(not_streamed == 1, f"the randomly read file was not told apart: {k2}")
        rel = sorted(SHARDS)[1]
        d = expected[rel]
        with open(os.path.join(mp, rel), "rb", buffering=0) as a, \
                open(os.path.join(mp, rel), "rb", buffering=0) as b:
            for _ in range(50):
                off = rng.randrange(len(d) + 10)
                ml.check(os.pread(a.fileno(), 70_000, off) == d[off:off + 70_000] and
                         os.pread(b.fileno(), 100, off) == d[off:off + 100],
                         f"{rel}: pread at {off} differs, passed through")
    return True


def case_remount(data, cache, mp, expected):
    with ml.mounted(data, mp, *options(cache, "--ssd-check", "once")):
        c = ml.status(mp)["chunks"]
        ml.check(c["ssd"]["reused"] >= c["chunks"] - 2, f"chunks not reused: {c['ssd']}")
        rel = sorted(SHARDS)[0]
        k0 = kernel(mp)
        read_stream(mp, rel, expected[rel])
        k1 = kernel(mp)
        ml.check(k1["opens"] == k0["opens"], f"passed through before any check: {k1}")
        read_stream(mp, rel, expected[rel])
        k2 = kernel(mp)
        ml.log(f"remount: {k0} -> {k1} -> {k2}")
        ml.check(k2["opens"] == k1["opens"] + 1, f"checked shard not passed through: {k2}")


def case_resident(data, cache, mp, expected):
    rng = random.Random(2)
    with ml.mounted(data, mp, *options(cache)):
        ml.drop_caches("3")
        one_pass(mp, expected, rng)
        one_pass(mp, expected, rng)
        k = kernel(mp)
        ml.log(f"resident: {k}")
        ml.check(k["opens"] == 0, f"passed through unchecked pages: {k}")


def test():
    with ml.temp_dir() as tmp:
        data, cache, mp = ml.make_dirs(tmp, "data", "cache", "mnt")
        expected = make_dataset(data)
        on = {}

        def once():
            on["yes"] = case_once(data, cache, mp, expected)

        def remount():
            if on.get("yes"):
                case_remount(data, cache, mp, expected)

        ml.run_cases(("once", once), ("remount", remount),
                     ("resident", lambda: case_resident(data, cache, mp, expected)))


if __name__ == "__main__":
    ml.main(test)
