#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A tf.data pipeline over TFRecord shards, timed per epoch.

    tfrecord_job.py DATA [--epochs 3] [--batch 64] [--seed 0]
        [--parallel-reads 8] [--records N] [--step-sleep S]
        [--loop-dev loopN] [--cpuacct DIR] [--daemon-pid PID]
        [--wait-for PATH] [--resident]

What a TensorFlow user writes to read a sharded TFRecord dataset:

    files = tf.data.Dataset.list_files(DATA + "/train-*.tfrecord", shuffle=True, seed=S)
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(64).prefetch(tf.data.AUTOTUNE)
    for epoch in range(3):
        for batch in ds: ...

Nothing in it knows about clairfs: the data path is the only thing that
changes between scenarios. TFRecordDataset reads 8 shards at a time, each
from start to end in 256 KiB reads (its default buffer), interleaving
their records; list_files reshuffles the shard order for every iterator,
so every epoch reads the shards in another order. parse is cheap on
purpose (the record's number from its first 8 bytes, and its length), so
an epoch costs what reading the bytes costs (bench/gen_tfrecord.py writes
records of random bytes).

Every epoch must see every record exactly once: the job counts the record
numbers it gets and exits 1 if one is missing, repeated or out of range
(--records N: the dataset holds records 0..N-1; without it, the first
epoch's count is the reference for the others). TFRecordDataset verifies
every record's CRCs itself: a bad byte raises DataLossError, which fails
the job.

Output, as bench/train_job.py's (bench/scenarios.py reads any of them):
first {"setup_s", "files", ...} (the shards listed and the pipeline built),
then one JSON object per epoch with train_job.py's figures (epoch_record:
wall_s, samples_per_s, first_batch_s, shared_fs_bytes/_reads, the CPU
figures; samples are records), plus steps (batches), record_bytes (the
records' payload) and, as keras_job.py, iterator_switch_s and
wall_less_switch_s: the epoch's iterator is kept until its last batch has
been taken and dropped after, timed apart, because dropping an exhausted
tf.data iterator joins tf.data's autotune thread, which can take seconds
whatever the data path (keras_job.py's docstring). wall_s includes it, as
a plain `for batch in ds` loop pays it.

Runs with any Python that has tensorflow (bench/scenarios.py takes it from
CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python);
TensorFlow's C++ logging is kept to errors (TF_CPP_MIN_LOG_LEVEL=2), and
stdout holds nothing but the JSON lines.
"""
import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The figures are measured exactly as the torch job measures them.
from train_job import (add_harness_args, clairfs_status_path, epoch_record,  # noqa: E402
                       resident_bytes, snapshot)

PATTERN = "train-*.tfrecord"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parallel-reads", type=int, default=8,
                    help="TFRecordDataset's num_parallel_reads [8]")
    ap.add_argument("--records", type=int, help="the dataset's records (numbered 0..N-1)")
    add_harness_args(ap)
    a = ap.parse_args(argv)
    if a.epochs < 1 or a.batch < 1 or a.parallel_reads < 1:
        ap.error("--epochs, --batch and --parallel-reads must be positive")
    a.clairfs_status = clairfs_status_path(a.data) if a.daemon_pid else None
    return a


def pipeline(tf, a):
    """The user's dataset: shuffled shard list, 8 shards read at once,
    a cheap parse in AUTOTUNE threads, batches, prefetch."""
    def parse(record):
        number = tf.io.decode_raw(tf.strings.substr(record, 0, 8), tf.int64,
                                  little_endian=True)[0]
        return number, tf.strings.length(record)

    files = tf.data.Dataset.list_files(os.path.join(a.data, PATTERN), shuffle=True,
                                       seed=a.seed)
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=a.parallel_reads)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(a.batch).prefetch(tf.data.AUTOTUNE)


class Tally:
    """How often an epoch saw each record number."""

    def __init__(self, np, records):
        self.np = np
        self.seen = np.zeros(records or 0, dtype=np.int32)
        self.out_of_range = 0

    def add(self, numbers):
        np = self.np
        bad = (numbers < 0) | (numbers >= len(self.seen))
        self.out_of_range += int(bad.sum())
        np.add.at(self.seen, numbers[~bad], 1)

    def grow(self, numbers):
        """First epoch without --records: the numbers set the size."""
        top = int(numbers.max()) + 1 if len(numbers) else 0
        if top > len(self.seen):
            self.seen = self.np.concatenate([self.seen, self.np.zeros(top - len(self.seen),
                                                                      dtype=self.np.int32)])

    def problem(self):
        """Why the epoch did not see every record once, or None."""
        np = self.np
        missing = int((self.seen == 0).sum())
        repeated = int((self.seen > 1).sum())
        if not (missing or repeated or self.out_of_range):
            return None
        first = np.flatnonzero(self.seen != 1)[:5].tolist()
        return (f"{missing} record(s) missing, {repeated} seen more than once, "
                f"{self.out_of_range} numbered outside 0..{len(self.seen) - 1} "
                f"(first wrong: {first})")


def run_epoch(np, ds, a, records):
    """Iterates DS once. Returns (records seen, batches, payload bytes,
    seconds to the first batch, snapshot after the last batch, the tally)."""
    tally = Tally(np, records)
    s0 = snapshot(a)
    n = steps = nbytes = 0
    first = None
    it = iter(ds)
    for numbers, lengths in it:
        if first is None:
            first = time.perf_counter() - s0["t"]
        numbers = numbers.numpy()
        if records is None:
            tally.grow(numbers)
        tally.add(numbers)
        n += len(numbers)
        nbytes += int(lengths.numpy().sum())
        steps += 1
        if a.step_sleep:
            time.sleep(a.step_sleep)
    s_last = snapshot(a)
    # Dropping the exhausted iterator joins tf.data's autotune thread
    # (see the docstring): timed apart, as keras_job.py's iterator switch.
    del it
    return s0, s_last, n, steps, nbytes, first, tally


def main(argv=None):
    a = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    t_import = time.perf_counter()
    import numpy as np
    import tensorflow as tf
    import_s = time.perf_counter() - t_import

    t0 = time.perf_counter()
    shards = len(glob.glob(os.path.join(a.data, PATTERN)))
    if not shards:
        sys.exit(f"tfrecord_job: no {PATTERN} in {a.data}")
    ds = pipeline(tf, a)
    setup = {"setup_s": round(time.perf_counter() - t0, 3), "files": shards,
             "records": a.records, "import_s": round(import_s, 3), "framework": "tfrecord",
             "tensorflow": tf.__version__, "parallel_reads": a.parallel_reads}
    print(json.dumps(setup), flush=True)

    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.01)

    records = a.records
    for epoch in range(a.epochs):
        s0, s_last, n, steps, nbytes, first, tally = run_epoch(np, ds, a, records)
        s_end = snapshot(a)
        out = epoch_record(a, epoch, n, steps, s0, s_end, s_end, first)
        out["record_bytes"] = nbytes
        out["iterator_switch_s"] = round(s_end["t"] - s_last["t"], 3)
        out["wall_less_switch_s"] = round(out["wall_s"] - out["iterator_switch_s"], 3)
        if a.resident:
            out["dataset_resident_bytes"] = resident_bytes(a.data)
        print(json.dumps(out), flush=True)
        why = tally.problem()
        if why:
            sys.exit(f"tfrecord_job: epoch {epoch} read {n} records: {why}")
        # Without --records, the first epoch's count holds for the others.
        records = len(tally.seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
