#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a deterministic set of TFRecord shards of random records.

    gen_tfrecord.py OUT [--shards 64] [--bytes 1.1e9 | --records-per-shard N]
                        [--min-kb 50] [--max-kb 200] [--seed 0]

OUT/train-SSSSS-of-NNNNN.tfrecord, written with tf.io.TFRecordWriter, so
each record carries TFRecord's framing (length, its CRC, data, its CRC: 16
bytes more per record) and tf.data's reader checks it. Record i (numbered
across the dataset, shard 0's first) is i as a little-endian 64-bit
integer, then seeded random bytes: its size is uniform in [--min-kb,
--max-kb] KB (10^3 bytes), like encoded images or audio, which do not
compress either. bench/tfrecord_job.py reads the number back to check that
an epoch saw every record once; nothing decodes the rest.

--bytes B draws record sizes until they add up to B, then splits the
records into --shards shards in order, as evenly as the counts go (shard s
holds records s*N//S to (s+1)*N//S - 1); --records-per-shard N writes N
records into every shard instead. Same arguments, same bytes (numpy's
PCG64 from --seed). After writing, one shard is read back through
tf.data (every record's CRC verified, its number checked).

Needs tensorflow and numpy: bench/scenarios.py runs it with the frameworks
interpreter (CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python).
Prints the dataset's figures as one JSON object on stdout.
"""
import argparse
import json
import os
import statistics
import sys
import time

KB = 1000


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--shards", type=int, default=64)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--bytes", type=float, default=1.1e9,
                      help="records' payload bytes in all [1.1e9]")
    size.add_argument("--records-per-shard", type=int)
    ap.add_argument("--min-kb", type=float, default=50)
    ap.add_argument("--max-kb", type=float, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.shards < 1 or a.min_kb * KB < 8 or a.max_kb < a.min_kb:
        ap.error("--shards must be positive and 8 bytes <= --min-kb <= --max-kb")
    return a


def uniform_sizes(rng, min_kb, max_kb, count, total_bytes):
    """COUNT sizes in bytes uniform in [MIN_KB, MAX_KB] KB, or (COUNT 0)
    as many as first reach TOTAL_BYTES (gen_lmdb.py's values too)."""
    lo, hi = int(min_kb * KB), int(max_kb * KB)
    if count:
        return rng.integers(lo, hi + 1, count).tolist()
    sizes, total = [], 0
    while total < total_bytes:
        s = int(rng.integers(lo, hi + 1))
        sizes.append(s)
        total += s
    return sizes


def record_sizes(rng, a):
    """Every record's size in bytes, in record order."""
    return uniform_sizes(rng, a.min_kb, a.max_kb, (a.records_per_shard or 0) * a.shards, a.bytes)


def shard_path(out, s, shards):
    return os.path.join(out, f"train-{s:05d}-of-{shards:05d}.tfrecord")


def write_shards(tf, rng, out, sizes, shards):
    """Writes the records into the shards; returns each shard's path."""
    n = len(sizes)
    paths = []
    for s in range(shards):
        path = shard_path(out, s, shards)
        with tf.io.TFRecordWriter(path) as w:
            for i in range(s * n // shards, (s + 1) * n // shards):
                w.write(i.to_bytes(8, "little") + rng.bytes(sizes[i] - 8))
        paths.append(path)
    return paths


def check_shard(tf, path, first, count):
    """Reads PATH back through tf.data (which verifies every record's CRC)
    and checks it holds records FIRST..FIRST+COUNT-1 in order."""
    nums = [int.from_bytes(r.numpy()[:8], "little") for r in tf.data.TFRecordDataset(path)]
    if nums != list(range(first, first + count)):
        sys.exit(f"gen_tfrecord: {path} holds records {nums[:3]}..., "
                 f"expected {first}..{first + count - 1}")


def generate(a):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    t0 = time.perf_counter()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    sizes = record_sizes(rng, a)
    if len(sizes) < a.shards:
        sys.exit(f"gen_tfrecord: {len(sizes)} records do not fill {a.shards} shards")
    paths = write_shards(tf, rng, a.out, sizes, a.shards)
    n = len(sizes)
    last = a.shards - 1
    check_shard(tf, paths[last], last * n // a.shards, n - last * n // a.shards)
    shard_bytes = sorted(os.path.getsize(p) for p in paths)
    total = sum(shard_bytes)
    return {"kind": "tfrecord", "files": a.shards, "shards": a.shards, "records": n,
            "bytes": total, "record_bytes": sum(sizes),
            "mean": total / a.shards, "median": shard_bytes[a.shards // 2],
            "min": shard_bytes[0], "max": shard_bytes[-1],
            "record_mean": sum(sizes) / n, "record_median": statistics.median(sizes),
            "record_min_kb": a.min_kb, "record_max_kb": a.max_kb, "seed": a.seed,
            "write_s": round(time.perf_counter() - t0, 1), "tensorflow": tf.__version__}


def main(argv=None):
    info = generate(parse_args(argv))
    json.dump(info, sys.stdout)
    print()


if __name__ == "__main__":
    main()
