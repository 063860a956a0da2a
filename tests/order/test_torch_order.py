#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs order` reproduces torch 1.13.1's data-access order exactly.

For a grid of several hundred jobs (samplers, dataset sizes, world sizes and
ranks, seeds across the whole Python-int range, batch sizes, drop_last,
pre-loop global draws, workers, replacement and num_samples, several
epochs), the expected order of every epoch is computed by running the real
torch DataLoader (torch_orders.py, in its own process); clairfs computes its
answer on its own, once per job, and the two are compared index by index.
Also checked: the other torch_version gives the same answer below
214,748,364 samples (a quarter of the jobs, picked at random with a fixed
seed, run twice: with "2.7" under torch 1.13, with "1.13" under 2.x); jobs are handed over as --config files, as `--key value` and
`--key=value` flags, and as a config file overridden by flags; the --paths
output for an ImageFolder tree (with the ordering traps and in-tree
symlinks) equals torchvision's sample list; jobs torch itself refuses
(seed + epoch past 2^64-1 with shuffle, num_samples=0, persistent workers
without workers, a class without samples) are refused too (exit 2, or 1 for
the dataset, and one line on stderr starting "clairfs: "); and invalid
input exits 2 with one such line.

The torch side runs under Debian's torch 1.13 (/usr/bin/python3), or with
CLAIRFS_ORDER_TORCH=2.x under the torch 2.x venv (tests/order/
torch_python.py; meson's order_torch_order_2x), where clairfs is told the
venv's torch.__version__ as torch_version, as a user would.

Run it by hand: `/usr/bin/python3 tests/order/test_torch_order.py
[--group distributed] [--list] [--jobs N]`.

Exit 0 pass, 1 fail, 77 (skip) only when the torch python cannot import
torch (in CI: fail). CLAIRFS names the binary (default: build/src/clairfs).
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import torch_python
from job_defaults import DEFAULTS  # the keys' defaults, for display and for which keys to pass

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))

SEEDS = [0, 1, 42, 2**32 + 5, 2**63, -1, 2**64 - 1, -2**63]
SMALL_N = [1, 2, 3, 7, 10, 100, 103, 1000, 4097]
BIG_N = 100003
PRE_DRAWS = [0, 1, 110, 1000]
# The 2.6+ randperm differs only from n >= uint32 max / 20, and 2.7+ randint
# (replacement=True) only from n >= 2^28: below both, every version agrees.
RANDPERM_26_THRESHOLD = 214748364
RANDINT_27_THRESHOLD = 2**28

BOOL_KEYS = {"shuffle", "sampler_drop_last", "drop_last", "persistent_workers",
             "replacement"}


def log(msg=""):
    print(msg, flush=True)


# --------------------------------------------------------------------------
# The grid


class Grid:
    """Jobs with a group label. Secondary parameters are drawn by `pick`
    from a seeded RNG (the same grid every run), so they do not fall into
    lockstep with the loops; coverage_problems() checks every value occurs."""

    def __init__(self):
        self.jobs = []       # (group, params)
        self.rng = random.Random(20261122)

    def add(self, group, **params):
        self.jobs.append((group, params))

    def pick(self, values):
        return self.rng.choice(values)


def batch_sizes(n):
    return [1, 3, 64, n + 1]


