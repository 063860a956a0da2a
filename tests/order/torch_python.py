# SPDX-License-Identifier: MIT
"""Which Python (and so which torch) an order test runs its torch side with.

CLAIRFS_ORDER_TORCH unset or "1.13": Debian's /usr/bin/python3 (torch 1.13.1,
torchvision 0.14.1), the reference the order was first checked against.
CLAIRFS_ORDER_TORCH="2.x": the frameworks venv's python, i.e.
CLAIRFS_FRAMEWORKS_PYTHON if set, else $CLAIRFS_VENV/bin/python (default
/opt/clairfs-venv, built by `bash scripts/install-deps.sh test` with the
versions pinned in tests/requirements-frameworks.txt). meson registers each
order test twice, the second time (order_*_2x) with "2.x".

An interpreter that does not exist or cannot import torch is a skip (exit
77) with one line saying which and why; with CI=true it is a failure, since
the test command builds the venv before the tests run.

Also: list_image_folder, torchvision's ImageFolder numbering without
torchvision (PyPI's torchvision does not import beside the CPU torch wheel),
from tests/prefetch/script_job.py."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_PYTHON = "/usr/bin/python3"
REEXEC_MARK = "CLAIRFS_ORDER_REEXEC"


def wanted():
    """"1.13" or "2.x"."""
    v = os.environ.get("CLAIRFS_ORDER_TORCH") or "1.13"
    if v not in ("1.13", "2.x"):
        raise SystemExit(f"CLAIRFS_ORDER_TORCH={v!r}: expected 1.13 or 2.x")
    return v


def python():
    """(path of the interpreter, what it is)."""
    if wanted() == "1.13":
        return DEBIAN_PYTHON, "Debian's torch 1.13"
    explicit = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON")
    if explicit:
        return explicit, "CLAIRFS_FRAMEWORKS_PYTHON"
    venv = os.environ.get("CLAIRFS_VENV") or "/opt/clairfs-venv"
    return os.path.join(venv, "bin", "python"), f"the frameworks venv {venv}"


def no_torch(why):
    """Exit: 77 (skip), or 1 under CI, where the venv must exist."""
    if os.environ.get("CI") == "true":
        print(f"FAIL (CI): {why}; bash scripts/install-deps.sh test builds it", flush=True)
        sys.exit(1)
    print(f"SKIP: {why}", flush=True)
    sys.exit(77)


def torch_version():
    """torch.__version__ of python(); exits 77 (or 1 in CI) if it has none."""
    py, what = python()
    try:
        r = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=300)
    except OSError as e:
        no_torch(f"{py} ({what}) cannot run: {e}")
    if r.returncode != 0:
        no_torch(f"{py} ({what}) cannot import torch: {r.stderr.strip()[-300:]}")
    return r.stdout.split()[-1]


def run_under_chosen_python(script):
    """Makes the running script continue under python(): re-executes it there
    once (a venv's python may be a symlink to /usr/bin/python3, so the
    interpreter's path cannot tell them apart; an environment mark does)."""
    if os.environ.get(REEXEC_MARK) == "1":
        return
    py, what = python()
    if wanted() == "1.13" and os.path.realpath(sys.executable) == os.path.realpath(py):
        return
    env = dict(os.environ, **{REEXEC_MARK: "1"})
    try:
        os.execve(py, [py, os.path.abspath(script)] + sys.argv[1:], env)
    except OSError as e:
        no_torch(f"{py} ({what}) cannot run: {e}")


def list_image_folder(root):
    """[(path, class index)] as torchvision's ImageFolder numbers them."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "prefetch"))
    try:
        import script_job
    finally:
        sys.path.pop(0)
    return script_job.list_image_folder(root)


def image_folder_samples(root):
    """(samples as (path, class), which listing): torchvision's when it
    imports, else list_image_folder's."""
    try:
        import torchvision
    except Exception:  # missing, or built for another torch
        return list_image_folder(root), "list_image_folder (no torchvision)"
    return (torchvision.datasets.ImageFolder(root, loader=lambda p: p).samples,
            f"torchvision {torchvision.__version__}")
