#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Expected data-access orders, computed by running the REAL torch DataLoader.

Reads a JSON list of parameter sets (the keys of `clairfs order --config`,
with underscores, plus "n", or "root" + "layout": "imagefolder") from the
file named as the first argument, or from stdin, and writes a JSON list of
results, one per parameter set, to stdout (or to --out FILE):

    {"orders": [[i, ...], ...]}            one list per epoch, the indices
                                           (or, with "paths", the relative
                                           paths) the rank's loader yields
    {"error": "ValueError: ...",           torch refused the job; "orders"
     "orders": [...]}                      holds the epochs before that

Nothing here is reimplemented: the orders are what
`for batch in DataLoader(...)` yields, with a map-style dataset whose
__getitem__ returns its index, a collate_fn that returns the batch list
unchanged, and real worker processes when num_workers > 0. Runs under
/usr/bin/python3 with Debian's python3-torch (1.13.1), or any python with
torch and numpy (the torch 2.x venv: tests/order/torch_python.py).
"""
import argparse
import json
import os
import sys

import torch
from job_defaults import DEFAULTS
from torch.utils.data import (DataLoader, Dataset, DistributedSampler,
                              RandomSampler)
from torch_python import image_folder_samples

# An unrelated seed for the global generator when it must not matter
# (explicit generator, distributed, sequential): the job's own RNG use then
# differs from the seed clairfs is given, as it would in a real job.
UNRELATED_GLOBAL_SEED = 987654321


class IndexDataset(Dataset):
    """Sample i is the int i: the loader's output is its access order."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def keep_list(batch):
    """collate_fn: the batch's indices, unchanged (no tensor building)."""
    return batch


def pre_draw(count):
    """`count` 32-bit draws from the global generator: a float32 uniform_
    takes exactly one per element (checked in self_check())."""
    if count:
        torch.empty(count, dtype=torch.float32).uniform_()


def imagefolder_paths(root):
    """torchvision's own sample list (or, where torchvision does not import,
    as in the torch 2.x venv, list_image_folder's), relative to root."""
    samples, _ = image_folder_samples(root)
    return [os.path.relpath(path, root) for path, _ in samples]


def run(params):
    try:
        return run_job(params)
    except Exception as e:  # torch refused the job while setting it up
        return {"error": f"{type(e).__name__}: {e}", "orders": []}


def run_job(params):
    p = dict(DEFAULTS)
    p.update(params)
    paths = None
    if p.get("root") is not None:
        if p.get("layout", "imagefolder") != "imagefolder":
            raise ValueError("only the imagefolder layout has a torch reference")
        paths = imagefolder_paths(p["root"])
        n = len(paths)
    else:
        n = p["n"]
    ds = IndexDataset(n)

    kw = {"batch_size": p["batch_size"], "num_workers": p["num_workers"],
          "drop_last": p["drop_last"], "collate_fn": keep_list}
    if p["num_workers"] > 0:
        kw["prefetch_factor"] = p["prefetch_factor"]
        kw["persistent_workers"] = p["persistent_workers"]
    elif p["persistent_workers"]:
        kw["persistent_workers"] = True          # torch refuses this

    sampler = None
    epochs = list(range(p["epochs"]))
    if p["sampler"] == "random":
        if p["generator"] == "global":
            torch.manual_seed(p["seed"])
            pre_draw(p["pre_draws"])
            gen = None
        elif p["generator"] == "explicit":
            # The job's global generator is in some other state; it must not
            # matter, so make it differ from the seed clairfs is told.
            torch.manual_seed(UNRELATED_GLOBAL_SEED)
            pre_draw(p["pre_draws"])
            gen = torch.Generator()
            gen.manual_seed(p["seed"])
            kw["generator"] = gen
        else:
            raise ValueError(f"unknown generator {p['generator']!r}")
        if p["replacement"] or p["num_samples"] is not None:
            # What DataLoader(shuffle=True) builds, with the two options.
            kw["sampler"] = RandomSampler(ds, replacement=p["replacement"],
                                          num_samples=p["num_samples"],
                                          generator=gen)
        else:
            kw["shuffle"] = True
    elif p["sampler"] == "distributed":
        torch.manual_seed(UNRELATED_GLOBAL_SEED)
        sampler = DistributedSampler(ds, num_replicas=p["world_size"],
                                     rank=p["rank"], shuffle=p["shuffle"],
                                     seed=p["seed"],
                                     drop_last=p["sampler_drop_last"])
        kw["sampler"] = sampler
        epochs = list(range(p["start_epoch"], p["start_epoch"] + p["epochs"]))
    elif p["sampler"] == "sequential":
        torch.manual_seed(UNRELATED_GLOBAL_SEED)
        kw["shuffle"] = False
    else:
        raise ValueError(f"unknown sampler {p['sampler']!r}")

    orders = []
    loader = None
    try:
        loader = DataLoader(ds, **kw)
        for epoch in epochs:
            if sampler is not None:
                sampler.set_epoch(epoch)
            order = []
            for batch in loader:
                order.extend(batch)
            orders.append(order)
    except Exception as e:  # torch refused: report it, with what came before
        return {"error": f"{type(e).__name__}: {e}", "orders": orders}
    finally:
        # Shut persistent workers down now, not at interpreter exit.
        if loader is not None and getattr(loader, "_iterator", None) is not None:
            loader._iterator._shutdown_workers()
            loader._iterator = None
    if paths is not None:
        orders = [[paths[i] for i in order] for order in orders]
    return {"orders": orders}


def self_check():
    """The pre-draw helper consumes exactly one 32-bit draw per element:
    after it, the next draws are the MT19937 stream shifted by `count`."""
    import numpy as np
    for seed in (0, 42, 2**64 - 1):
        for count in (0, 1, 110, 1000):
            torch.manual_seed(seed)
            pre_draw(count)
            # randint over [0, 2^27) is one 32-bit draw modulo 2^27 (from
            # torch 2.7 on, ranges of 2^28 and more take 64-bit draws).
            got = torch.randint(0, 2**27, (4,), dtype=torch.int64).tolist()
            bitgen = np.random.MT19937(0)
            bitgen._legacy_seeding(seed & 0xFFFFFFFF)
            raw = [int(x) for x in bitgen.random_raw(count + 4)]
            want = [x % 2**27 for x in raw[count:]]
            if got != want:
                raise SystemExit(f"torch_orders.py: pre_draw({count}) after seed "
                                 f"{seed} is not {count} draws: {got} != {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("params", nargs="?", help="JSON file (default: stdin)")
    ap.add_argument("--out", help="write the JSON results here (default: stdout)")
    ap.add_argument("--no-self-check", action="store_true")
    args = ap.parse_args()
    if args.params:
        with open(args.params) as f:
            todo = json.load(f)
    else:
        todo = json.load(sys.stdin)
    if not isinstance(todo, list):
        raise SystemExit("torch_orders.py: expected a JSON list of parameter sets")
    if not args.no_self_check:
        self_check()
    torch.set_num_threads(1)
    results = [run(params) for params in todo]
    text = json.dumps(results, separators=(",", ":"))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