def build_grid():
    g = Grid()

    # A/B: DataLoader(shuffle=True), global and explicit generator.
    for generator, group in (("global", "random-global"), ("explicit", "random-explicit")):
        for n in SMALL_N:
            for seed in SEEDS:
                g.add(group, n=n, seed=seed, sampler="random", generator=generator,
                      pre_draws=g.pick(PRE_DRAWS), batch_size=g.pick(batch_sizes(n)),
                      drop_last=g.pick([False, True]), epochs=g.pick([2, 3]))
        # start_epoch only labels the epochs of a random sampler.
        for n, seed in ((10, 42), (103, 2**32 + 5), (1000, -1)):
            g.add(group, n=n, seed=seed, sampler="random", generator=generator,
                  start_epoch=g.pick([1, 7, 1000]), pre_draws=g.pick(PRE_DRAWS),
                  batch_size=g.pick(batch_sizes(n)), epochs=2)
        g.add(group, n=BIG_N, seed=g.pick(SEEDS), sampler="random", generator=generator,
              pre_draws=110, batch_size=64, drop_last=True, epochs=2)
    g.add("random-global", n=BIG_N, seed=2**63, sampler="random", batch_size=1, epochs=1)

    # C: RandomSampler(replacement=True, num_samples=...).
    for generator in ("global", "explicit"):
        for n in (1, 7, 10, 103, 1000):
            for ns in (1, 31, 32, 33, 100):
                g.add("replacement", n=n, seed=g.pick(SEEDS), sampler="random",
                      generator=generator, replacement=True, num_samples=ns,
                      pre_draws=g.pick(PRE_DRAWS), batch_size=g.pick([1, 3, 64, ns + 1]),
                      drop_last=g.pick([False, True]), epochs=g.pick([2, 3]))
    g.add("replacement", n=BIG_N, seed=7, sampler="random", replacement=True,
          num_samples=100, batch_size=3, epochs=3)
    g.add("replacement", n=4097, seed=-2**63, sampler="random", generator="explicit",
          replacement=True, num_samples=10000, batch_size=64, epochs=2)

    # D: RandomSampler(replacement=False) with num_samples below, at and above n.
    for generator in ("global", "explicit"):
        for n in (1, 2, 3, 7, 10, 100, 103, 1000):
            counts = sorted({c for c in (1, n // 2, n - 1, n, n + 1, 2 * n, 2 * n + 3, 3 * n + 1)
                             if c >= 1})
            for ns in counts:
                g.add("num-samples", n=n, seed=g.pick(SEEDS), sampler="random",
                      generator=generator, num_samples=ns, pre_draws=g.pick(PRE_DRAWS),
                      batch_size=g.pick([1, 3, 64, ns + 1]),
                      drop_last=g.pick([False, True]), epochs=g.pick([2, 3]))

    # E: DistributedSampler; every rank of small worlds, three ranks of 8.
    ranks = [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2),
             (4, 0), (4, 1), (4, 2), (4, 3), (8, 0), (8, 3), (8, 7)]
    # With shuffle, torch seeds Generator(seed + epoch): 2^64-1 + epoch
    # overflows from epoch 1 on (the "refused" jobs). Without shuffle no
    # generator is seeded, and any seed and epoch is fine.
    dist_seeds = SEEDS + [2**64 - 4, 17]
    for n in (1, 2, 3, 7, 10, 100, 103, 1000):
        for world, rank in ranks:
            for shuffle in (True, False):
                for sdl in (False, True):
                    seed = g.pick(dist_seeds)
                    start = g.pick([0, 0, 1, 5, 99, 1000003])
                    epochs = g.pick([2, 3])
                    if shuffle and seed + start + epochs - 1 > 2**64 - 1:
                        start, epochs = 0, 1 if seed == 2**64 - 1 else epochs
                    g.add("distributed", n=n, seed=seed, sampler="distributed",
                          world_size=world, rank=rank, shuffle=shuffle,
                          sampler_drop_last=sdl, drop_last=g.pick([False, True]),
                          batch_size=g.pick(batch_sizes(n)), start_epoch=start,
                          epochs=epochs)
    for world, rank in ((1, 0), (3, 2), (8, 5), (4, 3)):
        g.add("distributed", n=4097, seed=g.pick(SEEDS[:6]), sampler="distributed",
              world_size=world, rank=rank, sampler_drop_last=g.pick([False, True]),
              drop_last=g.pick([False, True]), batch_size=g.pick([1, 3, 64, 4098]),
              start_epoch=g.pick([0, 3]), epochs=3)
    g.add("distributed", n=BIG_N, seed=42, sampler="distributed", world_size=8, rank=5,
          batch_size=64, start_epoch=2, epochs=2)
    g.add("distributed", n=BIG_N, seed=-1, sampler="distributed", world_size=3, rank=2,
          sampler_drop_last=True, drop_last=True, batch_size=3, epochs=2)
    # seed + epoch reaching exactly 2^64-1 is still valid in torch.
    g.add("distributed", n=10, seed=2**64 - 3, sampler="distributed", world_size=2,
          rank=1, epochs=3)
    g.add("distributed", n=10, seed=2**64 - 1, sampler="distributed", world_size=2,
          rank=0, epochs=1)
    g.add("distributed", n=10, seed=2**64 - 1, sampler="distributed", world_size=2,
          rank=0, shuffle=False, start_epoch=7, epochs=3)

    # F: DataLoader(shuffle=False).
    for n in SMALL_N + [BIG_N]:
        for dl in (False, True):
            g.add("sequential", n=n, seed=g.pick(SEEDS), sampler="sequential",
                  generator=g.pick(["global", "explicit"]), drop_last=dl,
                  batch_size=g.pick(batch_sizes(n)), epochs=2)

    # G: real worker processes (forking is slow: small n, few jobs).
    variants = [
        dict(sampler="random", generator="global"),
        dict(sampler="random", generator="explicit"),
        dict(sampler="distributed", world_size=3, rank=1),
        dict(sampler="sequential"),
        dict(sampler="random", generator="global", replacement=True, num_samples=33),
        dict(sampler="random", generator="explicit", num_samples=25),
    ]
    for v in variants:
        for workers in (1, 2):
            for persistent in (False, True):
                n = g.pick([7, 10, 100, 103])
                g.add("workers", n=n, seed=g.pick(SEEDS[:6]), num_workers=workers,
                      persistent_workers=persistent, prefetch_factor=g.pick([1, 2, 3]),
                      pre_draws=g.pick(PRE_DRAWS), batch_size=g.pick([1, 3, 64, n + 1]),
                      drop_last=g.pick([False, True]), epochs=3,
                      start_epoch=2 if v["sampler"] == "distributed" else 0, **v)
    return g.jobs


