#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The training command of tests/mount/test_slurm_scripts.py: one rank of a
torch job (SLURM_PROCID of SLURM_NTASKS, or mpiexec's PMI_RANK of PMI_SIZE), a DistributedSampler over an
ImageFolder read through the mount for EPOCHS epochs with set_epoch, every
sample's bytes compared with the backing file's. At the end it saves the
mount's status as OUT/status-RANK.json, the test's evidence of what clairfs
saw while the mount was up."""
import hashlib
import os
import sys

import torch
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.datasets import ImageFolder

mnt, backing, out = sys.argv[1:4]
seed, batch, epochs = (int(v) for v in sys.argv[4:7])
# srun's task variables, or mpiexec's (MPICH's Hydra).
env = os.environ
rank = int(env["SLURM_PROCID"] if "SLURM_PROCID" in env else env["PMI_RANK"])
world = int(env["SLURM_NTASKS"] if "SLURM_NTASKS" in env else env["PMI_SIZE"])


def raw(path):
    with open(path, "rb") as f:
        return f.read()


ds = ImageFolder(os.path.join(mnt, "train"), loader=raw)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, seed=seed)
loader = DataLoader(ds, batch_size=batch, sampler=sampler, collate_fn=lambda b: b)
wrong = 0
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    # DistributedSampler draws from its own generator, seeded with seed +
    # epoch: listing it does not move the loader's order.
    indices = list(sampler)
    got = [sample for b in loader for sample, _ in b]
    assert len(got) == len(indices), (len(got), len(indices))
    for index, data in zip(indices, got):
        rel = os.path.relpath(ds.samples[index][0], mnt)
        if data != raw(os.path.join(backing, rel)):
            wrong += 1
# Read, not copyfile: the status is a live document of size 0, which
# sendfile would copy as empty.
with open(os.path.join(out, f"status-{rank}.json"), "w") as f:
    f.write(open(os.path.join(mnt, ".clairfs", "status")).read())
if wrong:
    sys.exit(f"rank {rank}: {wrong} samples differ from the backing files")
print(f"rank {rank} of {world}: {epochs} epochs of {len(sampler)} samples, torch {torch.__version__}")
