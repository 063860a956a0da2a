# SPDX-License-Identifier: MIT
"""The ranks of a DistributedSampler's job that run on this node, from the
process's own rank and the launcher's count of processes on the node.

Every process of a node calls register() with its own sampler (rank r) and
writes the same registration, the node's ranks, which the mount takes
once; so each needs its local rank and how many ranks share the node, as
launchers set them. Ranks are taken to be placed in blocks (torchrun
always; Slurm and mpiexec by default)."""
import os

from ._errors import ClairfsError

# (local rank, ranks on this node), in the order they are looked for.
LAUNCHERS = [
    ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun"),
    ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI"),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS", "MPICH's Hydra"),
    ("SLURM_LOCALID", None, "Slurm"),
]


def _int(env, name):
    value = env.get(name)
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise ClairfsError(f"{name}={value!r} is not a rank count")
    return n


def _slurm_tasks_here(env):
    """This node's task count from SLURM_STEP_TASKS_PER_NODE ("4(x2),3")."""
    listing = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
    node = _int(env, "SLURM_NODEID")
    if listing is None or node is None:
        return None
    for item in listing.split(","):
        count, _, repeat = item.partition("(x")
        try:
            count, repeat = int(count), int(repeat.rstrip(")") or 1)
        except ValueError:
            return None
        if node < repeat:
            return count
        node -= repeat
    return None


def node_ranks(rank, world_size, env=None):
    """(ranks, how it knows) for the process of `rank` in `world_size`."""
    env = os.environ if env is None else env
    if world_size <= 1:
        return [0], "a single rank"
    for local_name, size_name, launcher in LAUNCHERS:
        local = _int(env, local_name)
        if local is None:
            continue
        size = _int(env, size_name) if size_name else _slurm_tasks_here(env)
        if size is None:
            continue
        if env.get("SLURM_DISTRIBUTION", "block").split(":")[0] not in ("block", "") and \
                launcher == "Slurm":
            raise ClairfsError(f"SLURM_DISTRIBUTION={env['SLURM_DISTRIBUTION']} does not place "
                               "ranks in blocks: give ranks= yourself")
        first = rank - local
        if local >= size or first < 0 or first + size > world_size:
            raise ClairfsError(f"{launcher}'s {local_name}={local} of {size} on this node does not "
                               f"fit rank {rank} of {world_size}: give ranks= yourself")
        return list(range(first, first + size)), f"{launcher}: {size} ranks on this node"
    return [rank], "no launcher's variables: this process's rank only"
