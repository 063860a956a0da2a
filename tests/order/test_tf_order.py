#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs order --framework tensorflow` reproduces the order real
TensorFlow 2.21 / Keras 3.15.1 pipelines open their files in, exactly.

The driver writes small image trees (every image a 1x1 PNG whose pixel
encodes its number, written with zlib; ordering traps: nested folders, a
hidden class, a hidden subfolder, upper-case and non-image extensions, an
empty class, links to a file and to a folder), runs every combination
through real TensorFlow in one process (tf_orders.py, under
CLAIRFS_FRAMEWORKS_PYTHON), computes each with `clairfs order` on its own
(as flags, or as a --config JSON file with null for None), and compares
them epoch by epoch, 3 epochs each:

- keras.utils.image_dataset_from_directory: seeds with and without a global
  seed (keras.utils.set_random_seed), seed=None, batch sizes (so shuffle
  buffers 8 to 2000) not dividing the file count, validation_split with
  subset training and validation, shuffle=False;
- tf.data.Dataset.list_files: seeds with tf.random.set_seed or
  keras.utils.set_random_seed or none, seed=None, shuffle=False;
- list_files(shuffle=False).shuffle(buffer, seed).map(read): buffers from
  1 to past the file count;
- all of them in a plain `for` loop per epoch, and some through Keras's
  Model.fit. For fit the test finds which iterator of the dataset each
  epoch ran (the clairfs order of iterator k for k = 0..8, one must match
  and only one), asserts it is 2e (fit makes one iterator at each epoch's
  end beside the one it trains on), and that `--iterator-step 2` gives fit's
  order directly.

Also: combinations Keras or TF refuse, or that have no meaning for
TensorFlow, exit 2 with one "clairfs: " line naming the key.

Exit 0 pass, 1 fail, 77 (skip) only when the python named by
CLAIRFS_FRAMEWORKS_PYTHON (default /opt/clairfs-venv/bin/python) cannot
import tensorflow and keras. CLAIRFS names the binary (default
build/src/clairfs). By hand: `CLAIRFS_FRAMEWORKS_PYTHON=/opt/tfvenv/bin/python
/usr/bin/python3 tests/order/test_tf_order.py [--keep DIR]`.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
EPOCHS = 3
FIT_PROBE_ITERATORS = 9  # iterators 0..8 tried for each fit epoch


def log(msg=""):
    print(msg, flush=True)


def png(i):
    """A 1x1 8-bit RGB PNG whose pixel is (i & 255, i >> 8 & 255, i >> 16)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    raw = b"\x00" + bytes([i & 255, (i >> 8) & 255, (i >> 16) & 255])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# --------------------------------------------------------------------------
# Trees


class Tree:
    def __init__(self, root):
        self.root = root
        self.ids = {}  # relative path -> number its pixel holds
        self.count = 0
        os.makedirs(root)

    def image(self, rel):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png(self.count))
        self.ids[rel] = self.count
        self.count += 1

    def other(self, rel, data=b"not an image"):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def link(self, rel, target):
        """A link at rel to target (relative to the tree); an image link
        shows its target's number."""
        path = os.path.join(self.root, rel)
        os.symlink(os.path.relpath(os.path.join(self.root, target), os.path.dirname(path)), path)
        if target in self.ids:
            self.ids[rel] = self.ids[target]

    def finish(self):
        with open(os.path.join(self.root, "ids.json"), "w") as f:
            json.dump(self.ids, f)
        return self


def mixed_tree(root):
    """23 images with Keras's ordering traps."""
    t = Tree(root)
    for i in range(5):
        t.image(f"a/a{i}.png")
    t.image("a/sub/deep.png")
    t.image("a/sub/z/deeper.jpg")   # PNG bytes: decode_image sniffs the content
    t.image("a/sub z/space.png")    # "a/sub z" sorts before "a/sub/..." by path
    t.image("a/.hid/h.png")          # a hidden folder inside a class is walked
    t.image("a/UPPER.PNG")
    t.other("a/notes.txt")
    t.image("B/b0.png")
    t.image("B/b1.gif")
    t.image("B/b2.jpeg")
    t.image("B/b3.bmp")              # PNG bytes under .bmp
    for i in range(4):
        t.image(f"c d/c{i}.png")
    t.image(".hidden/x.png")         # hidden class: not a class (list_files does match it)
    os.makedirs(os.path.join(root, "empty"))  # a class without images is no error
    t.other("empty/readme.txt")
    t.other("loose.png", png(999))   # files beside the classes belong to none
    t.link("a/zlink.png", "B/b0.png")   # a link to a file is a file
    t.link("a/zdir", "c d")             # a link to a folder is not walked
    for i in range(3):
        t.image(f"e/e{i}.png")
    return t.finish()


