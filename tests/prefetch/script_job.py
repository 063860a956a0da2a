#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A training script's input pipeline as people write it, run unchanged by
Debian's torch 1.13 (/usr/bin/python3) or the torch 2.x venv:

    torch.manual_seed(seed)
    model = nn.Linear(10, 10)                         # "pre_model": 110 draws
    model = torchvision.models.resnet18()             # "model": "resnet18", ~22 million
    tr = DataLoader(ImageFolder(root/train), batch_size, shuffle=True, num_workers)
    va = DataLoader(ImageFolder(root/val), batch_size, shuffle=False, num_workers)
    for epoch in range(epochs):
        for x in tr:
            perm = torch.randperm(len(x))            # "mixup": CPU draws per step
        for x in va: pass

Every draw comes from the global generator. "sampler": "distributed" gives
the train loader a DistributedSampler (with set_epoch unless "set_epoch" is
false); "persistent_workers" applies to both loaders.

The datasets yield (index, SHA-1 of the file's bytes), so the test can check
every byte against the backing file. torchvision's ImageFolder numbers the
files when it imports; otherwise (PyPI's torchvision does not import beside
the CPU torch wheel) list_image_folder() numbers them exactly as it does.

Output, one JSON line each: first {"torch": version, "dataset": which
listing, "registered": bool, "register_error": text or null}, then per
epoch {"epoch": e, "train": [[index, sha1], ...] in the order the loop got
them, "val": [...]} plus, with "status": PATH, "status_train" and
"status_val": that file's JSON as the train and the val pass ended.

Config keys (JSON, argv[1]): root (the mount or a plain directory), train
("train"), val ("val", or null for no val loader), seed, batch_size,
num_workers, epochs, persistent_workers, mixup, pre_model, model
("resnet18": torchvision's, 8 classes, built after the seed and trained
one SGD step per train batch on a zero input, which draws nothing), sampler
("random" or "distributed"), world_size, rank, set_epoch, register (a JSON
value this process writes to ROOT/.clairfs/control before the first epoch,
as a job that registers itself does), status (path), gates ({"E": path}:
before epoch E, or before exiting when E == epochs, wait until path exists).

usage: script_job.py '{"root": ..., "seed": 5, ...}'"""
import hashlib
import json
import os
import sys
import time

import torch

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def list_image_folder(root):
    """[(path, class index)] in torchvision 0.14's ImageFolder order: class
    directories sorted by name (hidden ones too, symlinks followed), in each
    sorted(os.walk()) (by full directory path), files sorted by name, kept
    when their lower-cased name ends with an image extension. A class with
    no image fails, as in torchvision."""
    root = os.path.expanduser(root)
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {root}.")
    samples = []
    for index, name in enumerate(classes):
        before = len(samples)
        for dirpath, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            for f in sorted(files):
                if f.lower().endswith(IMG_EXTENSIONS):
                    samples.append((os.path.join(dirpath, f), index))
        if len(samples) == before:
            raise FileNotFoundError(f"Found no valid file for the classes {name}.")
    return samples


def sha1_loader(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


class Listed(torch.utils.data.Dataset):
    """ImageFolder without torchvision: (sha1 of the file, class)."""

    def __init__(self, root):
        self.samples = list_image_folder(root)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        return sha1_loader(path), target


class Indexed(torch.utils.data.Dataset):
    """Yields (index, sha1) so the test can name the file."""

    def __init__(self, folder):
        self.folder = folder

    def __len__(self):
        return len(self.folder)

    def __getitem__(self, i):
        return i, self.folder[i][0]


def image_folder(root):
    """(dataset, which listing numbered it)."""
    try:
        import torchvision
    except Exception:  # missing, or built for another torch
        return Listed(root), "list_image_folder"
    folder = torchvision.datasets.ImageFolder(root, loader=sha1_loader)
    return folder, f"torchvision {torchvision.__version__} ImageFolder"


def wait_gate(cfg, point):
    path = cfg.get("gates", {}).get(str(point))
    if path is None:
        return
    deadline = time.monotonic() + 300
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"script_job: gate {path} never opened")
        time.sleep(0.05)


def train_step(name):
    """A real model built now (its initialisation draws from the global
    generator, one or two words per parameter), and a function that
    trains it one step on a batch of that size. None without a model."""
    if not name:
        return None
    import torchvision
    model = getattr(torchvision.models, name)(num_classes=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch):
        # A zero input and no dropout: the step draws nothing, as a CUDA
        # model's would not from the CPU generator.
        opt.zero_grad()
        x = torch.zeros(batch, 3, 32, 32)
        loss = torch.nn.functional.cross_entropy(model(x), torch.zeros(batch, dtype=torch.long))
        loss.backward()
        opt.step()
    return step


def read_status(cfg):
    with open(cfg["status"]) as f:
        return json.load(f)


def register(cfg):
    """Writes the registration from this process, as a job would."""
    try:
        with open(os.path.join(cfg["root"], ".clairfs", "control"), "w") as f:
            f.write(json.dumps(cfg["register"]))
        return True, None
    except OSError as e:  # refused: the test says why, the job still runs
        return False, str(e)


def main():
    cfg = json.loads(sys.argv[1])
    train_set, listing = image_folder(os.path.join(cfg["root"], cfg.get("train", "train")))
    train_set = Indexed(train_set)
    val_name = cfg.get("val", "val")
    val_set = Indexed(image_folder(os.path.join(cfg["root"], val_name))[0]) if val_name else None
    registered, error = register(cfg) if "register" in cfg else (False, None)
    print(json.dumps({"torch": torch.__version__, "dataset": listing, "registered": registered,
                      "register_error": error}), flush=True)

    torch.manual_seed(cfg["seed"])
    if cfg.get("pre_model"):
        torch.nn.Linear(10, 10)  # initialised on the CPU from the global generator
    step = train_step(cfg.get("model"))
    kw = dict(batch_size=cfg.get("batch_size", 8), num_workers=cfg.get("num_workers", 2),
              persistent_workers=cfg.get("persistent_workers", False))
    sampler = None
    if cfg.get("sampler", "random") == "distributed":
        sampler = torch.utils.data.DistributedSampler(
            train_set, num_replicas=cfg.get("world_size", 1), rank=cfg.get("rank", 0),
            seed=cfg["seed"])
        train = torch.utils.data.DataLoader(train_set, sampler=sampler, **kw)
    else:
        train = torch.utils.data.DataLoader(train_set, shuffle=True, **kw)
    val = torch.utils.data.DataLoader(val_set, shuffle=False, **kw) if val_set else None

    epochs = cfg.get("epochs", 3)
    for epoch in range(epochs):
        wait_gate(cfg, epoch)
        if sampler is not None and cfg.get("set_epoch", True):
            sampler.set_epoch(epoch)
        line = {"epoch": epoch, "train": [], "val": []}
        for idx, digests in train:
            line["train"].extend(zip(idx.tolist(), digests))
            if cfg.get("mixup"):
                torch.randperm(len(idx))  # mixup's pairing: CPU draws every step
            if step:
                step(len(idx))
        if cfg.get("status"):
            line["status_train"] = read_status(cfg)
        if val is not None:
            for idx, digests in val:
                line["val"].extend(zip(idx.tolist(), digests))
            if cfg.get("status"):
                line["status_val"] = read_status(cfg)
        print(json.dumps(line), flush=True)
    wait_gate(cfg, epochs)


if __name__ == "__main__":
    main()
