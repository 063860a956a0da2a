#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The torch side of test_large_n.py: what real torch's DataLoader(shuffle=True,
generator=torch.Generator().manual_seed(SEED)) orders epoch 0 as, for a
dataset of N samples, too large to go through Python lists (214 million).

Epoch 0 of that loader is, in every torch from 1.13 to 2.14 (checked at small
n by test_torch_order.py with the real DataLoader): the loader's base_seed
draw from the generator (torch.empty((), dtype=torch.int64).random_()), then
RandomSampler's torch.randperm(N, generator=G). This script makes exactly
those two calls and prints one JSON line:

    {"torch": version, "n": N, "sha256": of the order as little-endian int32,
     "samples": {position: index, ...} at fixed positions,
     "draws": 32-bit draws randperm took from the generator}

"draws" tells the algorithm: N - 1 for the forward Fisher-Yates of 1.13,
2N for the inside-out one with 64-bit draws. It is found by comparing the
generator's next draw after randperm with a fresh generator's stream.

usage: torch_large_n.py N SEED"""
import ctypes
import hashlib
import json
import sys

import torch

CHUNK = 1 << 24


def sample_positions(n):
    """Fixed positions spread over [0, n): both sides report these."""
    fixed = [0, 1, 2, 3, n // 3, n // 2, n - 3, n - 2, n - 1]
    step = max(1, n // 64)
    return sorted({p for p in fixed + list(range(5, n, step)) if 0 <= p < n})


def digest(perm):
    """SHA-256 of the order as little-endian int32 (the machine's order: x86)."""
    t = perm.to(torch.int32).contiguous()
    buf = (ctypes.c_char * (t.numel() * 4)).from_address(t.data_ptr())
    return hashlib.sha256(memoryview(buf)).hexdigest()


def next_draw(g):
    """The generator's next 32-bit draw modulo 2^27: randint below 2^28 takes
    one 32-bit draw in every torch version."""
    return torch.randint(0, 2**27, (1,), generator=g).item()


def draws_taken(seed, after, candidates):
    """Which of `candidates` (draw counts) a fresh generator seeded with seed
    must skip for its next draw to equal `after`; None if none does."""
    for k in sorted(candidates):
        g = torch.Generator().manual_seed(seed)
        torch.empty((), dtype=torch.int64).random_(generator=g)  # the base_seed draw
        left = k
        while left:
            step = min(left, CHUNK)
            torch.randint(0, 2**27, (step,), generator=g)  # one 32-bit draw each
            left -= step
        if next_draw(g) == after:
            return k
    return None


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(seed)
    torch.empty((), dtype=torch.int64).random_(generator=g)  # DataLoader's base_seed
    perm = torch.randperm(n, generator=g)                   # RandomSampler's epoch 0
    after = next_draw(g)
    out = {"torch": torch.__version__, "n": n, "sha256": digest(perm),
           "samples": {str(p): int(perm[p]) for p in sample_positions(n)}}
    del perm
    out["draws"] = draws_taken(seed, after, [n - 1, 2 * n])
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
