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

sys.path.insert(0, os.path.join(os.environ.get("CLAIRFS_SOURCE_ROOT", "."), "bench"))
import gen_dataset  # noqa: E402
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


def main():
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="clairfs-gen.") as tmp:
        density = {}
        for style in ("imagenet", "reference"):
            a, b = os.path.join(tmp, style + "-a"), os.path.join(tmp, style + "-b")
            info = gen_dataset.generate(a, FILES, CLASSES, 110, 93, 0, POOL, style=style)
            gen_dataset.generate(b, FILES, CLASSES, 110, 93, 0, POOL, style=style)
            check(tree_digest(a) == tree_digest(b), f"{style}: same arguments, same bytes")
            n = sum(len(f) for _, _, f in os.walk(a))
            check(n == FILES and len(os.listdir(a)) == CLASSES,
                  f"{style}: {n} files in {len(os.listdir(a))} classes")
            check(abs(info["mean"] / 110e3 - 1) < 0.25,
                  f"{style}: mean size {info['mean'] / 1e3:.0f} KB, asked 110 KB")
            check(info["padding_fraction"] < 0.1,
                  f"{style}: padding {info['padding_fraction']:.1%} of the bytes")
            density[style] = bytes_per_pixel(a)
            print(f"     {style}: {density[style]:.3f} bytes per pixel")
        # ~0.6 against ~0.095 on the benchmarks' 10,000 files.
        check(density["reference"] * 3 < density["imagenet"],
              "reference style has under a third of imagenet's bytes per pixel")
        c = os.path.join(tmp, "other-seed")
        gen_dataset.generate(c, FILES, CLASSES, 110, 93, 1, POOL)
        check(tree_digest(c) != tree_digest(os.path.join(tmp, "imagenet-a")),
              "another seed, other bytes")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
