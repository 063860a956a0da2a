#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""clairfs's dataset numbering against the framework's own: a tree built
to be tricky for ImageFolder (spaces, '-', uppercase and odd extensions,
hidden dirs and files, nested subdirs whose full-path order is not
depth-first, symlinked class and subdirectories, broken links, files
directly under the root, UTF-8 names) must give exactly
torchvision.datasets.ImageFolder(root).samples, in order; the sorted
layout must give every regular file in byte order of its path; the list
layout the manifest's order. Then the same tree shuffled: `clairfs order
--paths` must name, epoch by epoch, the files a real DataLoader yields.

Runs under Debian's torch 1.13 + torchvision 0.14, or (CLAIRFS_ORDER_TORCH=2.x,
meson's order_layouts_2x) under the torch 2.x venv, where torchvision does
not import and ImageFolder's listing comes from list_image_folder (itself
checked against torchvision by tests/prefetch/test_real_scripts.py)."""
import json
import os
import subprocess
import sys
import tempfile

import torch_python

torch_python.run_under_chosen_python(__file__)

CLAIRFS = os.environ.get("CLAIRFS", "build/src/clairfs")

try:
    import torch
except ImportError as e:  # the test command installs it; say why if not
    torch_python.no_torch(f"{sys.executable} cannot import torch ({e})")
try:
    import torchvision
except Exception as e:  # the venv's: PyPI's torchvision does not import beside CPU torch
    if torch_python.wanted() == "1.13":  # Debian's must: it is the reference
        torch_python.no_torch(f"{sys.executable} cannot import torchvision ({e})")
    torchvision = None

FILES = [
    "cat/1.jpg", "cat/10.jpg", "cat/9.jpg", "cat/a b.JPG", "cat/a-b.Jpeg", "cat/a_b.png",
    "cat/.hidden.jpg", "cat/notes.txt", "cat/x.jpg.bak", "cat/y.TIFF", "cat/z.webp",
    "cat/sub/s1.jpg", "cat/sub x/s2.jpg", "cat/sub-x/s3.jpg", "cat/sub/deeper/s4.jpg",
    "cat/.cache/old/c.jpg", "dog/d1.ppm", "dog/d2.pgm", "dog/d3.bmp", "dog/deep/er/d4.tif",
    ".hiddenclass/h.jpg", "Zebra/z1.jpg", "\u00e9t\u00e9/e.jpg", "\u65e5\u672c/n.png",
    "linked_target/t1.jpg", "rootfile.jpg",
]


def build_tree(root):
    for rel in FILES:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(rel.encode())
    os.symlink("dog", os.path.join(root, "dog-link"))           # a symlinked class
    os.symlink("../linked_target", os.path.join(root, "cat", "linkdir"))  # followed subdir
    os.symlink("missing.jpg", os.path.join(root, "dog", "broken.jpg"))    # broken: included
    os.symlink("d1.ppm", os.path.join(root, "dog", "alias.JPG"))


def clairfs(*args):
    r = subprocess.run([CLAIRFS, "order", *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"clairfs order {' '.join(args)} failed: {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def relative(root, paths):
    return [os.path.relpath(p, root) for p in paths]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"position {i}: expected {x!r}, got {y!r}"
    return f"lengths {len(a)} vs {len(b)}"


def image_folder_samples(root):
    if torchvision is None:
        return torch_python.list_image_folder(root)
    return torchvision.datasets.ImageFolder(root).samples


def test_imagefolder(root):
    expected = relative(root, [p for p, _ in image_folder_samples(root)])
    got = clairfs("--root", root, "--layout", "imagefolder", "--sampler", "sequential",
                  "--paths")[0]
    check(got == expected, "imagefolder differs from torchvision: " +
          first_difference(expected, got))
    print(f"imagefolder: {len(got)} samples equal "
          f"{'list_image_folder' if torchvision is None else 'torchvision'}'s ImageFolder.samples")


def test_sorted(root):
    expected = sorted(
        (os.path.relpath(os.path.join(d, f), root)
         for d, _, files in os.walk(root) for f in files
         if os.path.isfile(os.path.join(d, f)) and not os.path.islink(os.path.join(d, f))),
        key=lambda p: p.encode())
    got = clairfs("--root", root, "--layout", "sorted", "--sampler", "sequential", "--paths")[0]
    check(got == expected, "sorted layout differs: " + first_difference(expected, got))
    print(f"sorted: {len(got)} files in byte order of their paths")


def test_list(root, tmp):
    manifest = os.path.join(tmp, "manifest.txt")
    wanted = ["dog/d2.pgm", "cat/sub x/s2.jpg", "rootfile.jpg", "dog-link/d1.ppm"]
    with open(manifest, "w") as f:
        f.write("\n".join(wanted) + "\n")
    got = clairfs("--root", root, "--layout", "list", "--manifest", manifest,
                  "--sampler", "sequential", "--paths")[0]
    check(got == wanted, f"list layout: expected {wanted}, got {got}")
    print("list: the manifest's order")


def test_shuffled_epochs(root):
    """A real DataLoader over torchvision's ImageFolder, shuffled with an
    explicit generator, 2 workers, 3 epochs: the paths it yields per epoch
    must be clairfs's --paths lines."""

    class Paths(torch.utils.data.Dataset):
        """ImageFolder's samples (torchvision's, or list_image_folder's),
        each yielded as its path relative to root."""

        def __init__(self, root):
            self.samples = image_folder_samples(root)

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, i):
            return os.path.relpath(self.samples[i][0], root)

    loader = torch.utils.data.DataLoader(
        Paths(root), batch_size=4, shuffle=True, num_workers=2,
        generator=torch.Generator().manual_seed(1234), collate_fn=lambda b: b)
    expected = [[p for batch in loader for p in batch] for _ in range(3)]
    got = clairfs("--root", root, "--seed", "1234", "--generator", "explicit", "--batch-size",
                  "4", "--num-workers", "2", "--epochs", "3", "--torch-version",
                  torch.__version__, "--paths")
    for e, (want, have) in enumerate(zip(expected, got)):
        check(want == have, f"epoch {e} differs: " + first_difference(want, have))
    check(len(got) == 3, f"expected 3 epochs, got {len(got)}")
    print(f"shuffled: 3 epochs of a real torch {torch.__version__} DataLoader over "
          "ImageFolder, path for path")


def test_empty_class(root):
    os.makedirs(os.path.join(root, "empty_class"))
    r = subprocess.run([CLAIRFS, "order", "--root", root, "--paths"], capture_output=True,
                       text=True, timeout=60)
    try:
        image_folder_samples(root)
        torch_fails = False
    except FileNotFoundError:
        torch_fails = True
    check(torch_fails, "torchvision accepted an empty class: the expectation is wrong")
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 1 and len(lines) == 1 and "empty_class" in lines[0],
          f"empty class: exit {r.returncode}, stderr {r.stderr!r}")
    print(f"an empty class is refused, as {'list_image_folder' if torchvision is None else 'torchvision'} refuses it")


def main():
    with tempfile.TemporaryDirectory(prefix="clairfs-layouts-") as tmp:
        root = os.path.join(tmp, "tree")
        build_tree(root)
        failures = []
        for name, fn in [("imagefolder", lambda: test_imagefolder(root)),
                         ("sorted", lambda: test_sorted(root)),
                         ("list", lambda: test_list(root, tmp)),
                         ("shuffled epochs", lambda: test_shuffled_epochs(root)),
                         ("empty class", lambda: test_empty_class(root))]:
            try:
                fn()
            except AssertionError as e:
                failures.append(f"{name}: {e}")
                print(f"FAIL [{name}]: {e}")
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