def coverage_problems(jobs):
    """The grid's promises, checked so that an edit cannot quietly drop one."""
    seen = {}
    for _, p in jobs:
        for k, v in p.items():
            seen.setdefault(k, set()).add(v)
    want = {
        "sampler": {"random", "distributed", "sequential"},
        "generator": {"global", "explicit"},
        "n": set(SMALL_N) | {BIG_N},
        "world_size": {2, 3, 4, 8},
        "seed": set(SEEDS),
        "drop_last": {False, True},
        "sampler_drop_last": {False, True},
        "shuffle": {False, True},
        "pre_draws": set(PRE_DRAWS),
        "num_workers": {1, 2},
        "persistent_workers": {False, True},
        "batch_size": {1, 3, 64},
        "replacement": {True},
        "num_samples": {1, 31, 32, 33, 100},
        "epochs": {2, 3},
    }
    problems = [f"{k}: grid lacks {sorted(v - seen.get(k, set()), key=str)}"
                for k, v in want.items() if not v <= seen.get(k, set())]
    if not any(p.get("batch_size", 1) > p.get("n", 0) for _, p in jobs):
        problems.append("no batch_size larger than n")
    if not any(p.get("sampler") == "distributed" and p.get("start_epoch", 0) > 0
               for _, p in jobs):
        problems.append("no distributed job with start_epoch > 0")
    if not any(not p.get("replacement") and p.get("num_samples", 0) > p["n"] for _, p in jobs):
        problems.append("no num_samples > n without replacement")
    if not any(not p.get("replacement") and p.get("num_samples", 10**9) < p["n"] for _, p in jobs):
        problems.append("no num_samples < n without replacement")
    return problems


# --------------------------------------------------------------------------
# Running clairfs


