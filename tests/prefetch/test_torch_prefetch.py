#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Real, unmodified PyTorch jobs (Debian's torch and torchvision: ImageFolder
+ DataLoader with 2 workers) reading through a real clairfs mount after
registering through .clairfs/control:

- DistributedSampler, world 2, both ranks on this node, 3 epochs;
- shuffle=True with an explicit generator, 3 epochs;
- each with --mem larger than the dataset: every byte equals the backing
  file's, status says clairvoyant with match_rate >= 0.99, and no file is
  read from the backing store more than once over the 3 epochs;
- --mem at 30% of the dataset: still exact, still clairvoyant, and each
  later epoch re-reads at most the 70% that cannot fit, plus 5%;
- a wrong seed: mode fallback with a reason, the job still gets every byte
  right;
- a job that forgets set_epoch: its repeating order is followed (clairvoyant,
  every file read once) and status keeps a warning;
- no registration (--no-detect): first-touch caching, each file read once;
- --kernel-opens: the kernel opens files without asking, the first READ of
  each stands for its open, and the tracker still follows all 3 epochs
  (files read are dropped from the page cache, or a later epoch would be
  served from it unseen).

Needs root, /dev/fuse and /usr/bin/python3 with torch (exit 77 otherwise)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

from torchlib import (SEED, check_bytes, digests, finish, make_dataset,  # noqa: E402
                      register, start_job, status)


def check_clairvoyant(st, what, files):
    ml.check(st["mode"] == "clairvoyant", f"{what}: mode {st['mode']} ({st.get('reason')})")
    ml.check(st["match_rate"] >= 0.99, f"{what}: match_rate {st['match_rate']}")
    ml.check(st["backing"]["files"] <= files,
             f"{what}: {st['backing']['files']} backing file reads for {files} files")
    ml.check(st["prefetch"]["prefetched"] > 0, f"{what}: nothing was prefetched")


def shuffle_job(mp, what, expected):
    """Registers and runs the 3-epoch shuffle=True job with an explicit
    generator, checks every byte it read, and returns the mount's status."""
    register(mp, sampler="random", generator="explicit", seed=SEED, batch_size=4,
             num_workers=2, epochs=3)
    check_bytes(finish(start_job(mp), what), expected, what)
    return status(mp)