def flat_tree(root, sizes):
    t = Tree(root)
    for c, size in enumerate(sizes):
        for i in range(size):
            t.image(f"c{c}/img{i:04d}.png")
    return t.finish()


# --------------------------------------------------------------------------
# Combinations


def idfd(tree, caller="loop", **kw):
    return dict(pipeline="image_dataset_from_directory", tree=tree, caller=caller, **kw)


def lf(tree, pattern="*/*.png", caller="loop", **kw):
    return dict(pipeline="list_files", tree=tree, pattern=pattern, caller=caller, **kw)


def combinations():
    m, one, c3, big = "mixed", "one", "c3", "big"
    jobs = [
        # image_dataset_from_directory, a plain loop
        idfd(m, seed=0, batch_size=1),
        idfd(m, seed=42, batch_size=4),
        idfd(m, seed=123456, batch_size=5, global_seed=7),
        idfd(m, seed=None, batch_size=2, global_seed=3),
        idfd(m, seed=5, batch_size=4, shuffle=False),
        idfd(m, seed=0, batch_size=100),
        idfd(one, seed=1, batch_size=1),
        idfd(one, seed=None, batch_size=3, global_seed=0),
        idfd(c3, seed=2**32 - 1, batch_size=32),
        idfd(c3, seed=7, batch_size=3, global_seed=2**31 - 1),
        idfd(c3, seed=7, batch_size=3, global_seed=2**31 + 4),
        idfd(c3, seed=11, batch_size=8, validation_split=0.2, subset="training"),
        idfd(c3, seed=11, batch_size=8, validation_split=0.2, subset="validation"),
        idfd(c3, seed=0, batch_size=16, global_seed=5, validation_split=0.3, subset="training"),
        idfd(c3, seed=0, batch_size=16, global_seed=5, validation_split=0.3, subset="validation"),
        idfd(c3, seed=3, batch_size=1, validation_split=0.015, subset="validation"),
        idfd(big, seed=9, batch_size=64),
        idfd(big, seed=9, batch_size=7),
        idfd(big, seed=None, batch_size=10, global_seed=1234),
        idfd(big, seed=None, batch_size=10, shuffle=False, validation_split=0.25,
             subset="training"),
        # list_files, a plain loop
        lf(m, seed=5, batch_size=3),
        lf(m, seed=None, batch_size=3, global_seed=11, global_via="tf"),
        lf(m, seed=None, batch_size=3, global_seed=11),
        lf(c3, seed=2**40, batch_size=4),
        lf(c3, "c*/img000*.png", seed=-3, batch_size=4, global_seed=4, global_via="tf"),
        lf(c3, seed=1, batch_size=4, shuffle=False),
        lf(big, seed=0, batch_size=8, global_seed=0, global_via="tf"),
        lf(big, "c1/*", seed=8, batch_size=8),
        # list_files(shuffle=False).shuffle(buffer, seed).map(read)
        lf(c3, seed=3, batch_size=5, shuffle_buffer=1, read=True),
        lf(c3, seed=3, batch_size=5, shuffle_buffer=3, read=True),
        lf(c3, seed=None, batch_size=5, shuffle_buffer=10, global_seed=21, global_via="tf",
           read=True),
        lf(big, seed=77, batch_size=5, shuffle_buffer=1000, read=True),
        lf(big, seed=77, batch_size=5, shuffle_buffer=17, global_seed=6, read=True),
        lf(m, seed=2, batch_size=5, shuffle_buffer=4, read=True),
        # Model.fit
        idfd(m, "fit", seed=42, batch_size=4),
        idfd(c3, "fit", seed=3, batch_size=8, global_seed=5),
        idfd(c3, "fit", seed=4, batch_size=8, validation_split=0.2, subset="training"),
        idfd(big, "fit", seed=None, batch_size=16, global_seed=9),
        idfd(big, "fit", seed=6, batch_size=250),
        idfd(m, "fit", seed=1, batch_size=4, shuffle=False),
        lf(c3, caller="fit", seed=13, batch_size=8),
        lf(big, caller="fit", seed=5, batch_size=10, shuffle_buffer=20),
        lf(big, caller="fit", seed=None, batch_size=10, shuffle_buffer=20, global_seed=3),
    ]
    for i, j in enumerate(jobs):
        j["name"] = f"{i:02d}"
        j["epochs"] = EPOCHS
    return jobs