def flag(key):
    return "--" + key.replace("_", "-")


def flag_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def to_flags(params, style):
    """Command-line form. style 0: `--key value`, 1: `--key=value`;
    booleans that are true become a bare flag in style 1."""
    args = []
    for k, v in params.items():
        if style == 1 and v is True:
            args.append(flag(k))
        elif style == 1:
            args.append(f"{flag(k)}={flag_value(v)}")
        else:
            args += [flag(k), flag_value(v)]
    return args


class Clairfs:
    def __init__(self, exe, tmpdir):
        self.exe = exe
        self.tmpdir = tmpdir
        self.counter = itertools.count()

    def run(self, args, timeout=300):
        return subprocess.run([self.exe, "order"] + args, capture_output=True,
                              text=True, timeout=timeout)

    def config_file(self, obj, raw=None):
        path = os.path.join(self.tmpdir, f"job{next(self.counter)}.json")
        with open(path, "w") as f:
            f.write(raw if raw is not None else json.dumps(obj))
        return path

    def order(self, params, via):
        """Runs one job; returns (argv, CompletedProcess)."""
        params = dict(params)
        tail = ["--paths"] if params.pop("paths", False) else []
        if via == "config":
            args = ["--config", self.config_file(params)]
        elif via in ("flags", "flags="):
            args = to_flags(params, 0 if via == "flags" else 1)
        elif via == "override":
            # The file says something else; the command line must win.
            wrong = dict(params)
            wrong["seed"] = params.get("seed", 0) + 1 if params.get("seed", 0) < 2**64 - 1 else 0
            wrong["batch_size"] = params.get("batch_size", 1) + 1
            wrong["epochs"] = params.get("epochs", 1) + 1
            args = ["--config", self.config_file(wrong),
                    "--seed", str(params.get("seed", 0)),
                    f"--batch-size={params.get('batch_size', 1)}",
                    "--epochs", str(params.get("epochs", 1))]
        else:
            raise ValueError(via)
        args += tail
        return args, self.run(args)


def parse_lines(stdout):
    lines = stdout.splitlines()
    return [json.loads(line) for line in lines]


# --------------------------------------------------------------------------
# Comparing


def short(v):
    s = json.dumps(v)
    return s if len(s) <= 200 else s[:200] + "..."


def diff_orders(expected, got):
    """"" when equal, else a precise description of the first difference."""
    if len(got) != len(expected):
        head = f"{len(got)} epoch lines, expected {len(expected)}"
        for e, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                return head + "; also " + diff_orders([a], [b]).replace("epoch 0", f"epoch {e}")
        return head
    for e, (a, b) in enumerate(zip(expected, got)):
        if a == b:
            continue
        if not isinstance(b, list):
            return f"epoch {e}: not a JSON array: {short(b)}"
        pos = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lo = max(0, pos - 3)
        parts = [f"epoch {e} (line {e + 1} of {len(expected)}): first difference at "
                 f"position {pos}: expected "
                 f"{a[pos] if pos < len(a) else '<end>'}, got {b[pos] if pos < len(b) else '<end>'}",
                 f"expected length {len(a)}, got {len(b)}",
                 f"expected[{lo}:{pos + 5}] = {short(a[lo:pos + 5])}",
                 f"got[{lo}:{pos + 5}]      = {short(b[lo:pos + 5])}"]
        if sorted(a) == sorted(b):
            parts.append("same multiset of indices (a different permutation)")
        return "; ".join(parts[:2]) + "\n      " + "\n      ".join(parts[2:])
    return ""


def full_params(p):
    q = dict(DEFAULTS)
    q.update(p)
    return q


