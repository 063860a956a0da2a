# SPDX-License-Identifier: MIT
"""What the PyTorch mount tests share: a small random dataset, the SHA-1 of
each sample as torchvision numbers them, the control and status files, and
running torch_job.py. Importing it exits 77 when /usr/bin/python3 has no
torchvision."""
import hashlib
import json
import os
import random
import subprocess
import sys

import mountlib as ml

try:
    import torchvision
except ImportError as e:
    print(f"SKIP: /usr/bin/python3 cannot import torchvision ({e})")
    sys.exit(77)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_job.py")
CLASSES, PER_CLASS = 8, 60  # 480 files: a wrong order cannot match by luck
SEED = 7


def make_dataset(root):
    rng = random.Random(11)
    total = 0
    for c in range(CLASSES):
        d = os.path.join(root, f"class{c:02d}")
        os.makedirs(d)
        for i in range(PER_CLASS):
            size = rng.randint(1, 160_000)
            with open(os.path.join(d, f"img{i:04d}.jpg"), "wb") as f:
                f.write(rng.randbytes(size))
            total += size
    return total


def digests(root):
    """Dataset index -> SHA-1 of the backing file, numbered as torchvision does."""
    samples = torchvision.datasets.ImageFolder(root, loader=lambda p: p).samples
    out = []
    for path, _ in samples:
        with open(path, "rb") as f:
            out.append(hashlib.sha1(f.read()).hexdigest())
    return out


# The control directory's two documents, shared with every suite.
status = ml.status
register = ml.register


def start_job(mp, **cfg):
    cfg = {"root": mp, "seed": SEED, "batch_size": 4, "num_workers": 2, "epochs": 3, **cfg}
    return subprocess.Popen(["/usr/bin/python3", JOB, json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, what):
    out, err = proc.communicate(timeout=600)
    ml.check(proc.returncode == 0, f"{what}: the job failed ({proc.returncode}): {err[-2000:]}")
    return [json.loads(line) for line in out.splitlines()]


def check_bytes(epochs, expected, what, share=None):
    """Every sample the job got has the backing file's bytes; each epoch
    covers the whole dataset (or `share` samples of it)."""
    for e in epochs:
        got = e["samples"]
        ml.check(len(got) == (share or len(expected)),
                 f"{what} epoch {e['epoch']}: {len(got)} samples")
        bad = [i for i, h in got if expected[i] != h]
        ml.check(not bad, f"{what} epoch {e['epoch']}: wrong bytes for samples {bad[:5]}")


# A plain shuffle=True job with an explicit generator, as registered.
JOB_KEYS = dict(sampler="random", generator="explicit", seed=SEED, batch_size=4, num_workers=2)


def run_cases_on_dataset(*cases):
    """Makes one dataset in a temporary directory and runs each case(tmp,
    data, expected, size) on it, as ml.run_cases does (CLAIRFS_CASES picks
    them by their name after "case_")."""
    with ml.temp_dir() as tmp:
        data = os.path.join(tmp, "data")
        size = make_dataset(data)
        expected = digests(data)
        ml.log(f"dataset: {len(expected)} files, {size / 1e6:.1f} MB")
        ml.run_cases(*((c.__name__[5:], lambda c=c: c(tmp, data, expected, size)) for c in cases))