def describe(job):
    keys = [k for k in job if k not in ("name", "tree_dir", "epochs")]
    return " ".join(f"{k}={job[k]!r}" for k in keys)


# --------------------------------------------------------------------------
# clairfs


def clairfs_args(job, trees, as_config, epochs, iterator_step=1):
    keys = {"framework": "tensorflow", "pipeline": job["pipeline"], "epochs": epochs,
            "batch_size": job["batch_size"], "seed": job["seed"]}
    for k in ("global_seed", "shuffle", "validation_split", "subset", "shuffle_buffer",
              "pattern"):
        if k in job:
            keys[k] = job[k]
    if job["pipeline"] == "list_files" and "shuffle_buffer" in job:
        keys["shuffle"] = True  # the general pipeline's own shuffle
    if as_config:
        path = os.path.join(trees, f"job{job['name']}-{epochs}.json")
        with open(path, "w") as f:
            json.dump(keys, f)  # seed None is JSON null
        args = ["--config", path]
    else:
        args = []
        for k, v in keys.items():
            text = "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
            args.append(f"--{k.replace('_', '-')}={text}" if k == "pattern" else f"--{k}")
            if k != "pattern":
                args.append(text)
    args += ["--root", os.path.join(trees, job["tree"]), "--paths"]
    if iterator_step != 1:
        args += ["--iterator-step", str(iterator_step)]
    return args