def one_line_error(r, codes=(2,)):
    """"" if r is a proper refusal (exit 2, or one of `codes`, and one
    stderr line "clairfs: ...")."""
    lines = r.stderr.splitlines()
    problems = []
    if r.returncode not in codes:
        problems.append(f"exit code {r.returncode}, expected {' or '.join(map(str, codes))}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines, expected 1")
    if not lines or not lines[0].startswith("clairfs: "):
        problems.append("stderr does not start with 'clairfs: '")
    if problems:
        problems.append(f"stderr={r.stderr[:300]!r} stdout={r.stdout[:120]!r}")
    return "; ".join(problems)


def make_imagefolder_tree(root):
    """A small tree with the ordering traps of torchvision's listing."""
    files = [
        "cat/b.jpg", "cat/A.JPG", "cat/_x.png", "cat/10.jpg", "cat/9.jpg",
        "cat/.hidden.jpg", "cat/notes.txt", "cat/sub/deeper/z.jpeg",
        "cat/sub/a.bmp", "cat/sub x/k.tif", "cat/sub-x/k.TIFF", "cat/é.webp",
        "cat/z.webp", "Dog/1.ppm", "Dog/2.pgm", "Dog/README", "_misc/q.jpg",
        "dog/x.jpg", "dog/y.Jpeg", "top.jpg", ".hiddenclass/h.png",
    ]
    for rel in files:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"")
    # Symlinks inside the tree: a file link, a dangling *.jpg (listed by
    # torchvision all the same), a linked class directory (its own class)
    # and a linked subdirectory (followed).
    links = {"Dog/link.jpg": "1.ppm", "cat/dangling.jpg": "nowhere.jpg",
             "cats_link": "cat", "dog/sublink": "../Dog"}
    for rel, target in links.items():
        os.symlink(target, os.path.join(root, rel))


