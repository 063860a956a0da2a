# SPDX-License-Identifier: MIT
"""TFRecord shards as TensorFlow users write and read them, for
test_tfrecord.py. Nothing in it knows about clairfs.

argv[1] is a JSON object:
- {"write": DIR, "shards": S, "records": R, "min": A, "max": B, "seed": X}:
  writes DIR/train-SSSSS.tfrecord with tf.io.TFRecordWriter, R records
  each; record k (0-based over all shards) is k as 8 little-endian bytes
  then A..B random bytes;
- {"root": DIR, "pattern": P, "seed": S, "epochs": E, "reader":
  "parallel_reads" | "interleave", "cycle": N, "batch_size": B}: reads
  list_files(DIR/P, shuffle=True, seed=S) through TFRecordDataset
  (num_parallel_reads=N, or .interleave(TFRecordDataset, cycle_length=N))
  in a plain loop of E epochs. TFRecordDataset checks every record's
  CRCs (a bad byte raises DataLossError). Prints one JSON line per epoch:
  {"epoch": e, "ids": [record numbers in the order yielded]}."""
import json
import os
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402


def write(cfg):
    rng = random.Random(cfg["seed"])
    os.makedirs(cfg["write"], exist_ok=True)
    k = 0
    for s in range(cfg["shards"]):
        path = os.path.join(cfg["write"], f"train-{s:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for _ in range(cfg["records"]):
                w.write(k.to_bytes(8, "little") + rng.randbytes(rng.randint(cfg["min"], cfg["max"])))
                k += 1


def read(cfg):
    files = tf.data.Dataset.list_files(os.path.join(cfg["root"], cfg["pattern"]), shuffle=True,
                                       seed=cfg["seed"])
    if cfg["reader"] == "interleave":
        ds = files.interleave(tf.data.TFRecordDataset, cycle_length=cfg["cycle"], block_length=1)
    else:
        ds = tf.data.TFRecordDataset(files, num_parallel_reads=cfg["cycle"])
    ds = ds.map(lambda r: tf.io.decode_raw(tf.strings.substr(r, 0, 8), tf.int64)[0])
    ds = ds.batch(cfg["batch_size"])
    for e in range(cfg["epochs"]):
        ids = [int(x) for batch in ds for x in batch.numpy()]
        print(json.dumps({"epoch": e, "ids": ids}), flush=True)


if __name__ == "__main__":
    cfg = json.loads(sys.argv[1])
    write(cfg) if "write" in cfg else read(cfg)
