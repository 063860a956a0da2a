#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PyTorch DataLoader over one LMDB environment, timed per epoch.

    lmdb_job.py ENV [--epochs 3] [--batch 64] [--workers 2] [--seed 0]
        [--generator explicit|global] [--world W --rank R] [--records N]
        [--step-sleep S] [--loop-dev loopN] [--cpuacct DIR]
        [--daemon-pid PID] [--wait-for PATH] [--resident]

What a PyTorch user writes to read a dataset packed into LMDB (ENV is the
environment directory, holding data.mdb):

    class LmdbDataset(torch.utils.data.Dataset):
        def __getitem__(self, i):
            if self.env is None:   # once per worker process
                self.env = lmdb.open(ENV, readonly=True, lock=False,
                                     readahead=False, meminit=False)
            with self.env.begin() as txn:
                return decode(txn.get(b'%08d' % i))

    torch.manual_seed(0)
    loader = DataLoader(LmdbDataset(), batch_size=64, shuffle=True, num_workers=2)
    for epoch in range(3):
        for batch in loader: ...

The DataLoader (sampler, generator, workers) is bench/train_job.py's
(make_loader(), the same flags), so the order is a RandomSampler's, as
for files. Nothing in it knows about clairfs: the data path is the only
thing that changes between scenarios. LMDB maps data.mdb and txn.get()
copies the value out of the map, so each sample is read by page faults
(readahead=False: LMDB advises MADV_RANDOM, so a fault reads no more than
the kernel's minimum around it) on the B-tree's pages and the value's
overflow pages, which bench/gen_lmdb.py put in a shuffled order: a random
sampler jumps about data.mdb.

"decode" is cheap on purpose: the value's header is checked (its index
and the CRC-32 of the rest, gen_lmdb.check_value(); a wrong value fails
the job) and the sample is the tensor [index, length], so an epoch costs
what reading the values costs. Every epoch must see every sample exactly
once (--records N: the environment holds 0..N-1; without it, its entry
count), or the job exits 1; with a DistributedSampler (--world above 1)
only the headers are checked.

Output, as bench/train_job.py's (bench/scenarios.py reads any of them):
first {"setup_s", "files": 1, "records", ...} (the entry count read from a
short-lived read-only environment in the main process, closed before the
workers start), then one JSON object per epoch with train_job.py's figures
(epoch_record: wall_s, samples_per_s, first_batch_s, shared_fs_bytes/_reads,
the CPU figures; samples are values), plus steps (batches) and
record_bytes (the values' bytes).

Runs with any Python that has torch and python-lmdb (bench/scenarios.py
takes it from CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python);
stdout holds nothing but the JSON lines.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_lmdb import check_value, key_of  # noqa: E402
from tfrecord_job import Tally  # noqa: E402
# The figures are measured exactly as the torch job measures them, and the
# loader is built as it builds it.
from train_job import (add_harness_args, add_loader_args, clairfs_status_path,  # noqa: E402
                       epoch_record, make_loader, resident_bytes, snapshot)

import lmdb  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import Dataset  # noqa: E402


def open_env(path):
    # The usual recipe for reading an LMDB dataset from DataLoader workers:
    # read-only, no lock file (nothing writes it), no readahead (samples
    # are read at random; LMDB then advises MADV_RANDOM), no zeroing of
    # pages it would write. Opened once per worker process, on first use.
    return lmdb.open(path, readonly=True, lock=False, readahead=False, meminit=False)


class LmdbDataset(Dataset):
    """Sample i: the value of key b'%08d' % i, checked, as [i, length]."""

    def __init__(self, path, length):
        self.path = path
        self.length = length
        self.env = None
        self.pid = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        # An environment must not cross a fork: each worker opens its own.
        if self.env is None or self.pid != os.getpid():
            self.env = open_env(self.path)
            self.pid = os.getpid()
        with self.env.begin(write=False) as txn:
            value = txn.get(key_of(i))
        if value is None:
            raise KeyError(f"lmdb_job: no key {key_of(i)!r} in {self.path}")
        why = check_value(i, value)
        if why:
            raise ValueError(f"lmdb_job: {self.path}: {why}")
        return torch.tensor([i, len(value)], dtype=torch.int64)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", metavar="ENV")
    ap.add_argument("--epochs", type=int, default=3)
    add_loader_args(ap)
    ap.add_argument("--records", type=int, help="the environment's values (keys 0..N-1)")
    add_harness_args(ap)
    a = ap.parse_args(argv)
    if a.epochs < 1 or a.batch < 1 or a.workers < 0:
        ap.error("--epochs and --batch must be positive, --workers not negative")
    a.clairfs_status = clairfs_status_path(a.data) if a.daemon_pid else None
    return a


def entries(path):
    """The environment's entry count, from a read-only environment that is
    closed again before any worker forks."""
    env = open_env(path)
    try:
        return env.stat()["entries"]
    finally:
        env.close()


def main(argv=None):
    a = parse_args(argv)
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    n_env = entries(a.data)
    if a.records is not None and a.records != n_env:
        sys.exit(f"lmdb_job: {a.data} holds {n_env} entries, expected --records {a.records}")
    ds = LmdbDataset(a.data, n_env)
    loader, sampler = make_loader(ds, a)
    setup = {"setup_s": round(time.perf_counter() - t0, 3), "files": 1, "records": n_env,
             "framework": "lmdb", "torch": torch.__version__, "lmdb": lmdb.__version__,
             "workers": a.workers}
    print(json.dumps(setup), flush=True)

    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.01)

    whole = sampler is None  # a DistributedSampler's rank sees its share only
    for epoch in range(a.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        tally = Tally(np, n_env)
        s0 = snapshot(a)
        n = steps = nbytes = 0
        first = None
        for batch in loader:
            if first is None:
                first = time.perf_counter() - s0["t"]
            numbers = batch[:, 0].numpy()
            tally.add(numbers)
            nbytes += int(batch[:, 1].sum())
            n += len(numbers)
            steps += 1
            if a.step_sleep:
                time.sleep(a.step_sleep)
        s1 = snapshot(a)  # workers are joined: their CPU is in RUSAGE_CHILDREN
        out = epoch_record(a, epoch, n, steps, s0, s1, s1, first)
        out["record_bytes"] = nbytes
        if a.resident:
            out["dataset_resident_bytes"] = resident_bytes(a.data)
        print(json.dumps(out), flush=True)
        why = tally.problem() if whole else None
        if why:
            sys.exit(f"lmdb_job: epoch {epoch} read {n} values: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
