#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The benchmark dataset generator: every ratio in bench/RESULTS.md rests on
it, so it must write what it says. Same arguments give the same bytes;
every file is a JPEG that decodes; sizes follow the requested lognormal;
padding stays a few percent; and the two styles differ in what the
benchmarks rely on, the pixels (decode work) per byte. Also what the Keras
job (bench/keras_job.py) relies on: a layout keras's
image_dataset_from_directory lists, and the job's and scenarios.py's
arguments for it (no TensorFlow needed).
"""
import argparse
import contextlib
import hashlib
import io
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gen_dataset  # noqa: E402
import keras_job  # noqa: E402
import scenarios  # noqa: E402
import mountlib as ml  # noqa: E402
from PIL import Image  # noqa: E402

# A pool of 32 base images, not the benchmarks' 96: the pool is where the
# time goes (a "reference" image is ~1.3 megapixels, encoded three times to
# size it; 96 of them took 26 s per dataset, four datasets here), and at 32
# the sizes, padding (5.2% against 5.2%) and density checked below are the
# same; a bigger pool only steps the sizes more finely.
FILES, CLASSES, POOL = 120, 4, 32


def tree_digest(root):
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, root).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def bytes_per_pixel(root):
    nbytes = pixels = 0
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with Image.open(p) as im:
                im.load()  # decodes the whole image: a truncated one raises
                pixels += im.size[0] * im.size[1]
            nbytes += os.path.getsize(p)
    return nbytes / pixels


def case_style(tmp, style, density):
    a, b = os.path.join(tmp, style + "-a"), os.path.join(tmp, style + "-b")
    info = gen_dataset.generate(a, FILES, CLASSES, 110, 93, 0, POOL, style=style)
    gen_dataset.generate(b, FILES, CLASSES, 110, 93, 0, POOL, style=style)
    ml.check(tree_digest(a) == tree_digest(b), "same arguments, other bytes")
    n = sum(len(f) for _, _, f in os.walk(a))
    ml.check(n == FILES and len(os.listdir(a)) == CLASSES,
             f"{n} files in {len(os.listdir(a))} classes, asked {FILES} in {CLASSES}")
    ml.check(abs(info["mean"] / 110e3 - 1) < 0.25,
             f"mean size {info['mean'] / 1e3:.0f} KB, asked 110 KB")
    ml.check(info["padding_fraction"] < 0.1,
             f"padding {info['padding_fraction']:.1%} of the bytes")
    density[style] = bytes_per_pixel(a)
    ml.log(f"{style}: {density[style]:.3f} bytes per pixel, mean {info['mean'] / 1e3:.0f} KB, "
           f"padding {info['padding_fraction']:.1%}")


def case_densities(density):
    # ~0.6 against ~0.095 on the benchmarks' 10,000 files.
    ml.check(density.get("reference", 1) * 3 < density.get("imagenet", 0),
             f"reference style not under a third of imagenet's bytes per pixel: {density}")


def case_other_seed(tmp):
    c = os.path.join(tmp, "other-seed")
    gen_dataset.generate(c, FILES, CLASSES, 110, 93, 1, POOL)
    ml.check(tree_digest(c) != tree_digest(os.path.join(tmp, "imagenet-a")),
             "another seed wrote the same bytes")


def case_keras(tmp):
    # keras's index_directory: class folders not starting with ".", files
    # kept if name.lower() ends with .jpg (among others).
    root = os.path.join(tmp, "reference-a")
    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))
    listed = [f for c in classes for f in os.listdir(os.path.join(root, c))
              if f.lower().endswith((".bmp", ".gif", ".jpeg", ".jpg", ".png"))]
    ml.check(len(classes) == CLASSES and len(listed) == FILES,
             f"keras would list {len(listed)} files in {len(classes)} classes")
    a = keras_job.parse_args([root])
    ml.check((a.epochs, a.batch, a.seed, a.image_size, a.validation_split) == (3, 64, 0, [64, 64], 0.0),
             f"keras_job defaults {vars(a)}")
    a = keras_job.parse_args([root, "--image-size", "32", "48", "--validation-split", "0.2",
                              "--wait-for", "/x"])
    ml.check(a.image_size == [32, 48] and a.validation_split == 0.2 and a.wait_for == "/x",
             f"keras_job arguments {vars(a)}")
    for bad in (["--validation-split", "1"], ["--image-size", "1", "2", "3"],
                ["--validation-split", "0.1", "--val", "/v"]):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                keras_job.parse_args([root] + bad)
            ml.check(False, f"keras_job accepted {bad}")
        except SystemExit:
            pass
    # What scenarios.py runs and registers for a keras config.
    cfg = {"job": {"framework": "keras", "epochs": 3, "batch": 64, "seed": 7,
                   "image_size": [64, 64]}, "dataset": {}}
    b = scenarios.Bench(argparse.Namespace(build="build"), cfg)
    b.st = {"loop": "/dev/loop9", "cgroups": {"cpuacct": "/cg"}}
    cmd = b.job_cmd("/mnt", 7, daemon_pid=5, go="/go")
    ml.check(cmd[1].endswith("keras_job.py") and cmd[2] == "/mnt", f"keras command {cmd}")
    ml.check(keras_job.parse_args(cmd[2:]).seed == 7, f"keras_job refuses {cmd[2:]}")
    reg = b.registration()
    ml.check(reg == {"framework": "tensorflow", "pipeline": "image_dataset_from_directory",
                     "root": ".", "seed": 7, "batch_size": 64, "epochs": 3},
             f"keras registration {reg}")


@ml.run_test
def test():
    with tempfile.TemporaryDirectory(prefix="clairfs-gen.") as tmp:
        density = {}
        ml.run_cases(("imagenet", lambda: case_style(tmp, "imagenet", density)),
                     ("reference", lambda: case_style(tmp, "reference", density)),
                     ("densities", lambda: case_densities(density)),
                     ("other_seed", lambda: case_other_seed(tmp)),
                     ("keras", lambda: case_keras(tmp)))
