#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Worst open() latency while clairfs does its slow planning work (issue 23,
"no lock across slow work on the hot path").

Two scenarios against a real mount, each repeated --rounds times:

registration  A 1M-sample job is registered, then replaced by another
              (list layout: a manifest of --samples lines over --files
              files, so no million-file tree is needed). While the second
              registration builds its job, one thread opens and closes
              dataset files in a loop and another reads .clairfs/status;
              the worst latency of each inside the registration's window is
              reported, next to the worst outside it.
epoch         A DistributedSampler job over the same 1M samples with a
              world size of --world (so an epoch of rank 0 is a few dozen
              opens, but each epoch's plan is a permutation of 1M): the
              epoch's files are opened in the job's order, then the next
              epoch's first file, which makes clairfs plan the epoch after.
              Meanwhile a second thread opens files outside the dataset
              (every open of a regular file goes through the tracker). The
              latency of the epoch-starting open and the other thread's
              worst are reported.

Needs root and FUSE; Python standard library plus tests/mount/mountlib.py.

    sudo python3 bench/open_latency.py [--clairfs build/src/clairfs] [--rounds 5] [--rt]
        [--json F]
"""
import argparse
import json
import os
import random
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "mount"))
import mountlib  # noqa: E402


def make_backing(root, files, samples, seed=1):
    """--files small files in 20 directories, 50 files outside the dataset,
    and a manifest of `samples` lines naming the dataset files in turn."""
    rng = random.Random(seed)
    names = []
    for i in range(files):
        d = os.path.join(root, f"d{i % 20:02d}")
        os.makedirs(d, exist_ok=True)
        name = f"d{i % 20:02d}/f{i:05d}.bin"
        with open(os.path.join(root, name), "wb") as f:
            f.write(rng.randbytes(4096))
        names.append(name)
    os.makedirs(os.path.join(root, "other"))
    others = []
    for i in range(50):
        name = f"other/x{i:02d}.bin"
        with open(os.path.join(root, name), "wb") as f:
            f.write(b"x" * 4096)
        others.append(name)
    order = names[:]
    rng.shuffle(order)
    with open(os.path.join(root, "manifest.txt"), "w") as f:
        for i in range(samples):
            f.write(order[i % len(order)] + "\n")
    return names, others


class Sampler:
    """A thread timing `op` over and over: (start, seconds) per call."""

    def __init__(self, op):
        self.op, self.times, self.stop = op, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            t = time.perf_counter()
            self.op()
            self.times.append((t, time.perf_counter() - t))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(60)

    def worst(self, lo, hi, inside=True):
        xs = [d for t, d in self.times if (lo <= t <= hi) == inside]
        return max(xs) if xs else float("nan"), len(xs)


def opener(mnt, names):
    it = iter([])

    def op():
        nonlocal it
        name = next(it, None)
        if name is None:
            it = iter(names)
            name = next(it)
        os.close(os.open(os.path.join(mnt, name), os.O_RDONLY))
    return op


def status_reader(mnt):
    def op():
        with open(os.path.join(mnt, ".clairfs", "status")) as f:
            f.read()
    return op


def register(mnt, reg):
    t = time.perf_counter()
    with open(os.path.join(mnt, ".clairfs", "control"), "w") as f:
        f.write(json.dumps(reg))
    return t, time.perf_counter()


def registration_round(mnt, names, samples, seed):
    base = {"layout": "list", "manifest": "manifest.txt", "batch_size": 32, "epochs": 2}
    register(mnt, dict(base, seed=seed))
    rng = random.Random(seed)
    picks = rng.sample(names, 200)
    with Sampler(opener(mnt, picks)) as opens, Sampler(status_reader(mnt)) as status:
        time.sleep(0.5)
        lo, hi = register(mnt, dict(base, seed=seed + 1))
        time.sleep(0.5)
    with open(os.path.join(mnt, ".clairfs", "status")) as f:
        ranks = json.load(f)["ranks"]
    mountlib.check(ranks[0]["samples"] == samples,
                   f"the job registered has {ranks[0]['samples']} samples, not {samples}")
    o_in, n_in = opens.worst(lo, hi)
    o_out, _ = opens.worst(lo, hi, inside=False)
    s_in, sn = status.worst(lo, hi)
    return {"register_s": hi - lo, "open_worst_during_ms": o_in * 1e3, "opens_during": n_in,
            "open_worst_outside_ms": o_out * 1e3, "status_worst_during_ms": s_in * 1e3,
            "status_reads_during": sn}


def epoch_orders(clairfs, backing, world, seed, epochs):
    r = mountlib.run([clairfs, "order", "--root", backing, "--layout", "list", "--manifest",
                      os.path.join(backing, "manifest.txt"), "--sampler", "distributed",
                      "--world-size", str(world), "--seed", str(seed), "--epochs", str(epochs),
                      "--paths"], timeout=300)
    mountlib.check(r.returncode == 0, f"clairfs order: {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def epoch_round(clairfs, backing, mnt, others, world, seed):
    epochs = 4
    orders = epoch_orders(clairfs, backing, world, seed, epochs)
    register(mnt, {"layout": "list", "manifest": "manifest.txt", "sampler": "distributed",
                   "world_size": world, "ranks": [0], "seed": seed, "batch_size": 1,
                   "epochs": epochs})
    starts = []
    with Sampler(opener(mnt, others)) as side:
        time.sleep(0.3)
        for e in range(epochs - 1):
            for p in orders[e]:
                os.close(os.open(os.path.join(mnt, p), os.O_RDONLY))
            # Its first open begins epoch e + 1: the epoch after it is planned.
            t = time.perf_counter()
            os.close(os.open(os.path.join(mnt, orders[e + 1][0]), os.O_RDONLY))
            starts.append((t, time.perf_counter() - t))
            time.sleep(0.3)  # any planning left happens while the side thread opens
    with open(os.path.join(mnt, ".clairfs", "status")) as f:
        st = json.load(f)
    mountlib.check(st.get("mode") == "clairvoyant",
                   f"the opens did not follow the job: {st.get('mode')} {st.get('reason')}")
    # The side thread's opens from each epoch start to 0.3 s after it.
    side_worst = max(side.worst(t, t + 0.3)[0] for t, _ in starts)
    return {"epoch_start_open_worst_ms": max(d for _, d in starts) * 1e3,
            "side_open_worst_ms": side_worst * 1e3,
            "side_open_worst_outside_ms": side.worst(starts[0][0], starts[-1][0] + 0.3,
                                                     inside=False)[0] * 1e3}


def summary(rows, key):
    xs = [r[key] for r in rows]
    return f"median {statistics.median(xs):.1f}, max {max(xs):.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clairfs", default=os.path.join(os.path.dirname(HERE), "build", "src",
                                                      "clairfs"))
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--world", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--json")
    ap.add_argument("--rt", action="store_true",
                    help="run the daemon and this script under SCHED_FIFO, so that other "
                    "load on a shared machine does not decide the worst case")
    a = ap.parse_args()
    mountlib.CLAIRFS = os.path.abspath(a.clairfs)
    prefix = ()
    if a.rt:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
        prefix = ("chrt", "-f", "50")
    reg_rows, epoch_rows = [], []
    with mountlib.temp_dir(prefix=os.path.join(a.workdir, "clairfs-openlat-")) as d:
        backing, mnt = os.path.join(d, "back"), os.path.join(d, "mnt")
        os.makedirs(backing)
        os.makedirs(mnt)
        names, others = make_backing(backing, a.files, a.samples)
        with mountlib.mounted(backing, mnt, prefix=prefix):
            for r in range(a.rounds):
                reg_rows.append(registration_round(mnt, names, a.samples, 10 * r + 1))
                epoch_rows.append(epoch_round(a.clairfs, backing, mnt, others, a.world,
                                              10 * r + 5))
                print(f"round {r}: {reg_rows[-1]} {epoch_rows[-1]}", flush=True)
    print(f"clairfs: {a.clairfs}; {a.samples} samples over {a.files} files, {a.rounds} rounds"
          f"{', SCHED_FIFO' if a.rt else ''}")
    print(f"registration of a {a.samples}-sample job: {summary(reg_rows, 'register_s')} s")
    for key in ["open_worst_during_ms", "open_worst_outside_ms", "status_worst_during_ms"]:
        print(f"  {key}: {summary(reg_rows, key)}")
    print(f"epoch start (next epoch of {a.samples} planned), ms:")
    for key in ["epoch_start_open_worst_ms", "side_open_worst_ms", "side_open_worst_outside_ms"]:
        print(f"  {key}: {summary(epoch_rows, key)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"clairfs": a.clairfs, "samples": a.samples, "files": a.files,
                       "world": a.world, "rt": a.rt, "registration": reg_rows, "epoch": epoch_rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
