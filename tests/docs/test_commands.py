#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every shell command of README.md and docs/*.md either runs here, against
real mounts of a small generated dataset, or is listed in NOT_RUN with the
reason it cannot (a cluster, Slurm, minutes of benchmark, the test suite
itself). A command in neither fails the test, and so does an entry of
NOT_RUN or EXPECT that no doc has any more: the lists cannot rot.

Each doc's commands run in the doc's order, each in its own bash (with
pipefail), from a sandbox that stands in for the docs' machine:

- its absolute paths /lustre, /mnt, /nvme, /local and
  /var/lib/node_exporter are the sandbox's; /lustre/imagenet is a small
  ImageFolder tree (train/, val/) with an LMDB, an HDF5 file and a packed
  file beside it, /lustre/shards four 5 MiB "TFRecord" shards;
- `build/src/clairfs` and `clairfs` are the binary under test, `sudo`
  runs its command as is (the test runs as root), `config/` is the
  source's, and job.json a registration for /mnt/imagenet;
- a command that uses /mnt/NAME finds it mounted (the test mounts the
  matching backing with --mem 64M when nothing is), except a command that
  mounts it, which finds it unmounted; everything is unmounted after each
  doc;
- the metrics port 9477 is a free one, since another test may hold 9477.

A command passes when it exits 0 (or as EXPECT says), prints what EXPECT
says, and leaves mounted what it mounts and unmounted what it unmounts.
A writer killed by SIGPIPE because `head` had read enough counts as 0, as
in a user's shell. Needs root and /dev/fuse (exit 77 without FUSE). The
LMDB and HDF5 fixtures need python-lmdb and h5py, from the frameworks
venv; without them those commands are reported as not run (in CI, a
failure)."""
import os
import re
import shlex
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import doclib  # noqa: E402
import mountlib as ml  # noqa: E402

VENV_PYTHON = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or os.path.join(
    os.environ.get("CLAIRFS_VENV") or "/opt/clairfs-venv", "bin", "python")

_NEEDS_CLUSTER = "needs a cluster: several nodes under an MPI launcher (prefetch_peers_mpi " \
                 "runs three daemons of one mpiexec launch on one host)"
_TRAINING = "the user's own training script"
_SUITE = "builds or runs the test suite, which this test is part of"
_BENCH = "a benchmark: minutes on a throttled loop device in a memory cgroup, as root"

# Commands not run here, by key (doclib.Command.key), and why.
NOT_RUN = {
    "bash scripts/demo.sh": "installs, builds and runs the benchmark demo for minutes "
                            "(bench/configs/demo.json; bench_* tests check its parts)",
    "bash scripts/test.sh": _SUITE,
    "bash scripts/install-deps.sh && bash scripts/build.sh": "installs packages and builds; "
        "this test runs on the build meson made",
    "bash scripts/test.sh --quick": _SUITE,
    "bash scripts/test.sh mount_parity": _SUITE,
    "bash scripts/flake-hunt.sh -n 20 --hog prefetch_detect": _SUITE,
    "torchrun --nproc-per-node 4 train.py --data /mnt/imagenet/train": _TRAINING,
    "mpiexec -ppn 1 -n $NODES -disable-auto-cleanup clairfs mount /lustre/imagenet "
    "/mnt/imagenet -f --mem 64G --peers mpi &": _NEEDS_CLUSTER,
    "sudo meson install -C build --skip-subprojects": "installs into /usr/local and /sbin; "
        "mount_mount_helper links /sbin/mount.fuse.clairfs for its run instead",
    "sudo mount -t fuse.clairfs /lustre/imagenet /mnt/imagenet -o "
    "mem=64G,cache_dir=/nvme/clairfs": "needs /sbin/mount.fuse.clairfs (meson install); "
        "mount_mount_helper runs mount -t fuse.clairfs with it linked",
    'BACKING=/lustre/imagenet MNT=/tmp/clairfs-$USER MOUNT_OPTS="--mem 64G --peers mpi" '
    'REGISTER_OPTS="--root train --sampler distributed --seed 42 --batch-size 256 '
    '--num-workers 8" TRAIN="python train.py --data /tmp/clairfs-$USER/train" sbatch '
    '--nodes=4 --ntasks-per-node=4 /usr/local/share/clairfs/slurm/clairfs-job.sbatch':
        "needs Slurm; mount_slurm_scripts runs the job script under a stand-in srun",
    "clairfs status /mnt/imagenet --watch": "full-screen until q; mount_status_watch drives "
        "it in tmux",
    "clairfs simulate --config config/simulate-imagenet22k-1024.json --json out.json "
    "--plot out.svg": "4.3 minutes and 2 GiB; the small config above runs the same code",
    "sudo /usr/bin/python3 bench/scenarios.py bench/configs/ram-whole-ref.json --reps 3": _BENCH,
    "sudo /usr/bin/python3 bench/file_cost.py --files 10000 --size 110K --rounds 5":
        "a benchmark: mounts bindfs and mergerfs beside clairfs and drops caches, minutes",
}


class Expect:
    def __init__(self, out=None, rc=0):
        self.out, self.rc = out, rc


# What a command must print (stdout and stderr together, a regex) or exit
# with, where "exits 0" says too little. By key, or by (doc, key).
EXPECT = {
    "ls /mnt/imagenet/train | head -3": Expect(r"^class0\nclass1\nclass2\n$"),
    # The tour's two jobs, side by side, as its output block shows them.
    ("README.md", "build/src/clairfs status /mnt/imagenet"):
        Expect(r"mode: +clairvoyant[\s\S]*job default \(active[\s\S]*"
               r"job keras \(active[\s\S]*loader 'train' \(validation\): clairvoyant"),
    ("README.md", "build/src/clairfs status /mnt/imagenet --json | jq .mode"):
        Expect(r'^"clairvoyant"\n$'),
    ("docs/tensorflow.md", "clairfs status /mnt/imagenet"):
        Expect(r"loader 'train' \(training\): clairvoyant"),
    ("docs/pytorch.md", "clairfs status /mnt/imagenet"): Expect(r"rank 3: epoch 0"),
    "cat /mnt/imagenet/.clairfs/control": Expect(r'"root": "train"|^\{\}\n?$'),
    "clairfs status /mnt/shards --json | jq .chunks": Expect(r'"chunk_size": 1048576'),
    'echo \'{"batch_size": 0}\' > /mnt/imagenet/.clairfs/control':
        Expect(r"Invalid argument", rc=1),
    "clairfs register /mnt/imagenet --root missing --seed 42":
        Expect(r"registration refused: dataset root 'missing'", rc=1),
    "clairfs status /mnt/imagenet --json | jq '{mode, reason, error, warning}'":
        Expect(r'"mode": "(unregistered|clairvoyant)"'),
    "SLURM_NODEID=1 SLURM_NTASKS=4 SLURM_JOB_NUM_NODES=4 clairfs register /mnt/imagenet "
    "--ranks auto --world-size 16 --root train --sampler distributed --seed 42 --batch-size 256 "
    "--num-workers 8": Expect(r"ranks \[4,5,6,7\] of 16 from SLURM_NODEID=1"),
    "curl -s http://127.0.0.1:9477/metrics | grep clairfs_mode":
        Expect(r'clairfs_mode\{mount="[^"]*/mnt/imagenet",mode="unregistered"\} 1'),
    "clairfs status /mnt/imagenet --prometheus | grep '^clairfs_mode'":
        Expect(r"clairfs_mode\{"),
    "clairfs stage /mnt/imagenet --wait": Expect(r"done"),
    "clairfs simulate --config config/simulate-small.json --json out.json --plot out.svg":
        Expect(r"clairfs-peers[\s\S]*shared FS over the run: 1\.000x the dataset"),
    "clairfs status /mnt/imagenet --cluster": Expect(r"no peer group"),
    "clairfs order --n 1281167 --sampler distributed --world-size 64 --rank 5 --seed 7 | "
    "head -c 300": Expect(r"^\[\d+,\d+"),
}

# Commands that read the LMDB or HDF5 fixture, or what clairfs ranges wrote
# from it.
NEEDS_LMDB = re.compile(r"train\.lmdb|ranges\.txt")
NEEDS_HDF5 = re.compile(r"train\.h5")

# /mnt/NAME: what the test mounts there when a command needs it mounted.
BACKING = {"imagenet": "lustre/imagenet", "shards": "lustre/shards"}
ROOTS = ("lustre", "mnt", "nvme", "local", "var/lib/node_exporter")
ROOT_PATH = re.compile(r"(?<![\w.$/-])/(" + "|".join(map(re.escape, ROOTS)) +
                       r")(?=[/\s'\"]|$)")
DOC_PORT = "9477"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


# ---------------------------------------------------------------- the sandbox


def write_npy(path, values):
    """A 1-D little-endian int64 .npy, as np.save writes it."""
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}q", *values))


# python-lmdb and h5py write the LMDB and HDF5 files: 40 values of 20-24 KB,
# and 16 rows of 3 KiB, contiguous.
FIXTURE_PY = r"""
import sys, lmdb, h5py, numpy as np
d = sys.argv[1]
env = lmdb.open(d + "/train.lmdb", map_size=1 << 26)
with env.begin(write=True) as txn:
    for i in range(40):
        txn.put(b"%08d" % i, bytes([i]) * (20000 + 97 * i))