def make_empty_class_tree(root):
    """A class without samples: torchvision raises FileNotFoundError."""
    for rel in ("a/1.jpg", "b/notes.txt"):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").close()


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clairfs", default=os.environ.get("CLAIRFS") or
                    os.path.join(SOURCE_ROOT, "build", "src", "clairfs"))
    ap.add_argument("--group", action="append",
                    help="run only these groups (repeatable)")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2),
                    help="clairfs processes run at once")
    ap.add_argument("--list", action="store_true", help="print the grid and exit")
    args = ap.parse_args()

    jobs = build_grid()
    problems = coverage_problems(jobs)
    if problems:
        log("grid coverage: " + "; ".join(problems))
        return 1
    if args.group:
        jobs = [j for j in jobs if j[0] in args.group]
    if args.list:
        for group, p in jobs:
            log(f"{group}: {json.dumps(p)}")
        log(f"{len(jobs)} jobs")
        return 0

    py, what = torch_python.python()
    args.torch = torch_python.torch_version()  # exits 77 (CI: 1) without torch
    # clairfs is told the version the job runs, as a user would; a quarter
    # of the jobs run again with the other level's version.
    args.versions = (("1.13", "2.7") if torch_python.wanted() == "1.13"
                     else (args.torch, "1.13"))
    log(f"torch {args.torch} from {py} ({what}); clairfs {args.clairfs}")
    if not os.access(args.clairfs, os.X_OK):
        log(f"FAIL: {args.clairfs} is not an executable")
        return 1

    tmp = tempfile.mkdtemp(prefix="clairfs-order-test-")
    try:
        return run_all(args, jobs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_all(args, jobs, tmp):
    t0 = time.monotonic()
    cf = Clairfs(args.clairfs, tmp)
    failures = []

    # ImageFolder jobs: the same comparison with --root/--paths.
    tree = os.path.join(tmp, "tree")
    make_imagefolder_tree(tree)
    if not args.group or "paths" in args.group:
        for p in (dict(seed=42, sampler="random", batch_size=3, epochs=2, pre_draws=110),
                  dict(seed=-1, sampler="random", generator="explicit", epochs=2),
                  dict(seed=5, sampler="distributed", world_size=3, rank=1, epochs=2,
                       start_epoch=1),
                  dict(sampler="sequential", batch_size=4, drop_last=True)):
            jobs.append(("paths", dict(p, root=tree, layout="imagefolder", paths=True)))

    # Torch-refused jobs: clairfs must refuse them too (exit 2, one line).
    refused = []
    if not args.group or "refused" in args.group:
        empty_tree = os.path.join(tmp, "empty-class")
        make_empty_class_tree(empty_tree)
        refused = [
            dict(root=empty_tree, layout="imagefolder", paths=True),
            dict(n=10, sampler="distributed", seed=2**64 - 1, world_size=2, rank=0, epochs=2),
            dict(n=10, sampler="distributed", seed=2**64 - 1, world_size=2, rank=1,
                 start_epoch=1),
            dict(n=10, sampler="distributed", seed=2**64 - 3, world_size=2, rank=1, epochs=4),
            dict(n=10, sampler="random", num_samples=0),
            dict(n=10, sampler="random", replacement=True, num_samples=0),
            dict(n=10, sampler="random", persistent_workers=True, num_workers=0),
            dict(n=10, sampler="distributed", world_size=0, rank=0),
        ]
        jobs += [("refused", p) for p in refused]

    # Expected orders: one torch process for the whole grid, in parallel with
    # the clairfs runs (which never see its output).
    torch_in = os.path.join(tmp, "torch_in.json")
    torch_out = os.path.join(tmp, "torch_out.json")
    with open(torch_in, "w") as f:
        json.dump([{k: v for k, v in p.items() if k != "paths"} for _, p in jobs], f)
    torch_proc = subprocess.Popen([torch_python.python()[0], os.path.join(HERE, "torch_orders.py"),
                                   torch_in, "--out", torch_out])

    # How each job is handed to clairfs: mostly --config, every third by
    # flags (both spellings), some with flags overriding the file.
    # A quarter of the jobs run a second time with the other torch_version.
    primary, secondary = args.versions
    rng = random.Random(5)
    vias = ["config", "config", "config", "flags", "flags=", "override"]
    runs = []   # (job index, torch_version, via)
    for i, (group, p) in enumerate(jobs):
        simple = group in ("paths", "refused")
        runs.append((i, primary, rng.choice(vias[:5] if simple else vias)))
        if (not simple and p["n"] < min(RANDPERM_26_THRESHOLD, RANDINT_27_THRESHOLD)
                and rng.random() < 0.25):
            runs.append((i, secondary, rng.choice(vias)))

    def do(run):
        i, version, via = run
        p = dict(jobs[i][1])
        if version != "1.13":  # 1.13 is the default: left out, as most users do
            p["torch_version"] = version
        return cf.order(p, via)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(do, runs))
    t_clairfs = time.monotonic() - t0
    if torch_proc.wait() != 0:
        log(f"FAIL: torch_orders.py exited {torch_proc.returncode}")
        return 1
    with open(torch_out) as f:
        expected = json.load(f)
    t_total = time.monotonic() - t0

    stats = {"jobs": 0, "epochs": 0, "indices": 0, "secondary": 0, "refused": 0}
    for (i, version, via), (argv, r) in zip(runs, outcomes):
        group, p = jobs[i]
        want = expected[i]
        label = f"[{group} #{i} torch_version={version} via {via}]"
        where = (f"params={json.dumps({k: v for k, v in full_params(p).items() if k != 'root'})}"
                 f"\n    argv: clairfs order {' '.join(argv)}")
        if "error" in want:
            # A job torch refuses has no order to predict. Usage errors exit
            # 2; a dataset torchvision rejects is a run-time failure, 1.
            stats["refused"] += 1
            why = one_line_error(r, (1, 2) if "root" in p else (2,))
            if why:
                failures.append(f"REFUSAL {label} torch refuses this job "
                                f"({want['error']}) but clairfs: {why}\n    {where}")
            continue
        if r.returncode != 0:
            failures.append(f"MISMATCH {label} clairfs exit {r.returncode}: "
                            f"{r.stderr.strip()[:300]}\n    {where}")
            continue
        try:
            got = parse_lines(r.stdout)
        except json.JSONDecodeError as e:
            failures.append(f"MISMATCH {label} output is not one JSON array per line: "
                            f"{e}\n    {where}")
            continue
        d = diff_orders(want["orders"], got)
        if d:
            failures.append(f"MISMATCH {label} {where}\n    {d}")
            continue
        if version == primary:
            stats["jobs"] += 1
        else:
            stats["secondary"] += 1
        stats["epochs"] += len(got)
        stats["indices"] += sum(len(o) for o in got)

    failures += error_cases(cf)

    by_group = {}
    for group, _ in jobs:
        by_group[group] = by_group.get(group, 0) + 1
    log(f"grid: {len(jobs)} jobs ({', '.join(f'{g} {c}' for g, c in by_group.items())}); "
        f"{len(runs)} clairfs runs")
    log(f"matched torch {args.torch} exactly: {stats['jobs']} jobs at torch_version {primary} "
        f"and {stats['secondary']} at {secondary}, {stats['epochs']} epochs, "
        f"{stats['indices']} indices; "
        f"{stats['refused']} torch-refused jobs checked")
    log(f"time: clairfs runs {t_clairfs:.1f} s (with torch in parallel), total {t_total:.1f} s")
    for f in failures:
        log(f)
    if failures:
        log(f"FAIL: {len(failures)} problem(s)")
        return 1
    log("PASS")
    return 0


