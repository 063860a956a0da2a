# SPDX-License-Identifier: MIT
"""The defaults of `clairfs order`'s keys (PyTorch's defaults), shared by
the torch side (torch_orders.py) and the test driver, which must not import
torch itself so that it can report a missing torch as a skip."""

DEFAULTS = {
    "seed": 0, "sampler": "random", "generator": "global", "epochs": 1,
    "start_epoch": 0, "world_size": 1, "rank": 0, "shuffle": True,
    "sampler_drop_last": False, "drop_last": False, "batch_size": 1,
    "num_workers": 0, "prefetch_factor": 2, "persistent_workers": False,
    "pre_draws": 0, "torch_version": "1.13", "replacement": False,
    "num_samples": None,
}
