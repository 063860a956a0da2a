#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Datasets whose samples are byte ranges of one large file, read the way
training scripts read them, by the frameworks venv's Python (torch 2.x,
python-lmdb, h5py). Writes the data, or reads it for some epochs through a
torch DataLoader(shuffle=True, generator=Generator().manual_seed(seed))
with workers, each opening the file lazily in its own process ("drop":
the file's pages leave the page cache before each epoch). The loader
yields (index, sha1 of the sample's bytes), and the job prints one JSON line
per epoch: [[index, sha1], ...] in the order the loop received them.

Kinds:
- lmdb: keys b'%08d' % i, opened as the usual recipe does (readonly,
  lock=False, readahead=False, meminit=False): values are read through
  LMDB's mmap, page fault by page fault;
- hdf5: h5py, row i of dataset "x" (a 2-D uint8 array), read with pread.

usage: ranges_job.py '{"write": DIR, "kind": "lmdb", "n": 300, ...}'
       ranges_job.py '{"read": DIR, "kind": "lmdb", "seed": 3, ...}'"""
import hashlib
import json
import os
import random
import sys

import torch


def write_lmdb(cfg):
    import lmdb
    rng = random.Random(cfg.get("seed", 1))
    n = cfg["n"]
    values = [rng.randbytes(rng.randint(cfg["min"], cfg["max"])) for _ in range(n)]
    keys = list(range(n))
    rng.shuffle(keys)  # inserted out of key order, as a parallel build does
    env = lmdb.open(cfg["write"], map_size=1 << 32)
    with env.begin(write=True) as txn:
        for i in keys:
            txn.put(b"%08d" % i, values[i])
    env.close()
    return [hashlib.sha1(v).hexdigest() for v in values]


def write_hdf5(cfg):
    import h5py
    import numpy as np
    rng = np.random.default_rng(cfg.get("seed", 1))
    x = rng.integers(0, 256, size=(cfg["n"], cfg["row"]), dtype=np.uint8)
    os.makedirs(cfg["write"], exist_ok=True)
    with h5py.File(os.path.join(cfg["write"], "data.h5"), "w") as f:
        f.create_dataset("x", data=x)  # contiguous
    return [hashlib.sha1(r.tobytes()).hexdigest() for r in x]


class Lmdb(torch.utils.data.Dataset):
    def __init__(self, path, n):
        self.path, self.n, self.env = path, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import lmdb
        if self.env is None:  # per worker: an LMDB env does not survive a fork
            self.env = lmdb.open(self.path, readonly=True, lock=False, readahead=False,
                                 meminit=False)
        with self.env.begin() as txn:
            return i, hashlib.sha1(txn.get(b"%08d" % i)).hexdigest()


class Hdf5(torch.utils.data.Dataset):
    def __init__(self, path, n):
        self.path, self.n, self.f = path, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import h5py
        if self.f is None:
            self.f = h5py.File(os.path.join(self.path, "data.h5"), "r")
        return i, hashlib.sha1(self.f["x"][i].tobytes()).hexdigest()


def read(cfg):
    ds = (Lmdb if cfg["kind"] == "lmdb" else Hdf5)(cfg["read"], cfg["n"])
    g = torch.Generator()
    g.manual_seed(cfg["seed"])
    loader = torch.utils.data.DataLoader(ds, batch_size=cfg["batch_size"], shuffle=True,
                                         generator=g, num_workers=cfg["num_workers"],
                                         collate_fn=lambda batch: batch)
    if "register" in cfg:
        # As a training script does: clairfs.register() from this process,
        # which names it as the job's loader process (the package comes
        # from the source tree, on PYTHONPATH: test_ranges.py).
        import clairfs
        clairfs.register(loader, root=cfg["register"]["root"], layout="ranges",
                         manifest=cfg["register"]["manifest"], epochs=cfg["epochs"],
                         job=cfg["register"]["job"])
    big = os.path.join(cfg["read"], "data.mdb" if cfg["kind"] == "lmdb" else "data.h5")
    for epoch in range(cfg["epochs"]):
        if cfg.get("drop"):
            # As memory pressure would: the next epoch's reads reach the
            # mount (the workers that mapped the file have exited).
            fd = os.open(big, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        got = [[i, h] for batch in loader for i, h in batch]
        print(json.dumps({"epoch": epoch, "samples": got}), flush=True)


def main():
    cfg = json.loads(sys.argv[1])
    if "write" in cfg:
        sums = (write_lmdb if cfg["kind"] == "lmdb" else write_hdf5)(cfg)
        print(json.dumps({"sha1": sums}))
    else:
        read(cfg)


if __name__ == "__main__":
    main()