def error_cases(cf):
    """Invalid input: exit code 2 and exactly one stderr line "clairfs: ..."."""
    bad_json = cf.config_file(None, raw='{"n": 5, "seed": ')
    list_json = cf.config_file(None, raw='[5]')
    unknown_key_json = cf.config_file({"n": 5, "frobnicate": 1})
    n0_json = cf.config_file({"n": 0})
    big_seed_json = cf.config_file(None, raw='{"n": 5, "seed": 18446744073709551616}')
    cases = [
        ("rank == world_size", ["--n", "10", "--sampler", "distributed",
                                "--world-size", "4", "--rank", "4"]),
        ("rank > world_size", ["--n", "10", "--sampler", "distributed",
                               "--world-size=2", "--rank=9"]),
        ("n = 0", ["--n", "0"]),
        ("n = 0 in config", ["--config", n0_json]),
        ("batch_size 0", ["--n", "10", "--batch-size", "0"]),
        ("batch_size -1", ["--n", "10", "--batch-size", "-1"]),
        ("batch_size -3 distributed", ["--n", "10", "--sampler", "distributed",
                                       "--batch-size=-3"]),
        ("seed 2^64", ["--n", "10", "--seed", str(2**64)]),
        ("seed -2^63-1", ["--n", "10", "--seed", str(-2**63 - 1)]),
        ("seed 2^64 in config", ["--config", big_seed_json]),
        ("seed not an int", ["--n", "10", "--seed", "1.5"]),
        ("unknown sampler", ["--n", "10", "--sampler", "weighted"]),
        ("unknown key on the command line", ["--n", "10", "--frobnicate", "1"]),
        ("unknown key in config", ["--config", unknown_key_json]),
        ("config not JSON", ["--config", bad_json]),
        ("config not an object", ["--config", list_json]),
        ("config missing", ["--config", os.path.join(cf.tmpdir, "does-not-exist.json")]),
        ("neither --n nor --root", ["--seed", "3"]),
        ("n not a number", ["--n", "ten"]),
        ("unknown generator", ["--n", "10", "--generator", "cuda"]),
    ]
    failures = []
    for name, argv in cases:
        r = cf.run(argv, timeout=60)
        why = one_line_error(r)
        if why:
            failures.append(f"ERROR-CASE [{name}] clairfs order {' '.join(argv)}: {why}")
    log(f"error cases: {len(cases)} checked, {len(failures)} wrong")
    return failures


if __name__ == "__main__":
    sys.exit(main())
