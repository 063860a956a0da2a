#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes a deterministic ImageNet-shaped folder dataset of valid JPEGs.

    gen_dataset.py OUT [--files 10000] [--classes 100] [--mean-kb 110]
                       [--median-kb 93] [--seed 0] [--pool 48]

OUT/class_NNN/img_NNNNNN.jpg, file sizes lognormal with the given mean and
median (defaults match the reference ImageNet-like set: mean ~110 KB, median
~93 KB). Fast: a pool of --pool JPEGs of ImageNet-like pixel sizes is encoded
once, and each file is one pool image followed by seeded random bytes up to
its target size. JPEG decoders stop at the EOI marker, so the padding is
ignored; the script decodes a sample of the written files with PIL to check.
Same arguments, same bytes.
"""
import argparse
import io
import json
import math
import os
import random
import sys


def make_pool(rng, n):
    from PIL import Image, ImageFilter
    pool = []
    for i in range(n):
        # Pixel sizes like most ImageNet photos (500x375, 500x333); a few
        # small ones so small targets have an image that fits.
        if i % 8 == 0:
            w, h = rng.randint(120, 200), rng.randint(90, 160)
        else:
            w, h = rng.randint(400, 500), rng.randint(300, 400)
        # Smooth colour field plus noise: compresses like a photo (neither a
        # flat colour nor white noise).
        small = Image.frombytes("RGB", (8, 6), rng.randbytes(8 * 6 * 3))
        img = small.resize((w, h), Image.BICUBIC)
        noise = Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3))
        noise = noise.filter(ImageFilter.GaussianBlur(1.2))
        img = Image.blend(img, noise, 0.25 + 0.1 * (i % 3))
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=rng.choice([60, 75, 85]))
        pool.append(buf.getvalue())
    pool.sort(key=len)
    return pool


def sizes(rng, n, mean, median):
    # lognormal: median = e^mu, mean = e^(mu + sigma^2/2)
    sigma = math.sqrt(max(0.0, 2 * math.log(mean / median)))
    mu = math.log(median)
    return [int(rng.lognormvariate(mu, sigma)) for _ in range(n)]


def generate(out, files=10000, classes=100, mean_kb=110, median_kb=93,
             seed=0, pool_n=48, check=50):
    rng = random.Random(seed)
    pool = make_pool(rng, pool_n)
    targets = sizes(rng, files, mean_kb * 1000, median_kb * 1000)
    pad = rng.randbytes(max(targets) + 1)
    total = 0
    for c in range(classes):
        os.makedirs(os.path.join(out, f"class_{c:03d}"), exist_ok=True)
    written = []
    for i, target in enumerate(targets):
        fits = [p for p in pool if len(p) <= target] or pool[:1]
        base = fits[rng.randrange(len(fits))]  # any image that fits
        padlen = max(0, target - len(base))
        off = rng.randrange(len(pad) - padlen + 1)
        path = os.path.join(out, f"class_{i % classes:03d}", f"img_{i:06d}.jpg")
        with open(path, "wb") as f:
            f.write(base)
            f.write(pad[off:off + padlen])
        total += len(base) + padlen
        written.append(path)
    from PIL import Image
    for path in random.Random(seed + 1).sample(written, min(check, len(written))):
        with Image.open(path) as im:
            im.convert("RGB").load()
    s = sorted(os.path.getsize(p) for p in written)
    return {"files": files, "classes": classes, "bytes": total,
            "mean": total / files, "median": s[len(s) // 2],
            "p99": s[int(len(s) * 0.99)], "seed": seed,
            "decoded_with_pil": check}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--mean-kb", type=float, default=110)
    ap.add_argument("--median-kb", type=float, default=93)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool", type=int, default=48)
    a = ap.parse_args()
    info = generate(a.out, a.files, a.classes, a.mean_kb, a.median_kb,
                    a.seed, a.pool)
    json.dump(info, sys.stdout)
    print()


if __name__ == "__main__":
    main()
