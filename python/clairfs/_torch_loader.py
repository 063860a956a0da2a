# SPDX-License-Identifier: MIT
"""A torch DataLoader read as clairfs registration keys (clairfs-control(5)),
or a ClairfsError saying exactly what clairfs cannot follow.

What clairfs reproduces is the DataLoader's own order: its sampler
(RandomSampler, DistributedSampler or SequentialSampler, as torch ships
them), torch's BatchSampler, the workers' round robin, and the draws from
the global generator or the DataLoader's generator. Anything else changes
the order in ways clairfs does not model, so it is refused rather than
guessed."""
import os

from ._errors import ClairfsError
from ._generator import draws_since_seed
from ._ranks import node_ranks

# torchvision's IMG_EXTENSIONS, which clairfs's imagefolder layout lists.
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def _torch():
    import torch  # the caller's: only needed once a loader is handed over
    return torch


def _dataset_root(ds):
    """The dataset's directory, for a torchvision ImageFolder or
    DatasetFolder (or anything with its root, samples and extensions)."""
    name = type(ds).__name__
    if not all(hasattr(ds, a) for a in ("root", "samples")):
        raise ClairfsError(f"the dataset is a {name}, not an ImageFolder-like dataset (root and "
                           "samples): give root= and layout= (see clairfs register --help)")
    ext = getattr(ds, "extensions", IMG_EXTENSIONS)
    if ext is None:
        raise ClairfsError(f"the {name} picks its files with is_valid_file, which clairfs cannot "
                           "see: give layout='list' and a manifest= of the files in order")
    if tuple(e.lower() for e in ext) != IMG_EXTENSIONS:
        raise ClairfsError(f"the {name} takes the extensions {tuple(ext)}, not torchvision's "
                           "image extensions, which clairfs's imagefolder layout lists: give "
                           "layout='list' and a manifest=")
    if len(ds.samples) != len(ds):
        raise ClairfsError(f"the {name} has {len(ds.samples)} samples but a length of {len(ds)}")
    return os.fspath(ds.root)


def _generator_keys(torch, loader, sampler):
    """generator, seed and pre_draws of a RandomSampler's loader."""
    sg, lg = sampler.generator, loader.generator
    if sg is None and lg is None:
        seed, draws = draws_since_seed(torch)
        return {"generator": "global", "seed": seed, "pre_draws": draws}
    if sg is lg:
        seed, draws = draws_since_seed(torch, sg)
        if draws:
            raise ClairfsError(f"the DataLoader's generator has made {draws} draws since its "
                               "manual_seed: clairfs predicts from a freshly seeded generator; "
                               "register before the first epoch")
        return {"generator": "explicit", "seed": seed}
    if lg is None:
        raise ClairfsError("the RandomSampler has a generator but the DataLoader has none: the "
                           "workers' base seed then comes from the global generator, which "
                           "clairfs does not model; pass the same generator= to the DataLoader")
    raise ClairfsError("the DataLoader's generator is not its RandomSampler's: pass the same "
                       "generator to both (DataLoader(generator=g, shuffle=True) does)")


def _sampler_keys(torch, loader, ranks):
    data = torch.utils.data
    sampler = loader.sampler
    kind = type(sampler)
    if kind is data.RandomSampler:
        keys = {"sampler": "random", **_generator_keys(torch, loader, sampler)}
        if sampler.replacement:
            keys["replacement"] = True
        if getattr(sampler, "_num_samples", None) is not None:
            keys["num_samples"] = sampler._num_samples
        return keys, [0] if ranks is None else ranks, "one order for every rank"
    if kind is data.distributed.DistributedSampler:
        keys = {"sampler": "distributed", "seed": sampler.seed,
                "world_size": sampler.num_replicas, "shuffle": bool(sampler.shuffle),
                "sampler_drop_last": bool(sampler.drop_last), "start_epoch": sampler.epoch}
        how = "given"
        if ranks is None:
            ranks, how = node_ranks(sampler.rank, sampler.num_replicas)
        elif sampler.rank not in ranks:
            raise ClairfsError(f"ranks={ranks} does not hold this process's rank {sampler.rank}")
        return keys, ranks, how
    if kind is data.SequentialSampler:
        return {"sampler": "sequential"}, [0] if ranks is None else ranks, "one order"
    raise ClairfsError(f"the sampler is a {kind.__module__}.{kind.__qualname__}: clairfs follows "
                       "torch's RandomSampler, DistributedSampler and SequentialSampler, "
                       "not their subclasses or custom samplers")


def _batch_keys(torch, loader):
    bs = loader.batch_sampler
    if loader.batch_size is None and bs is None:
        # No automatic batching: every index is a batch of its own.
        return {"batch_size": 1, "drop_last": False}
    if type(bs) is not torch.utils.data.BatchSampler:
        raise ClairfsError(f"the batch sampler is a {type(bs).__qualname__}: clairfs follows "
                           "torch's BatchSampler only")
    if bs.sampler is not loader.sampler:
        raise ClairfsError("the BatchSampler draws from another sampler than the DataLoader's")
    return {"batch_size": bs.batch_size, "drop_last": bool(bs.drop_last)}


def loader_keys(loader, ranks=None):
    """(keys, dataset directory, how the ranks were found)."""
    torch = _torch()
    data = torch.utils.data
    if not isinstance(loader, data.DataLoader):
        raise ClairfsError(f"expected a torch DataLoader, got a {type(loader).__qualname__}")
    ds = loader.dataset
    if isinstance(ds, data.IterableDataset):
        raise ClairfsError("the dataset is an IterableDataset: its order is its own, not a "
                           "sampler's")
    if isinstance(ds, (data.Subset, data.ConcatDataset)):
        raise ClairfsError(f"the dataset is a {type(ds).__name__}: register the loader of the "
                           "whole ImageFolder, or give root=, layout='list' and a manifest=")
    if getattr(loader, "in_order", True) is False:
        raise ClairfsError("the DataLoader has in_order=False: batches then come in the order "
                           "workers finish them, which no seed predicts")
    if ranks is not None:
        ranks = sorted({int(r) for r in ranks})
    keys = {"framework": "pytorch", "torch_version": torch.__version__}
    sampler_keys, ranks, how = _sampler_keys(torch, loader, ranks)
    keys.update(sampler_keys)
    keys.update(_batch_keys(torch, loader))
    keys["num_workers"] = loader.num_workers
    if loader.num_workers > 0:
        keys["prefetch_factor"] = loader.prefetch_factor
        keys["persistent_workers"] = bool(loader.persistent_workers)
    keys["ranks"] = ranks
    keys["n"] = len(ds)
    return keys, ds, how
