# SPDX-License-Identifier: MIT
"""register(), registration() and explain(): the package's surface."""
import os

from ._errors import ClairfsError
from ._mount import find_mount, status, write_control
from ._torch_loader import _dataset_root, loader_keys


def _is_loader(obj):
    return hasattr(obj, "dataset") and hasattr(obj, "sampler")


def registration(*loaders, root=None, layout=None, manifest=None, ranks=None, epochs=None,
                 job=None):
    """(mount point, registration) for `loaders` without writing it: what
    register() would write. See register()."""
    if not loaders:
        raise ClairfsError("registration() needs a DataLoader")
    if len(loaders) > 1 and (root is not None or layout is not None or manifest is not None):
        raise ClairfsError("root=, layout= and manifest= describe one loader's dataset: register "
                           "several loaders only with ImageFolder-like datasets")
    mount, entries, notes = None, [], []
    for loader in loaders:
        keys, ds, how = loader_keys(loader, ranks)
        directory = root if root is not None else _dataset_root(ds)
        mp, rel = find_mount(directory)
        if mount is not None and mp != mount:
            raise ClairfsError(f"the loaders read from two mounts, {mount} and {mp}: register "
                               "each mount's loaders there")
        mount = mp
        keys["root"] = rel
        if layout is not None:
            keys["layout"] = layout
        if manifest is not None:
            keys["manifest"] = find_mount(manifest)[1] if os.path.isabs(manifest) else manifest
        if layout is not None and layout != "imagefolder":
            keys.pop("n")  # the layout's own count is checked against the files
        entries.append(keys)
        notes.append(how)
    body = entries[0] if len(entries) == 1 else {"loaders": entries}
    if epochs is not None:
        body["epochs"] = int(epochs)
    if job is not None:
        body["job"] = str(job)
    return mount, body


def register(*loaders, root=None, layout=None, manifest=None, ranks=None, epochs=None, job=None):
    """Registers `loaders` (a training DataLoader, and its validation
    loader if it has one) with the clairfs mount their dataset is on, so
    that clairfs prefetches in their exact order. Call it in every process
    of the job, after building the loaders and before the first epoch:
    each process writes the same registration (its node's ranks), which
    the mount takes once.

    Read from each loader: its sampler (RandomSampler, DistributedSampler
    or SequentialSampler), the generator and the draws already made from
    it, batch size, drop_last, workers, prefetch factor, persistence, and
    the dataset's directory (a torchvision ImageFolder, or anything with
    root and samples). For a DistributedSampler the node's ranks come from
    the launcher (torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE, Slurm's,
    Open MPI's or MPICH's), or `ranks=`.

    root=, layout= and manifest= describe a dataset that is not
    ImageFolder-like (clairfs register --help); epochs= bounds the
    prediction; job= names the job beside others on the mount.

    The registration says "from_loader": this process is the job's loader
    process, so the mount credits its reads, and its workers', to this job
    from the first (two jobs of one seed read one order: only their
    processes tell their reads apart).

    Returns the registration written. Raises ClairfsError, with one line
    saying why, for what clairfs cannot follow (in_order=False, a custom
    sampler, a Subset) and for a registration the mount refuses."""
    mount, body = registration(*loaders, root=root, layout=layout, manifest=manifest,
                               ranks=ranks, epochs=epochs, job=job)
    body["from_loader"] = True
    write_control(mount, body)
    return body


def unregister(where, job=None):
    """Forgets the jobs registered with the clairfs mount holding `where`
    (only `job` where given): their prefetching stops."""
    if _is_loader(where):
        where = _dataset_root(where.dataset)
    mount, _ = find_mount(where)
    body = {"unregister": True}
    if job is not None:
        body["job"] = str(job)
    write_control(mount, body)


def explain(where):
    """The status of the clairfs mount holding `where` (a mount point, a
    path inside one, or a DataLoader over one), as a dict: mode, match
    rate, tiers, reads saved (keys in clairfs-control(5))."""
    if _is_loader(where):
        where = _dataset_root(where.dataset)
    mount, _ = find_mount(where)
    return status(mount)
