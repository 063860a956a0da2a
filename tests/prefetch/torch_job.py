#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An unmodified input pipeline, as a training script would write it:
torchvision ImageFolder over the mount, a DataLoader with workers, and
optionally a DistributedSampler for one rank. Its loader reads each sample's
file whole and yields the bytes' SHA-1, so the test can check every byte
the job was served. Prints one JSON line per epoch: the samples it got, as
[dataset index, sha1] pairs in the order the loop received them, the
CLOCK_MONOTONIC time each batch arrived ("batch_t", so a test can measure
a stall), and with "status": PATH in the config, that file's JSON as the
epoch ended. With "stop_file": PATH, it stops after the epoch at whose end
that file exists ("epochs" is then the most it runs): a test that waits for
something the job causes ends the job once it has seen it.

Samplers: "distributed" (DistributedSampler(seed=seed), set_epoch each
epoch from "start_epoch", a resumed job), "sequential" (shuffle=False), else
shuffle=True with DataLoader(generator=Generator().manual_seed(seed)).

usage: torch_job.py '{"root": ..., "seed": 0, "batch_size": 4, ...}'"""
import json
import os
import sys
import time

import torch
import torchvision

# Beside this file, so the script's own directory on sys.path finds it:
# the ImageFolder's loader (the SHA-1 of a file's bytes), and the dataset
# that yields (index, sha1) so the test can name the file.
from script_job import Indexed, sha1_loader


def main():
    cfg = json.loads(sys.argv[1])
    folder = torchvision.datasets.ImageFolder(cfg["root"], loader=sha1_loader)
    ds = Indexed(folder)
    kw = dict(batch_size=cfg.get("batch_size", 4), num_workers=cfg.get("num_workers", 2))
    sampler = None
    if cfg.get("sampler") == "distributed":
        sampler = torch.utils.data.DistributedSampler(
            ds, num_replicas=cfg["world_size"], rank=cfg["rank"], seed=cfg["seed"])
        loader = torch.utils.data.DataLoader(ds, sampler=sampler, **kw)
    elif cfg.get("sampler") == "sequential":
        loader = torch.utils.data.DataLoader(ds, shuffle=False, **kw)
    else:
        g = torch.Generator()
        g.manual_seed(cfg["seed"])
        loader = torch.utils.data.DataLoader(ds, shuffle=True, generator=g, **kw)
    start = cfg.get("start_epoch", 0)
    for epoch in range(start, start + cfg.get("epochs", 1)):
        if sampler is not None and not cfg.get("forget_set_epoch"):
            sampler.set_epoch(epoch)
        got, batch_t = [], []
        for idx, digests in loader:
            batch_t.append(time.monotonic())
            got.extend(zip(idx.tolist(), digests))
        line = {"epoch": epoch, "samples": got, "batch_t": batch_t}
        if cfg.get("status"):  # the mount's status as this epoch ends
            with open(cfg["status"]) as f:
                line["status"] = json.load(f)
        print(json.dumps(line), flush=True)
        if cfg.get("stop_file") and os.path.exists(cfg["stop_file"]):
            break


if __name__ == "__main__":
    main()
