#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Python package (python/clairfs, issue 21): clairfs.register(loader)
must make clairfs predict that loader exactly, under real torch 1.13
(Debian's, with torchvision's ImageFolder, the package from the source
tree) and torch 2.x (the frameworks venv, the package installed there with
pip from the repository, an ImageFolder-like dataset since torchvision does
not import beside the CPU wheel).

For every loader configuration of loader_cases.py (a shuffled loader on
the global generator, with a model's draws before it and workers; an
explicit generator with persistent workers; replacement with num_samples;
a DistributedSampler resumed at epoch 3, and one under torchrun's
variables, registering the node's two ranks; no shuffling and no
batching; a training and a validation loader together; a registration
after an unregistered epoch), run through a real mount: every sample's
bytes are the backing file's, the mount's mode stays clairvoyant, and each
registered loader's run_opens and run_matched both equal the samples the
loop read, with no search for the seed (resyncs 0): every open was
predicted from what register() wrote. Then the refusals, each one line
naming the cause: in_order=False (2.x), a RandomSampler subclass, a custom
batch sampler, a Subset, an IterableDataset, an explicit generator that
has drawn, a sampler's generator without the loader's, a dataset outside
any clairfs mount, a dataset that is not ImageFolder-like, a root the mount
refuses (the mount's own reason), and ranks= without the process's rank.
Keras (2.x venv only): clairfs.keras.image_dataset_from_directory over a
tree of 1x1 PNGs, seeded, with a global seed and subset="both", with only
the global seed, and unshuffled, two epochs of plain loops: clairvoyant,
each loader's run_opens the images read and run_matched >= 99% of them
(tf.data's parallel reads may open a few out of turn), no seed search;
and five refusals (seed=None without a global seed, labels=None,
class_names, batch_size=None, a directory outside any mount).
Also: importing clairfs imports nothing beyond the standard library.

Exit 77 only without /dev/fuse. Without the venv the 2.x half is skipped
with a line saying so, except with CI=true, where it fails."""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

CASES = os.path.join(HERE, "loader_cases.py")
KERAS_CASES = os.path.join(HERE, "keras_cases.py")
KERAS_FILES = 36
PACKAGE = os.path.join(ml.SOURCE_ROOT, "python")
VENV = os.environ.get("CLAIRFS_VENV") or "/opt/clairfs-venv"

# What each refusal's message must say.
REFUSALS = {
    "refuse_in_order": "in_order=False",
    "refuse_custom_sampler": "MySampler",
    "refuse_custom_batch_sampler": "BatchSampler only",
    "refuse_subset": "Subset",
    "refuse_iterable": "IterableDataset",
    "refuse_advanced_generator": "draws since its manual_seed",
    "refuse_sampler_generator_only": "pass the same generator= to the DataLoader",
    "refuse_not_on_a_mount": "is not inside a clairfs mount",
    "refuse_not_an_image_folder": "not an ImageFolder-like dataset",
    "refuse_by_the_mount": "refused the registration: ",
    "refuse_rank_not_held": "does not hold this process's rank 1",
}


def make_dataset(backing):
    ml.random_dataset(os.path.join(backing, "train"), 90, seed=31, max_size=6000)
    ml.random_dataset(os.path.join(backing, "val"), 24, seed=32, max_size=6000)
    # Keras decodes what it reads: 1x1 PNGs, in 3 classes.
    sys.path.insert(0, os.path.join(HERE, "..", "prefetch"))
    from test_keras_prefetch import png
    for i in range(KERAS_FILES):
        d = os.path.join(backing, "kimg", f"c{i % 3}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{i:03d}.png"), "wb") as f:
            f.write(png(i, bytes(i * 37 % 900)))


KERAS_REFUSALS = {
    "refuse_unseeded": "seed=None and no global seed",
    "refuse_labels": "labels=None",
    "refuse_class_names": "class_names=",
    "refuse_unbatched": "batch_size=None",
    "refuse_not_on_a_mount": "is not inside a clairfs mount",
}


def run_keras_cases(python, mp, backing, pythonpath):
    r = subprocess.run([python, KERAS_CASES, mp, os.path.join(backing, "kimg")],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1"))
    ml.check(r.returncode == 0, f"keras_cases.py exit {r.returncode}: {r.stderr[-3000:]}")
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    head = lines.pop(0)
    ml.log(f"keras {head['keras']}, clairfs from {head['clairfs']}")
    cases = [c for c in lines if "case" in c]
    refusals = {c["refusal"]: c for c in lines if "refusal" in c}
    ml.check(len(cases) == 4, f"keras: {len(cases)} cases ran, expected 4")
    for c in cases:
        name = c["case"]
        ml.check("error" not in c, f"keras {name}: {c.get('error')}\n{c.get('trace', '')}")
        ml.check(c["mode"] == "clairvoyant", f"keras {name}: mode {c['mode']}: {c['loaders']}")
        per_loader = [sum(epoch[i] for epoch in c["images"]) for i in range(len(c["images"][0]))]
        ml.check(len(c["loaders"]) == len(per_loader),
                 f"keras {name}: {len(c['loaders'])} loaders registered, {len(per_loader)} read")
        for got, images in zip(c["loaders"], per_loader):
            # tf.data's parallel reads may open a few files out of turn: a
            # rate, as the Keras prefetch test asks, and no seed search.
            ml.check(got["run_opens"] == images and got["run_matched"] >= 0.99 * images
                     and got["resyncs"] == 0,
                     f"keras {name}: loader {got['root']}: {got['run_matched']} of "
                     f"{got['run_opens']} opens predicted ({got['resyncs']} searches), "
                     f"{images} images read")
        ml.log(f"  keras {name}: " + ", ".join(f"{g['run_matched']}/{g['run_opens']}"
                                                for g in c["loaders"]))
    for name, words in KERAS_REFUSALS.items():
        c = refusals.get(name, {})
        msg = c.get("message", "")
        ml.check("error" not in c and words in msg and "\n" not in msg,
                 f"keras {name}: {c.get('error') or msg!r}")
        ml.log(f"  keras {name}: {msg}")


def run_cases(python, mp, backing, pythonpath, what):
    r = subprocess.run([python, CASES, mp, backing], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, PYTHONPATH=pythonpath,
                                             PYTHONDONTWRITEBYTECODE="1"))
    ml.check(r.returncode == 0, f"{what}: loader_cases.py exit {r.returncode}: {r.stderr[-3000:]}")
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    head = lines.pop(0)
    ml.log(f"{what}: torch {head['torch']}, clairfs from {head['clairfs']}")
    ml.check(head["clairfs"].startswith(pythonpath),
             f"{what}: clairfs imported from {head['clairfs']}, not {pythonpath}")
    cases = [c for c in lines if "case" in c]
    refusals = {c["refusal"]: c for c in lines if "refusal" in c}
    for c in cases:
        name = c["case"]
        ml.check("error" not in c, f"{what} {name}: {c.get('error')}\n{c.get('trace', '')}")
        ml.check(c["wrong"] == 0, f"{what} {name}: {c['wrong']} samples differ from the backing")
        ml.check(c["mode"] == "clairvoyant", f"{what} {name}: mode {c['mode']}: {c['loaders']}")
        ml.check(len(c["loaders"]) == len(c["opened"]),
                 f"{what} {name}: {len(c['loaders'])} loaders registered, {len(c['opened'])} run")
        for got, opened in zip(c["loaders"], c["opened"]):
            ml.check(opened > 0 and got["run_opens"] == opened and got["run_matched"] == opened,
                     f"{what} {name}: loader {got['root']}: {got['run_matched']} of "
                     f"{got['run_opens']} opens predicted, the loop read {opened}")
            # A wrong pre_draws or seed could still match after a search for
            # the seed: predicted means predicted without one.
            ml.check(got["resyncs"] == 0, f"{what} {name}: loader {got['root']} needed "
                                          f"{got['resyncs']} searches for its seed")
        ml.log(f"  {name}: " + ", ".join(f"{g['root']} {g['run_matched']}/{g['run_opens']}"
                                          for g in c["loaders"]))
    ml.check(len(cases) == 9, f"{what}: {len(cases)} cases ran, expected 9")
    for name, words in REFUSALS.items():
        c = refusals.get(name)
        ml.check(c is not None, f"{what}: refusal {name} did not run")
        if "skipped" in c:
            ml.log(f"  {name}: {c['skipped']}")
            continue
        msg = c.get("message", "")
        ml.check("error" not in c, f"{what} {name}: {c.get('error')}")
        ml.check(words in msg and "\n" not in msg, f"{what} {name}: said {msg!r}")
        ml.log(f"  {name}: {msg}")


def pip_install(python, target, tmp):
    """pip install ./python, as a user would, into `target`: offline with
    the venv's own setuptools where it has one, else from the index. From a
    copy: a build without isolation writes build/ and egg-info beside the
    sources."""
    source = os.path.join(tmp, "package")
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    base = [python, "-m", "pip", "install", "--no-deps", "--quiet", "--target", target]
    r = subprocess.run(base + ["--no-build-isolation", "--no-index", source],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        r = subprocess.run(base + [source], capture_output=True, text=True, timeout=600)
    ml.check(r.returncode == 0, f"pip install {PACKAGE}: {r.stderr[-2000:]}")


def stdlib_only(pythonpath):
    r = subprocess.run([sys.executable, "-c", "import sys, clairfs; "
                        "print(sorted(m for m in ('torch', 'numpy', 'tensorflow') "
                        "if m in sys.modules))"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=pythonpath))
    ml.check(r.returncode == 0 and r.stdout.strip() == "[]",
             f"import clairfs: exit {r.returncode}, imported {r.stdout.strip()} {r.stderr}")


def node_ranks_from_launchers():
    """The node's ranks from each launcher's variables (no torch needed)."""
    sys.path.insert(0, PACKAGE)
    from clairfs._errors import ClairfsError
    from clairfs._ranks import node_ranks
    cases = [
        (5, 8, {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}, [4, 5, 6, 7]),
        (5, 8, {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, [4, 5]),
        (2, 4, {"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}, [2, 3]),
        (7, 9, {"SLURM_LOCALID": "0", "SLURM_NODEID": "2",
                "SLURM_STEP_TASKS_PER_NODE": "4,3,2"}, [7, 8]),
        (4, 6, {"SLURM_LOCALID": "1", "SLURM_NODEID": "1",
                "SLURM_STEP_TASKS_PER_NODE": "3(x2)"}, [3, 4, 5]),
        (3, 4, {}, [3]),
        (0, 1, {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8"}, [0]),
    ]
    for rank, world, env, want in cases:
        got, how = node_ranks(rank, world, env)
        ml.check(got == want, f"node_ranks({rank}, {world}, {env}) = {got} ({how}), not {want}")
    for rank, world, env, words in [
            (1, 4, {"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK=2 of 2"),
            (3, 4, {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}, "does not fit rank 3 of 4"),
            (1, 2, {"LOCAL_RANK": "x", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK='x'"),
            (1, 2, {"SLURM_LOCALID": "1", "SLURM_NODEID": "0", "SLURM_DISTRIBUTION": "cyclic",
                    "SLURM_STEP_TASKS_PER_NODE": "2"}, "SLURM_DISTRIBUTION=cyclic")]:
        try:
            got = node_ranks(rank, world, env)
        except ClairfsError as e:
            ml.check(words in str(e), f"node_ranks({env}): said {e}")
            continue
        ml.check(False, f"node_ranks({rank}, {world}, {env}) gave {got}, expected a refusal")
    ml.log("node_ranks: torchrun, Open MPI, Hydra and Slurm variables, and four refusals")


def test():
    node_ranks_from_launchers()
    with ml.temp_dir() as tmp:
        backing, mp, site = ml.make_dirs(tmp, "backing", "mnt", "site")
        make_dataset(backing)
        stdlib_only(PACKAGE)
        venv_python = os.path.join(VENV, "bin", "python")
        have_venv = os.access(venv_python, os.X_OK)
        if have_venv:
            pip_install(venv_python, site, tmp)
        with ml.mounted(backing, mp, "--mem", "64M", "--no-detect"):
            run_cases("/usr/bin/python3", mp, backing, PACKAGE, "torch 1.13")
            if have_venv:
                run_cases(venv_python, mp, backing, site, "torch 2.x")
                run_keras_cases(venv_python, mp, backing, site)
            elif os.environ.get("CI") == "true":
                ml.check(False, f"CI: no {venv_python}; bash scripts/install-deps.sh test builds it")
            else:
                ml.log(f"SKIP torch 2.x: no {venv_python} (bash scripts/install-deps.sh test)")


if __name__ == "__main__":
    ml.main(test)
