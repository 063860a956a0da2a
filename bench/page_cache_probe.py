#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The kernel's page cache against the simulator's, for direct reads.

    page_cache_probe.py [--files 4000] [--fractions 0.9,0.95,0.99]
                        [--epochs 3] [--clairfs build/src/clairfs]

`clairfs simulate` models a direct run's page cache as an LRU of
shared_fs.page_cache bytes in whole pages. Whether a later epoch re-reads
nothing, a little or a lot of the shared FS turns on that model when the
cache is a little short of the dataset. This probe measures the kernel:
for each fraction, a slow FS (bench/slowfs.py, throttle off) whose memory
cgroup leaves the page cache about that fraction of the dataset; a reader
in the cgroup opens every file once an epoch in a RandomSampler's order
(`clairfs order --paths`); the block device's bytes read per epoch. Then
`clairfs simulate` runs the direct scenario on the same files (dataset.root)
with page_cache = the dataset's resident bytes at epoch 0's end (fincore),
as bench/sim_validate.py gives it, and the two are printed side by side.
Needs root. Takes about 15 s a fraction at 4,000 files.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import slowfs  # noqa: E402
from train_job import resident_bytes  # noqa: E402

READER = r"""
import json, os, subprocess, sys
root, loop, orders = sys.argv[1], sys.argv[2], sys.argv[3]
def dev_bytes():
    with open(f"/sys/block/{loop}/stat") as f:
        return int(f.read().split()[2]) * 512
out = []
for line in open(orders):
    b0 = dev_bytes()
    for rel in json.loads(line):
        with open(os.path.join(root, rel), "rb") as f:
            f.read()
    out.append({"read": dev_bytes() - b0})
print(json.dumps(out))
"""


def make_files(root, n, seed=1):
    """N files of ImageNet-like sizes (log-normal, median 93 KB) in 10 class
    directories, written and then dropped from the page cache."""
    r = random.Random(seed)
    for i in range(n):
        d = os.path.join(root, f"c{i % 10}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"f{i:06d}.jpg")
        size = int(min(2_000_000, max(2000, r.lognormvariate(math.log(93000), 0.55))))
        with open(p, "wb") as f:
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def pages(root):
    return sum((os.path.getsize(os.path.join(d, f)) + 4095) // 4096 * 4096
               for d, _, fs in os.walk(root) for f in fs)


def probe(a, fraction, work):
    st_file = os.path.join(work, "slowfs.json")
    # The reader's own memory (Python, the order lines) is charged too.
    overhead = 12 << 20
    st = slowfs.up(st_file, work, size="2G", bps="4000M", iops=1000000,
                   mem=str(int(fraction * a.dataset_pages) + overhead))
    try:
        root = os.path.join(st["mnt"], "data")
        make_files(root, a.files)
        job = ["--sampler", "random", "--generator", "explicit", "--seed", "0",
               "--batch-size", "64", "--epochs", str(a.epochs)]
        orders = os.path.join(work, "orders")
        with open(orders, "w") as f:
            subprocess.run([a.clairfs, "order", "--root", root, "--paths"] + job,
                           check=True, stdout=f)
        # Epoch by epoch, so that the residency after epoch 0 is measured
        # before epoch 1 runs: the reader is run once per epoch.
        lines = open(orders).read().splitlines()
        real, resident = [], None
        for e, line in enumerate(lines):
            one = os.path.join(work, f"order-{e}")
            with open(one, "w") as f:
                f.write(line + "\n")
            out = subprocess.run(
                ["sh", os.path.join(HERE, "cgexec.sh"), st["cgroups"]["memory"],
                 st["cgroups"]["blkio"], "--", sys.executable, "-c", READER, root,
                 os.path.basename(st["loop"]), one],
                check=True, capture_output=True, text=True).stdout
            real.append(json.loads(out)[0]["read"])
            if e == 0:
                resident = resident_bytes(root)
        cfg = {"name": f"page-cache probe {fraction}",
               "cluster": {"nodes": 1, "ranks_per_node": 1},
               "shared_fs": {"mb_s": 4000, "iops": 1000000, "page_cache": resident},
               "dataset": {"root": root},
               "job": {"sampler": "random", "generator": "explicit", "seed": 0,
                       "batch_size": 64, "epochs": a.epochs},
               "scenarios": ["direct"]}
        cfg_path = os.path.join(work, "sim.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        sim = json.loads(subprocess.run([a.clairfs, "simulate", "--config", cfg_path,
                                         "--json", "-", "--quiet"],
                                        check=True, capture_output=True, text=True).stdout)
        eps = sim["scenarios"][0]["epochs"]
        return {"fraction": fraction, "dataset_pages": pages(root), "resident": resident,
                "real": real, "sim_files": [e["from_fs"] for e in eps],
                "sim_bytes": [e["shared_fs_bytes"] for e in eps]}
    finally:
        slowfs.down(st_file, quiet=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=4000)
    ap.add_argument("--fractions", default="0.9,0.95,0.99")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--clairfs", default=os.path.join(HERE, "..", "build", "src", "clairfs"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("page_cache_probe: needs root (bench/slowfs.py)")
    # The dataset's size in pages, from a dry run of the same draw.
    with tempfile.TemporaryDirectory() as d:
        r = random.Random(1)
        a.dataset_pages = sum(
            (int(min(2_000_000, max(2000, r.lognormvariate(math.log(93000), 0.55)))) + 4095)
            // 4096 * 4096 for _ in range(a.files))
        rows = []
        for fr in (float(x) for x in a.fractions.split(",")):
            work = os.path.join(d, f"p{fr}")
            os.makedirs(work)
            rows.append(probe(a, fr, work))
    print(f"{a.files} files, {a.dataset_pages / 1e6:.0f} MB in pages; shared-FS MB per "
          f"epoch, kernel (block device) / simulator (LRU of the resident bytes)")
    print("| cache / dataset | resident MB | " +
          " | ".join(f"epoch {e}" for e in range(a.epochs)) + " |")
    print("|---|---|" + "---|" * a.epochs)
    for r in rows:
        cells = [f"{k / 1e6:.1f} / {s / 1e6:.1f}" for k, s in zip(r["real"], r["sim_bytes"])]
        print(f"| {r['fraction']:.2f} | {r['resident'] / 1e6:.0f} | " + " | ".join(cells) + " |")
    json.dump(rows, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