def case_distributed_two_ranks(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-d")
    os.makedirs(mp)
    with ml.mounted(backing, mp, "--mem", "256M"):
        register(mp, sampler="distributed", world_size=2, ranks=[0, 1], seed=SEED,
                 batch_size=4, num_workers=2, epochs=3)
        procs = [start_job(mp, sampler="distributed", world_size=2, rank=r) for r in (0, 1)]
        runs = [finish(p, f"rank {r}") for r, p in enumerate(procs)]
        for r, epochs in enumerate(runs):
            check_bytes(epochs, expected, f"rank {r}", share=len(expected) // 2)
        for e in range(3):  # the two ranks' shares make up the dataset
            seen = {i for run in runs for i, _ in run[e]["samples"]}
            ml.check(len(seen) == len(expected), f"epoch {e}: ranks cover {len(seen)} samples")
        st = status(mp)
        check_clairvoyant(st, "distributed", len(expected))
        ml.check([r["epoch"] for r in st["ranks"]] == [2, 2], f"rank epochs {st['ranks']}")
        ml.log(f"distributed: backing {st['backing']}, ram hits {st['ram']['hits']}, "
               f"stall {st['stall_seconds']:.3f} s")


def case_shuffle_explicit_generator(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-r")
    os.makedirs(mp)
    # --push-ahead: the next files reach the page cache before their opens,
    # and the bytes the job reads there must still be the backing files'.
    with ml.mounted(backing, mp, "--mem", "256M", "--push-ahead"):
        st = shuffle_job(mp, "shuffle", expected)
        check_clairvoyant(st, "shuffle", len(expected))
        pushed = st["prefetch"]["pushed"]
        ml.check(pushed > len(expected), f"shuffle: only {pushed} files pushed over 3 epochs")
        ml.check(st["prefetch"]["push_errors"] == 0, f"shuffle: push errors {st['prefetch']}")
        ml.log(f"shuffle: backing {st['backing']}, ram {st['ram']}")


def case_ram_for_30_percent(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-30")
    os.makedirs(mp)
    with ml.mounted(backing, mp, "--mem", str(size * 3 // 10)):
        st = shuffle_job(mp, "30%", expected)
        ml.check(st["mode"] == "clairvoyant", f"30%: mode {st['mode']} ({st.get('reason')})")
        ml.check(st["ram"]["bytes"] <= st["ram"]["capacity"], f"30%: over budget {st['ram']}")
        reads = st["backing"]["files"]
        # Each later epoch must re-read what does not fit: at best the share
        # of the bytes beyond the budget. 5% of slack for file sizes and for
        # the window's edges; prefetching that evicts too early reads ~20%
        # more than this.
        held = st["ram"]["capacity"] / size
        bound = len(expected) * (1 + 2 * (1 - held + 0.05))
        ml.check(reads <= bound, f"30%: {reads} backing reads over 3 epochs, bound {bound:.0f}")
        ml.log(f"30%: {reads} backing reads for {3 * len(expected)} opens, ram {st['ram']}")


def case_wrong_seed(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-w")
    os.makedirs(mp)
    with ml.mounted(backing, mp, "--mem", "256M"):
        register(mp, sampler="random", generator="explicit", seed=SEED + 1, batch_size=4,
                 num_workers=2, epochs=3)
        check_bytes(finish(start_job(mp, epochs=2), "wrong seed"), expected, "wrong seed")
        st = status(mp)
        ml.check(st["mode"] == "fallback", f"wrong seed: mode {st['mode']}")
        ml.check(st["reason"] and "seed" in st["reason"], f"wrong seed: reason {st['reason']}")
        ml.log(f"wrong seed: {st['reason']}")


def case_forgotten_set_epoch(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-f")
    os.makedirs(mp)
    with ml.mounted(backing, mp, "--mem", "256M"):
        register(mp, sampler="distributed", world_size=1, ranks=[0], seed=SEED, batch_size=4,
                 num_workers=2, epochs=3)
        job = start_job(mp, sampler="distributed", world_size=1, rank=0, epochs=3,
                        forget_set_epoch=True)
        check_bytes(finish(job, "no set_epoch"), expected, "no set_epoch")
        # The repeating order is followed (it is perfectly predictable); the
        # job's bug stays visible as a warning.
        st = status(mp)
        check_clairvoyant(st, "no set_epoch", len(expected))
        ml.check(st["warning"] and "set_epoch" in st["warning"], f"warning {st['warning']}")
        seeds = [e.get("seed_epoch") for e in st["jobs"][0]["loaders"][0]["epochs"]]
        ml.check(seeds == [0, 0, 0], f"no set_epoch: seed + epoch per epoch {seeds}")
        ml.log(f"no set_epoch: {st['warning']}")


def case_unregistered_first_touch(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-u")
    os.makedirs(mp)
    # --no-detect: this job's seed is one detection would find (test_detect.py).
    with ml.mounted(backing, mp, "--mem", "256M", "--no-detect"):
        check_bytes(finish(start_job(mp, epochs=2), "unregistered"), expected, "unregistered")
        st = status(mp)
        ml.check(st["mode"] == "unregistered", f"unregistered: mode {st['mode']}")
        ml.check(st["backing"]["files"] == len(expected),
                 f"unregistered: {st['backing']['files']} backing reads for {len(expected)} files")


def case_kernel_opens(tmp, expected, size):
    backing, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt-k")
    os.makedirs(mp)
    with ml.mounted(backing, mp, "--mem", "256M", "--kernel-opens"):
        st = shuffle_job(mp, "kernel opens", expected)
        check_clairvoyant(st, "kernel opens", len(expected))
        # Without the drops the page cache, which no memory limit squeezes
        # here, would serve epochs 1 and 2 and the ranks would stay in epoch 0.
        ml.check([r["epoch"] for r in st["ranks"]] == [2], f"kernel opens: ranks {st['ranks']}")
        ml.check(st["prefetch"]["page_drops"] >= 2 * len(expected),
                 f"kernel opens: page drops {st['prefetch']}")
        ml.log(f"kernel opens: backing {st['backing']}, prefetch {st['prefetch']}")


@ml.main
def test():
    ml.skip_unless_fuse()
    with ml.temp_dir() as tmp:
        data = os.path.join(tmp, "data")
        size = make_dataset(data)
        expected = digests(data)
        ml.log(f"dataset: {len(expected)} files, {size / 1e6:.1f} MB")
        ml.run_cases(*((c.__name__[5:], lambda c=c: c(tmp, expected, size)) for c in (
            case_distributed_two_ranks, case_shuffle_explicit_generator, case_ram_for_30_percent,
            case_wrong_seed, case_forgotten_set_epoch, case_unregistered_first_touch,
            case_kernel_opens)))
