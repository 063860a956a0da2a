#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a deterministic LMDB environment of random values, or checks a
ranges manifest against one.

    gen_lmdb.py OUT [--bytes 1.1e9 | --count N] [--min-kb 60] [--max-kb 140]
                    [--seed 0]
    gen_lmdb.py --check-ranges MANIFEST --root DIR ENV

OUT is the environment directory (what lmdb.open() takes): OUT/data.mdb and
OUT/lock.mdb. Value i, under key b'%08d' % i, is a 12-byte header (i as a
little-endian 64-bit integer, then the CRC-32 of the rest, little-endian
32-bit) and seeded random bytes, like an encoded image; its whole size is
uniform in [--min-kb, --max-kb] KB (10^3 bytes). bench/lmdb_job.py checks
the header of every value it reads (check_value()).

The values are put in a shuffled order (a seeded permutation), as a
dataset written by parallel converters is: LMDB appends each value's
overflow pages in the order of the puts, so data.mdb holds the values in
that order, not in key order, and a reader going through the keys in
order jumps about the file. Puts are committed in transactions of about
64 MB.

--bytes B draws value sizes until they add up to B; --count N draws N.
Same arguments, same bytes (numpy's PCG64 from --seed: the sizes, then the
permutation, then the values in the order they are put). After writing,
every value is read back and checked (count, keys, headers).

--check-ranges MANIFEST checks a ranges manifest (`clairfs ranges lmdb
ENV --out MANIFEST`; include/clairfs/layout/ranges_manifest.hpp has the
format) against ENV: it declares as many samples as ENV has entries, and
entry i names data.mdb (its path relative to --root DIR, the dataset root
a registration gives) and exactly the bytes of the value of key
b'%08d' % i in it (found from where LMDB's memory map puts the value).
Exits 1 with the first wrong entry.

Needs python-lmdb and numpy: bench/scenarios.py runs it with the
frameworks interpreter (CLAIRFS_FRAMEWORKS_PYTHON, default
/opt/clairfs-venv/bin/python). Prints the dataset's figures (or the
check's) as one JSON object on stdout; progress goes to stderr.
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time
import zlib

from gen_tfrecord import uniform_sizes

KB = 1000
HEADER = struct.Struct("<QI")  # the value's index, the CRC-32 of the rest
TXN_BYTES = 64 << 20           # values put per write transaction


def key_of(i):
    return b"%08d" % i


def check_value(i, value):
    """None, or why VALUE is not value I as gen_lmdb.py writes it."""
    if len(value) < HEADER.size:
        return f"value {i} is {len(value)} bytes, shorter than its header"
    index, crc = HEADER.unpack_from(value)
    if index != i:
        return f"value under key {key_of(i)!r} says it is value {index}"
    if zlib.crc32(memoryview(value)[HEADER.size:]) != crc:
        return f"value {i} fails its CRC-32"
    return None


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", metavar="OUT|ENV")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--bytes", type=float, default=1.1e9,
                      help="values' bytes in all [1.1e9]")
    size.add_argument("--count", type=int, help="this many values instead")
    ap.add_argument("--min-kb", type=float, default=60)
    ap.add_argument("--max-kb", type=float, default=140)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-ranges", metavar="MANIFEST")
    ap.add_argument("--root", metavar="DIR",
                    help="with --check-ranges: the directory the manifest's paths are relative to")
    a = ap.parse_args(argv)
    if a.check_ranges:
        if not a.root:
            ap.error("--check-ranges needs --root")
        return a
    if a.min_kb * KB < HEADER.size + 1 or a.max_kb < a.min_kb:
        ap.error(f"{HEADER.size + 1} bytes <= --min-kb <= --max-kb")
    if a.count is not None and a.count < 1:
        ap.error("--count must be positive")
    return a


def value_sizes(rng, a):
    """Every value's size in bytes, in key order."""
    return uniform_sizes(rng, a.min_kb, a.max_kb, a.count or 0, a.bytes)


