#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The benchmark dataset generator: every ratio in bench/RESULTS.md rests on
it, so it must write what it says. Same arguments give the same bytes;
every file is a JPEG that decodes; sizes follow the requested lognormal;
padding stays a few percent; and the two styles differ in what the
benchmarks rely on, the pixels (decode work) per byte.
"""
import hashlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gen_dataset  # noqa: E402
import mountlib as ml  # noqa: E402
from PIL import Image  # noqa: E402

FILES, CLASSES, POOL = 120, 4, 96


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


@ml.run_test
def test():
    with tempfile.TemporaryDirectory(prefix="clairfs-gen.") as tmp:
        density = {}
        ml.run_cases(("imagenet", lambda: case_style(tmp, "imagenet", density)),
                     ("reference", lambda: case_style(tmp, "reference", density)),
                     ("densities", lambda: case_densities(density)),
                     ("other_seed", lambda: case_other_seed(tmp)))
