#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The torch side of tests/python/test_register.py, run under the torch
being tested (Debian's 1.13, or the venv's 2.x) with the clairfs package
importable. For each case it builds a real DataLoader over MNT/train (and
MNT/val), calls clairfs.register() as a training script would, runs the
epochs reading every sample (each compared with the backing file's bytes),
then reads clairfs.explain(): one JSON line per case with the loaders'
run_opens, run_matched and mode, or, for a case clairfs must refuse, the
ClairfsError's message. Between cases the job is unregistered, so each
starts afresh.

usage: loader_cases.py MNT BACKING"""
import json
import os
import sys
import traceback

import torch
from torch import nn
from torch.utils.data import (BatchSampler, DataLoader, Dataset, DistributedSampler,
                              IterableDataset, RandomSampler, SequentialSampler, Subset)

import clairfs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "prefetch"))
from script_job import IMG_EXTENSIONS, list_image_folder  # noqa: E402

MNT, BACKING = sys.argv[1:3]
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def raw(path):
    with open(path, "rb") as f:
        return f.read()


try:
    from torchvision.datasets import ImageFolder

    def image_folder(root):
        return ImageFolder(root, loader=raw)
except ImportError:  # PyPI's torchvision does not import beside the CPU wheel
    class ImageFolder(Dataset):
        """torchvision's ImageFolder as clairfs.register sees it: root,
        samples and extensions, the files numbered as torchvision does."""

        def __init__(self, root):
            self.root = root
            self.samples = list_image_folder(root)
            self.extensions = IMG_EXTENSIONS

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, i):
            path, target = self.samples[i]
            return raw(path), target

    def image_folder(root):
        return ImageFolder(root)


class Indexed(Dataset):
    """Wraps an ImageFolder so the loop sees which sample it got."""

    def __init__(self, ds):
        self.inner = ds
        self.root, self.samples = ds.root, ds.samples
        self.extensions = getattr(ds, "extensions", IMG_EXTENSIONS)

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        return i, self.inner[i][0]


def keep(batch):
    return batch


def run_epochs(loaders, epochs, distributed=()):
    """Iterates each loader once per epoch (the first is training, the
    others validation passes after it); returns (samples whose bytes differ
    from the backing file's, samples each loader read: one open each)."""
    wrong, opened = 0, [0] * len(loaders)
    for epoch in epochs:
        for s in distributed:
            s.set_epoch(epoch)
        for i, loader in enumerate(loaders):
            for batch in loader:
                items = batch if isinstance(batch, list) else [batch]
                for index, data in items:
                    path = loader.dataset.samples[index][0]
                    want = raw(os.path.join(BACKING, os.path.relpath(path, MNT)))
                    wrong += data != want
                    opened[i] += 1
    return wrong, opened


def train(**kw):
    kw.setdefault("collate_fn", keep)
    return DataLoader(Indexed(image_folder(os.path.join(MNT, "train"))), **kw)


def val(**kw):
    kw.setdefault("collate_fn", keep)
    return DataLoader(Indexed(image_folder(os.path.join(MNT, "val"))), **kw)


# ------------------------------------------------------------ the cases
# Each returns (loaders registered, epochs, samplers to set_epoch) after
# calling clairfs.register itself, as a script would.

def shuffle_global():
    torch.manual_seed(5)
    loader = train(batch_size=4, shuffle=True)
    clairfs.register(loader)
    return [loader], range(2), ()


def model_draws_and_workers():
    torch.manual_seed(2**64 - 1)
    nn.Linear(10, 10)                 # 110 draws
    torch.randn(3)
    loader = train(batch_size=5, shuffle=True, num_workers=2, drop_last=True)
    reg = clairfs.register(loader)
    assert reg["pre_draws"] > 110, reg
    return [loader], range(2), ()


def explicit_generator_persistent():
    torch.manual_seed(99)             # not the loader's: must not matter
    g = torch.Generator().manual_seed(2**63 + 5)
    loader = train(batch_size=3, shuffle=True, generator=g, num_workers=2,
                   persistent_workers=True, prefetch_factor=3)
    reg = clairfs.register(loader)
    assert reg["generator"] == "explicit" and reg["seed"] == 2**63 + 5, reg
    return [loader], range(3), ()


def replacement_num_samples():
    g = torch.Generator().manual_seed(17)
    ds = Indexed(image_folder(os.path.join(MNT, "train")))
    sampler = RandomSampler(ds, replacement=True, num_samples=50, generator=g)
    loader = DataLoader(ds, batch_size=4, sampler=sampler, generator=g, collate_fn=keep)
    clairfs.register(loader)
    return [loader], range(2), ()


def distributed_from_epoch_3():
    ds = Indexed(image_folder(os.path.join(MNT, "train")))
    sampler = DistributedSampler(ds, num_replicas=3, rank=1, seed=-7 % 2**64, drop_last=True)
    sampler.set_epoch(3)              # resumed from a checkpoint
    loader = DataLoader(ds, batch_size=2, sampler=sampler, num_workers=2, collate_fn=keep)
    reg = clairfs.register(loader, ranks=[1], epochs=2)  # seed + epoch stays below 2^64
    assert reg["start_epoch"] == 3 and reg["world_size"] == 3, reg
    return [loader], range(3, 5), (sampler,)


def distributed_torchrun_ranks():
    # As torchrun sets them for global rank 3, the second of two on a node.
    os.environ.update(LOCAL_RANK="1", LOCAL_WORLD_SIZE="2")
    try:
        ds = Indexed(image_folder(os.path.join(MNT, "train")))
        sampler = DistributedSampler(ds, num_replicas=4, rank=3, seed=11, shuffle=True)
        loader = DataLoader(ds, batch_size=4, sampler=sampler, collate_fn=keep)
        reg = clairfs.register(loader)
    finally:
        del os.environ["LOCAL_RANK"], os.environ["LOCAL_WORLD_SIZE"]
    assert reg["ranks"] == [2, 3], reg
    return [loader], range(2), (sampler,)


def sequential_unbatched():
    loader = train(batch_size=None, shuffle=False)  # keep() then gets single samples
    clairfs.register(loader)
    return [loader], range(2), ()


def train_and_val():
    torch.manual_seed(1234)
    t = train(batch_size=4, shuffle=True, num_workers=2)
    v = val(batch_size=8, shuffle=False, num_workers=2)
    reg = clairfs.register(t, v, epochs=2)
    assert [l["root"] for l in reg["loaders"]] == ["train", "val"], reg
    return [t, v], range(2), ()


def after_an_epoch():
    torch.manual_seed(8)
    loader = train(batch_size=6, shuffle=True, num_workers=1)
    run_epochs([loader], range(1))    # unregistered: the first epoch
    reg = clairfs.register(loader)    # the global generator is where epoch 1 starts
    assert reg["pre_draws"] >= 4, reg
    return [loader], range(1), ()


CASES = [shuffle_global, model_draws_and_workers, explicit_generator_persistent,
         replacement_num_samples, distributed_from_epoch_3, distributed_torchrun_ranks,
         sequential_unbatched, train_and_val, after_an_epoch]


# ------------------------------------------------------------ refusals

class MySampler(RandomSampler):
    pass


class Stream(IterableDataset):
    def __iter__(self):
        return iter(())


def refuse_in_order():
    if not TORCH2 or "in_order" not in DataLoader.__init__.__code__.co_varnames:
        return "skip: this torch's DataLoader has no in_order"
    clairfs.register(train(batch_size=2, shuffle=True, num_workers=1, in_order=False))


def refuse_custom_sampler():
    ds = Indexed(image_folder(os.path.join(MNT, "train")))
    clairfs.register(DataLoader(ds, sampler=MySampler(ds), collate_fn=keep))


def refuse_custom_batch_sampler():
    ds = Indexed(image_folder(os.path.join(MNT, "train")))

    class Batches(BatchSampler):
        pass
    bs = Batches(SequentialSampler(ds), batch_size=3, drop_last=False)
    clairfs.register(DataLoader(ds, batch_sampler=bs, collate_fn=keep))


def refuse_subset():
    clairfs.register(DataLoader(Subset(image_folder(os.path.join(MNT, "train")), [0, 1, 2])))


def refuse_iterable():
    clairfs.register(DataLoader(Stream()))


def refuse_advanced_generator():
    g = torch.Generator().manual_seed(3)
    torch.rand(2, generator=g)
    clairfs.register(train(batch_size=2, shuffle=True, generator=g))


def refuse_sampler_generator_only():
    ds = Indexed(image_folder(os.path.join(MNT, "train")))
    sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(4))
    clairfs.register(DataLoader(ds, sampler=sampler, collate_fn=keep))


def refuse_not_on_a_mount():
    clairfs.register(DataLoader(Indexed(image_folder(os.path.join(BACKING, "train")))))


def refuse_not_an_image_folder():
    class Numbers(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i
    clairfs.register(DataLoader(Numbers()))


def refuse_by_the_mount():
    clairfs.register(train(batch_size=2), root=os.path.join(MNT, "no-such-dir"))


def refuse_rank_not_held():
    ds = Indexed(image_folder(os.path.join(MNT, "train")))
    sampler = DistributedSampler(ds, num_replicas=2, rank=1)
    clairfs.register(DataLoader(ds, sampler=sampler), ranks=[0])


REFUSALS = [refuse_in_order, refuse_custom_sampler, refuse_custom_batch_sampler, refuse_subset,
            refuse_iterable, refuse_advanced_generator, refuse_sampler_generator_only,
            refuse_not_on_a_mount, refuse_not_an_image_folder, refuse_by_the_mount,
            refuse_rank_not_held]


def main():
    torch.set_num_threads(1)
    print(json.dumps({"torch": torch.__version__, "clairfs": clairfs.__file__}), flush=True)
    for case in CASES:
        out = {"case": case.__name__}
        try:
            clairfs.unregister(MNT)
            loaders, epochs, samplers = case()
            out["wrong"], out["opened"] = run_epochs(loaders, epochs, samplers)
            st = clairfs.explain(loaders[0])
            out["mode"] = st["mode"]
            out["loaders"] = [{k: l[k] for k in ("root", "mode", "run_opens", "run_matched",
                                                 "resyncs")}
                              for j in st["jobs"] for l in j["loaders"]]
        except Exception as e:  # the driver reports it as this case's failure
            out["error"] = f"{type(e).__name__}: {e}"
            out["trace"] = traceback.format_exc()[-2000:]
        print(json.dumps(out), flush=True)
    for case in REFUSALS:
        out = {"refusal": case.__name__}
        try:
            skipped = case()
            out["skipped" if skipped else "error"] = skipped or "not refused"
        except clairfs.ClairfsError as e:
            out["message"] = str(e)
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(out), flush=True)
    clairfs.unregister(MNT)


if __name__ == "__main__":
    main()