def progress(what, done, total):
    """A stderr line at every tenth of TOTAL."""
    if done == total or done % max(1, total // 10) == 0:
        print(f"gen_lmdb: {what} {done}/{total} ({100 * done / total:.0f}%)",
              file=sys.stderr, flush=True)


def write_env(lmdb, rng, out, sizes):
    """Puts the values in a seeded shuffled order, in ~64 MB transactions."""
    n = len(sizes)
    order = rng.permutation(n).tolist()
    # Values take whole 4 KiB overflow pages; room for that, the tree and
    # more (the map is address space, not disk: data.mdb grows as used).
    map_size = int(sum(sizes) * 1.25) + n * 8192 + (256 << 20)
    # meminit (the default) zeroes the unused tails of pages: same
    # arguments, same data.mdb, byte for byte.
    env = lmdb.open(out, map_size=map_size, subdir=True, sync=False, metasync=False)
    pending = 0
    txn = env.begin(write=True)
    for k, i in enumerate(order, 1):
        payload = rng.bytes(sizes[i] - HEADER.size)
        txn.put(key_of(i), HEADER.pack(i, zlib.crc32(payload)) + payload, overwrite=False)
        pending += sizes[i]
        if pending >= TXN_BYTES:
            txn.commit()
            txn = env.begin(write=True)
            pending = 0
        progress("put", k, n)
    txn.commit()
    env.sync(True)
    stat = env.stat()
    env.close()
    return stat


def open_readonly(lmdb, path):
    # As bench/lmdb_job.py opens it (the usual recipe for a read-only dataset).
    return lmdb.open(path, readonly=True, lock=False, readahead=False, meminit=False)


def check_env(lmdb, out, sizes):
    """Reads every value back: the keys are 0..N-1, every header right."""
    n = len(sizes)
    env = open_readonly(lmdb, out)
    try:
        if env.stat()["entries"] != n:
            sys.exit(f"gen_lmdb: {out} holds {env.stat()['entries']} entries, wrote {n}")
        with env.begin(buffers=True) as txn:
            for k, (key, value) in enumerate(txn.cursor()):
                if key != key_of(k) or len(value) != sizes[k]:
                    sys.exit(f"gen_lmdb: entry {k} is key {bytes(key)!r} of {len(value)} bytes, "
                             f"expected {key_of(k)!r} of {sizes[k]}")
                why = check_value(k, value)
                if why:
                    sys.exit(f"gen_lmdb: {why}")
    finally:
        env.close()


def generate(a):
    import lmdb
    import numpy as np

    t0 = time.perf_counter()
    os.makedirs(a.out, exist_ok=True)
    for name in ("data.mdb", "lock.mdb"):
        # Same arguments, same bytes: never add to an earlier environment.
        if os.path.exists(os.path.join(a.out, name)):
            os.unlink(os.path.join(a.out, name))
    rng = np.random.default_rng(a.seed)
    sizes = value_sizes(rng, a)
    stat = write_env(lmdb, rng, a.out, sizes)
    check_env(lmdb, a.out, sizes)
    n = len(sizes)
    data_bytes = os.path.getsize(os.path.join(a.out, "data.mdb"))
    # "files": the one file a reader reads (lock.mdb is not opened with
    # lock=False), so that per-file figures are per data.mdb.
    return {"kind": "lmdb", "files": 1, "records": n, "bytes": data_bytes,
            "record_bytes": sum(sizes), "record_mean": sum(sizes) / n,
            "record_median": statistics.median(sizes), "record_min_kb": a.min_kb,
            "record_max_kb": a.max_kb, "seed": a.seed, "order": "shuffled",
            "page_size": stat["psize"], "depth": stat["depth"],
            "branch_pages": stat["branch_pages"], "leaf_pages": stat["leaf_pages"],
            "overflow_pages": stat["overflow_pages"],
            "write_s": round(time.perf_counter() - t0, 1), "lmdb": lmdb.__version__}


def map_base(path):
    """Where this process maps PATH from its offset 0 (/proc/self/maps):
    env.info()'s map_addr is 0 unless the map is fixed."""
    path = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            v = line.split(maxsplit=5)
            if len(v) == 6 and v[5].rstrip("\n") == path and int(v[2], 16) == 0:
                return int(v[0].split("-")[0], 16)
    return None


def read_manifest(path):
    """(declared samples, [(index, path, offset, length)]) of a ranges manifest."""
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "clairfs-ranges 1":
        sys.exit(f"gen_lmdb: {path}: line 1 is not 'clairfs-ranges 1'")
    declared, entries = None, []
    for no, line in enumerate(lines[1:], 2):
        if not line or line.startswith("#"):
            continue
        if declared is None:
            if not line.startswith("samples "):
                sys.exit(f"gen_lmdb: {path}: line {no}: expected 'samples N'")
            declared = int(line.split()[1])
            continue
        v = line.split("\t")
        if len(v) != 4:
            sys.exit(f"gen_lmdb: {path}: line {no}: expected 4 tab-separated fields")
        entries.append((int(v[0]), v[1], int(v[2]), int(v[3])))
    return declared, entries


def check_ranges(a):
    """--check-ranges: the manifest against the environment a.out."""
    import lmdb
    import numpy as np

    declared, entries = read_manifest(a.check_ranges)
    data_mdb = os.path.realpath(os.path.join(a.out, "data.mdb"))
    env = open_readonly(lmdb, a.out)
    try:
        n = env.stat()["entries"]
        if declared != n or len(entries) != n:
            sys.exit(f"gen_lmdb: {a.check_ranges} declares {declared} samples and lists "
                     f"{len(entries)}; {a.out} holds {n}")
        base = map_base(data_mdb)
        if base is None:
            sys.exit(f"gen_lmdb: cannot find {data_mdb} in /proc/self/maps")
        paths = set()
        with env.begin(buffers=True) as txn:
            for k, (index, path, offset, length) in enumerate(entries):
                if index != k:
                    sys.exit(f"gen_lmdb: entry {k} of {a.check_ranges} is numbered {index}")
                if path not in paths:
                    if os.path.realpath(os.path.join(a.root, path)) != data_mdb:
                        sys.exit(f"gen_lmdb: entry {k} names {path!r}, which under {a.root} "
                                 f"is not {data_mdb}")
                    paths.add(path)
                value = txn.get(key_of(k))
                if value is None:
                    sys.exit(f"gen_lmdb: no key {key_of(k)!r} in {a.out}")
                at = np.frombuffer(value, dtype=np.uint8).__array_interface__["data"][0] - base
                if (offset, length) != (at, len(value)):
                    sys.exit(f"gen_lmdb: entry {k} says bytes {offset}+{length}; the value of "
                             f"key {key_of(k)!r} is bytes {at}+{len(value)} of data.mdb")
    finally:
        env.close()
    return {"manifest": a.check_ranges, "samples": n, "paths": sorted(paths), "ok": True}


def main(argv=None):
    a = parse_args(argv)
    info = check_ranges(a) if a.check_ranges else generate(a)
    json.dump(info, sys.stdout)
    print()


if __name__ == "__main__":
    main()
