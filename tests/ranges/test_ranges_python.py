#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs ranges` against the Python libraries that write the data: an LMDB
written by python-lmdb, HDF5 files written by h5py and .npy indexes written
by numpy, in the frameworks venv (CLAIRFS_FRAMEWORKS_PYTHON, default
/opt/clairfs-venv/bin/python). Every manifest entry's bytes, read from the
file at its offset, must be what python-lmdb's txn.get or h5py's row gives
for that sample. No mount is needed.

Cases:
- lmdb: 400 keys b'%08d' with values of 1 byte to 200 KB (inline in leaf
  pages and in overflow pages), inserted in shuffled order; sample i is the
  i-th key in sorted order, as the cursor walks them;
- hdf5: contiguous and row-chunked image datasets, a 1-D label dataset, a
  file with a user block, all read row by row with h5py; a gzip dataset is
  refused with exit 2;
- packed: records of random sizes in one file, indexed by np.save of the
  cumulative boundaries (int64) and of (offset, length) pairs (uint32);
- stdout: the manifest on standard output and the closing count on stderr.

Exit 77 only when the frameworks Python cannot import lmdb, h5py and numpy
(in CI that fails instead: CI=true)."""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

PY = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or "/opt/clairfs-venv/bin/python"
IN_VENV = "CLAIRFS_RANGES_IN_VENV"

# meson runs Debian's python3; the checks need the venv's libraries, so the
# script continues there (marked, since a venv's python may be a symlink to
# /usr/bin/python3).
if os.environ.get(IN_VENV) != "1":
    ml.skip_unless_frameworks(PY, "lmdb", "h5py", "numpy")
    os.execve(PY, [PY, os.path.abspath(__file__)], dict(os.environ, **{IN_VENV: "1"}))

import h5py  # noqa: E402
import lmdb  # noqa: E402
import numpy as np  # noqa: E402


def parse_manifest(text):
    """[(path, offset, length)] of a manifest, checking its frame."""
    lines = text.split("\n")
    ml.check(lines[0] == "clairfs-ranges 1", f"first line {lines[0]!r}")
    body = [ln for ln in lines[1:] if ln and not ln.startswith("#")]
    ml.check(body[0].startswith("samples "), f"no samples line: {body[0]!r}")
    n = int(body[0].split()[1])
    entries = [ln.split("\t") for ln in body[1:]]
    ml.check(len(entries) == n, f"{len(entries)} entries for samples {n}")
    for i, e in enumerate(entries):
        ml.check(len(e) == 4 and int(e[0]) == i, f"entry {i}: {e}")
    return [(e[1], int(e[2]), int(e[3])) for e in entries]


def ranges(*args, root):
    """The manifest `clairfs ranges ARGS --out` writes, parsed; paths joined
    to `root`."""
    out = os.path.join(os.path.dirname(root), "manifest.txt")
    r = ml.clairfs("ranges", *args, "--out", out, timeout=300)
    ml.check(r.returncode == 0, f"clairfs ranges {' '.join(args)}: {r.returncode} {r.stderr}")
    with open(out) as f:
        return [(os.path.join(root, p), off, n) for p, off, n in parse_manifest(f.read())]


def check_bytes(entries, expected, what):
    ml.check(len(entries) == len(expected), f"{what}: {len(entries)} entries, want {len(expected)}")
    for i, ((path, off, n), want) in enumerate(zip(entries, expected)):
        with open(path, "rb") as f:
            got = os.pread(f.fileno(), n, off)
        ml.check(got == want, f"{what}: sample {i} [{off}, {off + n}) of {path} is not its value "
                              f"({len(got)} bytes read, {len(want)} expected)")


def case_lmdb():
    with ml.temp_dir() as tmp:
        db = os.path.join(tmp, "train.lmdb")
        rng = random.Random(11)
        keys = [b"%08d" % i for i in range(400)]
        shuffled = keys[:]
        rng.shuffle(shuffled)
        env = lmdb.open(db, map_size=1 << 30)
        with env.begin(write=True) as txn:
            for k in shuffled:
                size = rng.randint(1, 2000) if rng.random() < 0.3 else rng.randint(2000, 200_000)
                txn.put(k, rng.randbytes(size))
        env.close()

        entries = ranges("lmdb", db, root=db)
        ml.check({p for p, _, _ in entries} == {os.path.join(db, "data.mdb")},
                 f"paths {sorted({p for p, _, _ in entries})}")
        env = lmdb.open(db, readonly=True, lock=False)
        with env.begin() as txn:
            order = list(txn.cursor().iternext(values=False))
            ml.check(order == sorted(keys), "the cursor's order is not sorted(keys)")
            check_bytes(entries, [txn.get(k) for k in order], "lmdb")
        env.close()


def case_hdf5():
    with ml.temp_dir() as tmp:
        rng = np.random.default_rng(5)
        images = rng.integers(0, 255, (203, 16, 16, 3), dtype=np.uint8)
        labels = rng.integers(0, 1000, 203, dtype=np.int64)
        path = os.path.join(tmp, "data", "train.h5")
        os.makedirs(os.path.dirname(path))
        with h5py.File(path, "w") as f:
            f.create_dataset("images", data=images)
            f.create_dataset("chunked", data=images[::-1], chunks=(10, 16, 16, 3))
            f.create_dataset("meta/labels", data=labels)
            f.create_dataset("gzip", data=images, compression="gzip")
        blocked = os.path.join(tmp, "data", "userblock.h5")
        with h5py.File(blocked, "w", userblock_size=1024) as f:
            f.create_dataset("chunked", data=images, chunks=(8, 16, 16, 3))

        for file, name in [(path, "images"), (path, "chunked"), (path, "meta/labels"),
                           (blocked, "chunked")]:
            entries = ranges("hdf5", file, "--dataset", name, root=os.path.dirname(file))
            with h5py.File(file, "r") as f:
                ds = f[name]
                check_bytes(entries, [ds[i].tobytes() for i in range(len(ds))], f"{file}:{name}")
        r = ml.clairfs("ranges", "hdf5", path, "--dataset", "gzip")
        ml.check(r.returncode == 2 and "compressed or filtered" in r.stderr,
                 f"gzip: {r.returncode} {r.stderr}")


def case_packed():
    with ml.temp_dir() as tmp:
        rng = random.Random(3)
        records = [rng.randbytes(rng.randint(1, 50_000)) for _ in range(300)]
        path = os.path.join(tmp, "shard.bin")
        with open(path, "wb") as f:
            f.write(b"".join(records))
        bounds = np.concatenate([[0], np.cumsum([len(r) for r in records])]).astype(np.int64)
        np.save(os.path.join(tmp, "bounds.npy"), bounds)
        entries = ranges("packed", path, "--offsets", os.path.join(tmp, "bounds.npy"), root=tmp)
        check_bytes(entries, records, "packed boundaries")

        pairs = np.stack([bounds[:-1], np.diff(bounds)], axis=1).astype(np.uint32)[::-1].copy()
        np.save(os.path.join(tmp, "pairs.npy"), pairs)
        entries = ranges("packed", path, "--offsets", os.path.join(tmp, "pairs.npy"), root=tmp)
        check_bytes(entries, records[::-1], "packed pairs")


def case_stdout():
    with ml.temp_dir() as tmp:
        path = os.path.join(tmp, "fixed.bin")
        with open(path, "wb") as f:
            f.write(b"H" * 16 + bytes(range(100)) * 7)
        r = ml.clairfs("ranges", "packed", path, "--record-size", "100", "--header", "16")
        ml.check(r.returncode == 0, f"{r.returncode} {r.stderr}")
        entries = parse_manifest(r.stdout)
        ml.check(entries == [("fixed.bin", 16 + 100 * i, 100) for i in range(7)],
                 f"entries {entries}")
        ml.check(r.stderr == f"clairfs ranges: 7 samples in {path}, 700 bytes\n",
                 f"stderr {r.stderr!r}")


if __name__ == "__main__":
    ml.run_test(lambda: ml.run_cases(("lmdb", case_lmdb), ("hdf5", case_hdf5),
                                     ("packed", case_packed), ("stdout", case_stdout)))