env.close()
with h5py.File(d + "/train.h5", "w") as f:
    f.create_dataset("images", data=np.arange(16 * 3072, dtype=np.uint8).reshape(16, 3, 32, 32))
"""


def make_sandbox(root):
    """The docs' machine in `root`; returns which optional fixtures exist."""
    import random
    rng = random.Random(45)
    imagenet = os.path.join(root, "lustre", "imagenet")
    for split, per_class in (("train", 20), ("val", 5)):
        for c in range(4):
            d = os.path.join(imagenet, split, f"class{c}")
            os.makedirs(d)
            for i in range(per_class):
                with open(os.path.join(d, f"img{i:03d}.jpg"), "wb") as f:
                    f.write(rng.randbytes(rng.randrange(2000, 20000)))
    record = 150528
    with open(os.path.join(imagenet, "train.bin"), "wb") as f:
        f.write(rng.randbytes(8 * record))
    write_npy(os.path.join(imagenet, "offsets.npy"), [i * record for i in range(9)])
    shards = os.path.join(root, "lustre", "shards")
    os.makedirs(shards)
    for i in range(4):   # above a sixteenth of --mem 64M: held by chunk
        with open(os.path.join(shards, f"shard-{i:03d}.tfrecord"), "wb") as f:
            f.write(rng.randbytes(5 << 20))
    for d in ("mnt/imagenet", "mnt/shards", "nvme/clairfs", "local/nvme/clairfs",
              "var/lib/node_exporter", "bin", "build/src"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.symlink(ml.CLAIRFS, os.path.join(root, "build", "src", "clairfs"))
    os.symlink(ml.CLAIRFS, os.path.join(root, "bin", "clairfs"))
    os.symlink(os.path.join(ml.SOURCE_ROOT, "config"), os.path.join(root, "config"))
    with open(os.path.join(root, "bin", "sudo"), "w") as f:
        f.write('#!/bin/sh\n# The test runs as root: sudo only runs its command.\nexec "$@"\n')
    os.chmod(os.path.join(root, "bin", "sudo"), 0o755)
    with open(os.path.join(root, "job.json"), "w") as f:
        f.write('{"root": "train", "seed": 42, "batch_size": 8, "num_workers": 2}\n')

    have = set()
    try:
        r = ml.run([VENV_PYTHON, "-c", FIXTURE_PY, imagenet], timeout=120)
        if r.returncode == 0:
            have |= {"lmdb", "hdf5"}
        else:
            ml.log(f"no LMDB and HDF5 fixtures: {VENV_PYTHON}: "
                   f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
    except OSError as e:
        ml.log(f"no LMDB and HDF5 fixtures: {e}")
    return have


# ---------------------------------------------------------------- mounts


def mounted_names(root):
    prefix = os.path.join(root, "mnt") + "/"
    return {mp[len(prefix):] for mp, *_ in ml.mounts() if mp.startswith(prefix)}


def unmount(root, name):
    mp = os.path.join(root, "mnt", name)
    pids = ml.daemon_pids(mp)
    r = ml.clairfs("umount", mp, timeout=60)
    if r.returncode != 0:
        ml.lazy_unmount(mp)
    ml.check(ml.wait_exit(pids, 30), f"the daemon of {mp} outlived its unmount")


def harness_mount(root, name):
    ml.check(name in BACKING, f"a doc uses /mnt/{name}, for which the test has no backing "
             f"(known: {', '.join(sorted(BACKING))})")
    mp = os.path.join(root, "mnt", name)
    r = ml.clairfs("mount", os.path.join(root, BACKING[name]), mp, "--mem", "64M", timeout=120)
    ml.check(r.returncode == 0, f"the test's own mount of /mnt/{name} failed: {r.stderr}")


def parse(text):
    """(words, with env assignments and sudo dropped) of a command's first
    simple command, or [] where shlex cannot read it."""
    try:
        words = shlex.split(text.replace("\\\n", " ").split("\n")[0], comments=True)
    except ValueError:
        return []
    while words and (re.match(r"^\w+=", words[0]) or words[0] == "sudo"):
        words = words[1:]
    return words


def mount_effect(root, words):
    """("mount" | "umount", NAME) for a command that mounts or unmounts
    /mnt/NAME, else None."""
    if not words:
        return None
    prefix = os.path.join(root, "mnt") + "/"
    name = lambda p: p[len(prefix):].split("/")[0] if p.startswith(prefix) else None  # noqa
    if os.path.basename(words[0]) == "clairfs" and len(words) >= 2:
        if words[1] == "mount" and len(words) >= 4:
            return ("mount", name(words[3]))
        if words[1] == "umount" and len(words) >= 3:
            return ("umount", name(words[2]))
        if words[1].startswith("/") and len(words) >= 3:   # what mount.fuse3 runs
            return ("mount", name(words[2]))
    if words[0] == "umount" and len(words) >= 2:
        return ("umount", name(words[1]))
    return None


# ---------------------------------------------------------------- running


def run_command(root, env, cmd, port, have, failures, report):
    key = cmd.key
    where = f"{cmd.doc}:{cmd.line}"
    if NEEDS_LMDB.search(key) and "lmdb" not in have or \
            NEEDS_HDF5.search(key) and "hdf5" not in have:
        report.append((cmd, "no python-lmdb and h5py for the fixture"))
        return
    text = ROOT_PATH.sub(lambda m: f"{root}/{m.group(1)}", cmd.text).replace(DOC_PORT, port)
    words = parse(text)
    effect = mount_effect(root, words)
    used = set(re.findall(re.escape(os.path.join(root, "mnt")) + r"/([\w.-]+)", text))
    now = mounted_names(root)
    for name in sorted(used):
        if effect == ("mount", name):
            if name in now:
                unmount(root, name)
        elif name not in now:
            harness_mount(root, name)

    t0 = time.monotonic()
    r = subprocess.run(["bash", "-c", "set -o pipefail\n" + text], cwd=root, env=env,
                       capture_output=True, text=True, errors="replace", timeout=300)
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    expect = EXPECT.get((cmd.doc, key)) or EXPECT.get(key) or Expect()
    rc = r.returncode
    if rc == 141 and re.search(r"\|\s*head\b", key):
        rc = 0   # SIGPIPE: head read what it wanted and closed the pipe
    problems = []
    if rc != expect.rc:
        problems.append(f"exit {r.returncode}, expected {expect.rc}")
    if expect.out and not re.search(expect.out, out, re.M):
        problems.append(f"output does not match /{expect.out}/")
    if effect and effect[1] and rc == 0:
        mp = os.path.join(root, "mnt", effect[1])
        if effect[0] == "mount":
            ok = ml.is_mounted(mp)
        else:
            ok = ml.wait_until(lambda: not ml.is_mounted(mp), 10)
        if not ok:
            problems.append(f"exit 0, but {mp} is {'not ' if effect[0] == 'mount' else ''}"
                            "mounted after it")
    status = "ok" if not problems else "FAIL"
    ml.log(f"{status:4} {took:5.2f} s  {where}: {key[:110]}")
    if problems:
        tail = "\n".join(out.strip().splitlines()[-15:])
        failures.append(f"{where}: {key}\n    {'; '.join(problems)}\n    output:\n{tail}")


def test():
    cmds = doclib.doc_commands()
    keys = {c.key for c in cmds}
    failures, not_run_here = [], []
    ml.check(len(cmds) >= 40, f"only {len(cmds)} commands found in the docs: is the "
             "extraction broken?")
    stale = [k for k in NOT_RUN if k not in keys] + \
            [k for k in EXPECT if (k[1] if isinstance(k, tuple) else k) not in keys]
    both = [k for k in NOT_RUN if k in EXPECT]
    ml.check(not stale, "NOT_RUN or EXPECT names commands no doc has any more:\n  " +
             "\n  ".join(map(str, stale)))
    ml.check(not both, f"both run and not run: {both}")

    with ml.temp_dir("clairfs-docs-") as root:
        t0 = time.monotonic()
        have = make_sandbox(root)
        ml.log(f"sandbox {root} made in {time.monotonic() - t0:.1f} s")
        env = dict(os.environ, PATH=os.path.join(root, "bin") + ":" + os.environ["PATH"],
                   HOME=root, USER="root")
        run = 0
        for doc in doclib.user_docs():
            port = free_port()   # per doc: the less time between choosing and binding, the better
            for cmd in (c for c in cmds if c.doc == doc):
                if cmd.key in NOT_RUN:
                    continue
                run += 1
                run_command(root, env, cmd, port, have, failures, not_run_here)
            for name in sorted(mounted_names(root)):
                unmount(root, name)
        skipped = [c for c in cmds if c.key in NOT_RUN]
        ml.log(f"{run} commands run, {len(skipped)} listed as not runnable here, "
               f"{len(not_run_here)} not run for want of a fixture")
        for c, why in not_run_here:
            ml.log(f"  not run ({why}): {c.doc}:{c.line}: {c.key[:90]}")
        if not_run_here and os.environ.get("CI") == "true":
            failures.append("CI has the frameworks venv (bash scripts/install-deps.sh test): "
                            f"{VENV_PYTHON} should have made the LMDB and HDF5 fixtures")
    ml.check(not failures, f"{len(failures)} doc commands failed:\n" + "\n".join(failures))


if __name__ == "__main__":
    ml.main(test)
