#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Which DataLoader worker opens which sample, and how far ahead: for real
torch DataLoaders with 1-3 workers (persistent or not, 2 epochs), every
batch k must come from worker k % W, `clairfs order --worker w` must list
exactly what worker w opened, in its order, and no batch may be opened more
than prefetch_factor * W batches ahead of what the loop has received.
Under Debian's torch 1.13, or (CLAIRFS_ORDER_TORCH=2.x, meson's
order_workers_2x) the torch 2.x venv's, told to clairfs as torch_version."""
import json
import multiprocessing
import os
import subprocess
import sys
import time

import torch_python

torch_python.run_under_chosen_python(__file__)

CLAIRFS = os.environ.get("CLAIRFS", "build/src/clairfs")

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:
    torch_python.no_torch(f"{sys.executable} cannot import torch ({e})")

received = multiprocessing.Value("l", 0)  # shared with the forked workers


class Probe(Dataset):
    """Sample i reports who opened it and how many batches the training loop
    had received at that moment."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(0.0005)  # let the prefetch window fill
        return i, torch.utils.data.get_worker_info().id, received.value


def run_torch(n, seed, batch, workers, prefetch, persistent, epochs):
    loader = DataLoader(Probe(n), batch_size=batch, shuffle=True, num_workers=workers,
                        prefetch_factor=prefetch, persistent_workers=persistent,
                        generator=torch.Generator().manual_seed(seed), collate_fn=lambda b: b)
    out = []
    for _ in range(epochs):
        received.value = 0
        batches = []
        for b in loader:
            batches.append(b)
            received.value += 1
        out.append(batches)
    return out


def clairfs(*args):
    r = subprocess.run([CLAIRFS, "order", *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"clairfs order {args}: {r.stderr.strip()}")
    return [json.loads(l) for l in r.stdout.splitlines()]


def check_case(n, seed, batch, workers, prefetch, persistent, epochs=2):
    label = f"n={n} batch={batch} W={workers} prefetch={prefetch} persistent={persistent}"
    epochs_seen = run_torch(n, seed, batch, workers, prefetch, persistent, epochs)
    base = ["--n", n, "--seed", seed, "--generator", "explicit", "--batch-size", batch,
            "--num-workers", workers, "--prefetch-factor", prefetch, "--epochs", epochs,
            "--persistent-workers", "true" if persistent else "false",
            "--torch-version", torch.__version__]
    per_worker = [clairfs(*base, "--worker", w) for w in range(workers)]
    worst = 0
    for e, batches in enumerate(epochs_seen):
        opened = [[] for _ in range(workers)]
        for k, b in enumerate(batches):
            owners = {w for _, w, _ in b}
            if owners != {k % workers}:
                raise AssertionError(f"{label}: epoch {e} batch {k} from workers {owners}")
            opened[k % workers] += [i for i, _, _ in b]
            worst = max(worst, max(k - r for _, _, r in b))
        for w in range(workers):
            if opened[w] != per_worker[w][e]:
                raise AssertionError(f"{label}: epoch {e} worker {w}: torch {opened[w][:10]}..., "
                                     f"clairfs {per_worker[w][e][:10]}...")
    if worst > prefetch * workers:
        raise AssertionError(f"{label}: a batch was opened {worst} batches ahead "
                             f"(bound {prefetch * workers})")
    print(f"ok {label}: most batches in flight {worst} (bound {prefetch * workers})")


def main():
    cases = [(100, 3, 4, 1, 2, False), (103, 5, 5, 2, 2, False), (97, 7, 3, 3, 2, True),
             (64, 11, 8, 2, 4, True), (50, 0, 1, 2, 1, False)]
    failures = 0
    for case in cases:
        try:
            check_case(*case)
        except AssertionError as e:
            failures += 1
            print(f"FAIL {e}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