def clairfs_order(clairfs, args):
    r = subprocess.run([clairfs, "order"] + args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return [json.loads(line) for line in r.stdout.splitlines()], ""


def as_seen(epochs, ids, images):
    """clairfs's paths in the form tf_orders.py reports: numbers for images."""
    return [[ids[p] for p in e] if images else e for e in epochs]


# --------------------------------------------------------------------------
# The checks


class Checker:
    def __init__(self, clairfs, trees):
        self.clairfs = clairfs
        self.trees = trees
        self.failures = 0
        self.fit_iterators = []

    def fail(self, msg):
        self.failures += 1
        log("FAIL " + msg)

    def ids(self, tree):
        with open(os.path.join(self.trees, tree, "ids.json")) as f:
            return json.load(f)

    def compare(self, job, seen, index):
        images = bool(seen) and bool(seen[0]) and isinstance(seen[0][0], int)
        ids = self.ids(job["tree"])
        step = 2 if job["caller"] == "fit" else 1
        ours, why = clairfs_order(self.clairfs,
                                  clairfs_args(job, self.trees, index % 2 == 1, EPOCHS, step))
        if ours is None:
            return self.fail(f"{job['name']} {describe(job)}: clairfs refused: {why}")
        ours = as_seen(ours, ids, images)
        for e in range(EPOCHS):
            if ours[e] != seen[e]:
                return self.fail(f"{job['name']} {describe(job)} epoch {e}:\n  tf      {seen[e]}\n"
                                 f"  clairfs {ours[e]}")
        if job["caller"] == "fit":
            self.which_iterators(job, seen, ids, images)

    def which_iterators(self, job, seen, ids, images):
        """The iterator each fit epoch ran, found by trying each."""
        probe, why = clairfs_order(self.clairfs, clairfs_args(job, self.trees, False,
                                                              FIT_PROBE_ITERATORS))
        if probe is None:
            return self.fail(f"{job['name']}: clairfs refused the probe: {why}")
        probe = as_seen(probe, ids, images)
        found = []
        for e in range(EPOCHS):
            ks = [k for k, order in enumerate(probe) if order == seen[e]]
            found.append(ks)
        self.fit_iterators.append((job["name"], found))
        shuffled = job.get("shuffle", True) and len(seen[0]) > 2
        if shuffled and found != [[2 * e] for e in range(EPOCHS)]:
            self.fail(f"{job['name']} {describe(job)}: fit's epochs ran iterators {found}, "
                      f"expected [[0], [2], [4]]")


REFUSED = [
    (["--seed", "none"], "seed none needs global_seed"),
    (["--validation-split", "0.2"], "validation_split and subset"),
    (["--num-workers", "2"], "num_workers is a PyTorch key"),
    (["--sampler", "distributed"], "sampler is a PyTorch key"),
    (["--pattern", "*/*.png"], "pattern belongs to pipeline list_files"),
    (["--keras-version", "3.3.1"], "Keras 3.3.0 to 3.3.2"),
    (["--layout", "imagefolder"], "layout imagefolder does not fit"),
    (["--seed", str(2**32)], "seed must be from 0 to 2^32-1"),
    (["--seed", "none", "--global-seed", "1", "--validation-split", "0.5", "--subset",
      "training"], "validation_split with shuffle needs a seed"),
    (["--pipeline", "list_files"], "list_files needs pattern"),
    (["--pipeline", "list_files", "--pattern", "*"], "matches the directory"),
]


def check_refusals(clairfs, trees, checker):
    for extra, reason in REFUSED:
        args = ["order", "--framework", "tensorflow", "--root", os.path.join(trees, "mixed")]
        r = subprocess.run([clairfs] + args + extra, capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        if (r.returncode not in (1, 2) or len(lines) != 1 or not lines[0].startswith("clairfs: ")
                or reason not in lines[0]):
            checker.fail(f"refusal {extra}: exit {r.returncode}, stderr {r.stderr!r}, wanted "
                         f"one line with {reason!r}")
    r = subprocess.run([clairfs, "order", "--framework", "tensorflow", "--n", "10", "--seed",
                        "3", "--batch-size", "2", "--epochs", "2"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or len(r.stdout.splitlines()) != 2:
        checker.fail(f"--n with tensorflow: exit {r.returncode} {r.stderr!r}")


def frameworks_python():
    py = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON", "/opt/clairfs-venv/bin/python")
    try:
        r = subprocess.run([py, "-c", "import tensorflow, keras"], capture_output=True,
                           text=True, timeout=300)
    except OSError as e:
        return py, f"cannot run {py}: {e}"
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-1:] or ["no output"]
        return py, f"{py} cannot import tensorflow and keras: {tail[0]}"
    return py, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="write the trees here and keep them")
    args = ap.parse_args()
    clairfs = os.environ.get("CLAIRFS", os.path.join(SOURCE_ROOT, "build", "src", "clairfs"))
    py, why = frameworks_python()
    if why:
        log(f"SKIP: {why} (set CLAIRFS_FRAMEWORKS_PYTHON to a python with tensorflow-cpu 2.21 "
            f"and keras 3.15.1)")
        return 77
    trees = args.keep or tempfile.mkdtemp(prefix="clairfs-tf-order.")
    try:
        mixed_tree(os.path.join(trees, "mixed"))
        flat_tree(os.path.join(trees, "one"), [1])
        flat_tree(os.path.join(trees, "c3"), [30, 31, 40])
        flat_tree(os.path.join(trees, "big"), [50, 50, 50, 50, 50])
        jobs = combinations()
        tf_jobs = [dict(j, tree=os.path.join(trees, j["tree"])) for j in jobs]
        with open(os.path.join(trees, "jobs.json"), "w") as f:
            json.dump(tf_jobs, f)
        start = time.time()
        r = subprocess.run([py, os.path.join(HERE, "tf_orders.py"),
                            os.path.join(trees, "jobs.json"), os.path.join(trees, "tf.json")],
                           capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            log(r.stderr[-3000:])
            log("FAIL tf_orders.py exited " + str(r.returncode))
            return 1
        with open(os.path.join(trees, "tf.json")) as f:
            tf_out = json.load(f)
        log(f"real TensorFlow {tf_out['versions']['tensorflow']}, Keras "
            f"{tf_out['versions']['keras']}: {len(jobs)} combinations x {EPOCHS} epochs in "
            f"{time.time() - start:.0f} s")
        checker = Checker(clairfs, trees)
        for i, job in enumerate(jobs):
            a = tf_out["answers"][job["name"]]
            if "error" in a:
                checker.fail(f"{job['name']} {describe(job)}: TensorFlow raised {a['error']}")
                continue
            checker.compare(job, a["epochs"], i)
        for name, found in checker.fit_iterators:
            log(f"fit job {name}: epochs 0..{EPOCHS - 1} ran iterators {found}")
        check_refusals(clairfs, trees, checker)
        if checker.failures:
            log(f"{checker.failures} failure(s)")
            return 1
        log(f"ok: {len(jobs)} combinations equal, {len(REFUSED)} refusals")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(trees, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
