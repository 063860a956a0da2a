#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""End-to-end training-input benchmark: one unmodified PyTorch (or Keras, or
tf.data TFRecord, or PyTorch over LMDB) job, several ways of reaching a
dataset on a throttled "shared file system".

    sudo /usr/bin/python3 bench/scenarios.py bench/configs/default.json \
        [--reps N] [--scenarios a,b,...] [--build build] [--out bench/results]
        [--workdir DIR] [--no-results-md]

One invocation sets up the slow file system (bench/slowfs.py), generates the
dataset into it (bench/gen_dataset.py), then runs every scenario of the
config once per repetition, in alternating order (odd repetitions reversed),
each after `sync; echo 3 > drop_caches`, and tears everything down on any
exit. The job (bench/train_job.py) and the daemon under test (clairfs,
rclone) and the copy of copy-first all run inside the blkio throttle, the
memory cgroup and a cpuacct cgroup (bench/cgexec.sh joins them before exec).

Scenarios:
  local-warm            job reads a local-disk copy whose pages were read
                        into the page cache beforehand (outside the memory
                        cgroup): the CPU ceiling.
  local-budget          job reads the same local-disk copy from a cold
                        page cache, inside the memory cgroup: the copy's
                        pages count against the budget as a mount's do
                        (what a user who copied the dataset to the node's
                        disk gets on a node whose memory it does not fit).
  direct                job reads the slow file system.
  copy-first            `cp -a` the dataset to local disk (timed, throttled),
                        then the job reads the copy.
  rclone                rclone mount --read-only --vfs-cache-mode full
                        --vfs-fast-fingerprint of the slow FS path (a local
                        "remote"), cache dir on local disk, fresh per run.
  clairfs-unregistered  clairfs mount SLOWFS MNT --no-detect (no registration:
                        first-touch caching).
  clairfs-unregistered-detected
                        clairfs mount SLOWFS MNT, no registration, job
                        detection on (the default): the mount recognises the
                        job from its first opens (issue 16).
  clairfs-registered    clairfs mount SLOWFS MNT --register FILE, FILE being
                        the job's sampler settings (seed, batch, workers,
                        world/rank, generator, epochs) as .clairfs/control
                        takes them, so prefetching starts at mount time.
                        With a train/val dataset it registers the train
                        loader ("root": "train"); with several jobs, each
                        as its own "job" (the first with --register, the
                        others written to .clairfs/control after the mount).
  clairfs-registered-train
                        train/val datasets: the same, named for what it is,
                        the train loader only; the validation passes are
                        opens no registered loader covers.
  clairfs-registered-push
                        clairfs-registered with --push-ahead: the files the
                        job opens next are copied into the page cache before
                        their open, so their reads need no round trip.
  clairfs-registered-handover
                        clairfs-registered with --handover: a file the job
                        read whole leaves the RAM tier for the page cache.
  clairfs-registered-no-open-push, clairfs-ssd-registered-no-open-push
                        clairfs-registered and clairfs-ssd-registered with
                        --no-open-push: a file the kernel dropped is read
                        through READs, not pushed at its open (the
                        behaviour before issue 19's default).
  clairfs-registered-fanotify, clairfs-ssd-registered-fanotify
                        clairfs-registered and clairfs-ssd-registered with
                        --opens fanotify: the kernel opens the files itself
                        and fanotify tells the daemon, with no OPEN or
                        RELEASE round trip per file.
  clairfs-registered-no-one-copy, clairfs-unregistered-no-one-copy
                        clairfs-registered and clairfs-unregistered with
                        --no-one-copy: the kernel's page cache keeps the
                        files the RAM tier holds too (two copies), as
                        before issue 19's step 3.
  clairfs-registered-dev-fuse, clairfs-ssd-registered-dev-fuse
                        clairfs-registered and clairfs-ssd-registered with
                        --io-uring off: the kernel's requests through
                        /dev/fuse, to set beside the default transport
                        (FUSE over io_uring where the kernel's switch is
                        on, which --io-uring-switch on, the default, sees
                        to for the run).
  clairfs-ssd-registered-no-passthrough
                        clairfs-ssd-registered with --no-passthrough: the
                        SSD tier's files read through the daemon, promoted
                        into the RAM tier ahead of the job (the path before
                        issue 44), to set beside the kernel reading them.
  clairfs-ssd-registered-check-once
                        clairfs-ssd-registered with --ssd-check once: an
                        SSD entry checked once in the mount (its write) is
                        the kernel's at every open, read ahead into the page
                        cache before it, instead of checked again each
                        epoch where its pages did not stay.
  clairfs-ssd-registered-check-once-no-drop-behind
                        the same with --drop-behind never: the page cache
                        keeps what the kernel read of the entries until
                        reclaim takes it (as a local copy's is kept).
  clairfs-ssd-registered-ra-128k
                        clairfs-ssd-registered with the mount's kernel
                        readahead put back to the kernel's 128 KiB right
                        after the mount (the daemon raises it to
                        --max-read): a shard read in order then takes a
                        READ per 128 KiB, as before issue 44's readahead.
  clairfs-registered-wrong-seed
                        registered with the job's seed + 1: a prediction
                        that fails (with job.generator "global", only after
                        the chain search to pre_draws_max), to measure
                        what a wrong registration costs against direct.
  clairfs-registered-blksize-1m, clairfs-ssd-registered-blksize-1m
                        clairfs-registered and clairfs-ssd-registered with
                        --blksize 1M: st_blksize 1 MiB, so PIL's first
                        read() takes a sample whole (the default before
                        st_blksize became the backing's).
  clairfs-registered-trainval
                        train/val datasets: one job with a "loaders" list,
                        the train loader then {"root": "val", "sampler":
                        "sequential"} (the interface of issue 24).
  clairfs-ssd-unregistered, clairfs-ssd-registered
                        the same with the local-SSD tier: --cache-dir on
                        local disk (fresh per run, so nothing is reused from
                        an earlier run) plus the config's "clairfs_ssd_opts".
  clairfs-ssd-staged    registered, SSD tier, and --stage: the whole dataset
                        is copied to the SSD tier in the job's first-use order
                        while the job runs.
Every clairfs scenario adds the config's "clairfs_opts" (e.g. --mem 1200M)
and record the daemon's .clairfs/status at the end of the job (mode,
match_rate, stall_seconds, backing-store and RAM-tier counters). A mount or
registration the daemon refuses (an older clairfs answers EINVAL to keys it
does not know) fails that run with the daemon's reason; the other runs go on.

Config keys beyond the dataset, slow FS and job (bench/README.md):
  job.framework         torch (default: bench/train_job.py with /usr/bin/python3)
                        or keras (bench/keras_job.py: image_dataset_from_directory
                        + model.fit, with the interpreter named by
                        CLAIRFS_FRAMEWORKS_PYTHON, default
                        /opt/clairfs-venv/bin/python); keras jobs also take
                        job.image_size ([64, 64]) and job.validation_split, and
                        register as {"framework": "tensorflow", "pipeline":
                        "image_dataset_from_directory", "root", "seed",
                        "batch_size", "epochs"}. Or tfrecord
                        (bench/tfrecord_job.py: list_files + TFRecordDataset
                        with job.parallel_reads (8) + map + batch, the same
                        interpreter), on a dataset.kind "tfrecord" only; it
                        registers as {"framework": "tensorflow", "pipeline":
                        "list_files", "pattern": "train-*.tfrecord", "seed",
                        "batch_size", "epochs"} (the shards' order; the first
                        chunks of the shards due next are fetched before
                        their opens).
                        Or lmdb (bench/lmdb_job.py: a torch Dataset doing
                        txn.get() on one LMDB, DataLoader with job.workers,
                        job.generator, shuffle, the same interpreter), on a
                        dataset.kind "lmdb" only; it registers as a torch job
                        plus {"layout": "ranges", "manifest": "ranges.txt"}
                        (and "root": "train.lmdb" when the manifest's paths
                        are relative to the environment), the manifest
                        written once after the dataset by `clairfs ranges
                        lmdb DATA/train.lmdb --out DATA/ranges.txt` and
                        checked (gen_lmdb.py --check-ranges); if either
                        fails, the registered scenarios are unavailable.
  job.scenario_epochs   {"SCENARIO": N}: that scenario's job runs N epochs
                        instead of job.epochs (lmdb.json: direct runs epoch
                        0 only, which takes 18 minutes of page faults).
  dataset.pool          jpeg: gen_dataset.py's --pool, the base images the
                        files are cut from (96; fewer is faster to generate:
                        the CI's cluster-3-sim-small takes 32)
  dataset.kind          jpeg (default: class folders, bench/gen_dataset.py) or
                        tfrecord: dataset.shards TFRecord shards of random
                        records (bench/gen_tfrecord.py, run with the frameworks
                        interpreter), dataset.bytes in all or
                        dataset.records_per_shard, record sizes uniform in
                        dataset.record_kb ([50, 200]); or lmdb: one LMDB
                        environment DATA/train.lmdb of values of random
                        bytes put in a shuffled order (bench/gen_lmdb.py, the
                        frameworks interpreter), dataset.bytes in all or
                        dataset.count values, sizes uniform in
                        dataset.record_kb ([60, 140]).
  dataset.val_files N   the dataset is DATA/train (dataset.files) and
                        DATA/val (N files); the job reads train and runs a
                        validation pass over val after every epoch
                        (train_job.py --val), timed apart.
  job.generator         explicit (default) or global (train_job.py).
  job.model             a torchvision model built right after manual_seed
                        (train_job.py --model): its initialisation's draws
                        sit on the global chain before the loaders' seeds.
  jobs                  [{"id": "a", "seed": 1}, {"id": "b", "seed": 2}]:
                        every scenario starts one job per entry at the same
                        moment (after all have imported torch and scanned
                        the dataset), on the same data path and mount; the
                        run's total is the span from that moment until the
                        last job ends.
Every run also records the shared FS's bytes and reads over the whole run
(mounts, scans and copies included): run_shared_fs_bytes, and its ratio to
the dataset's bytes. The summary adds the floors of the set-up (dataset
bytes / read bandwidth, files / read IOPS), each scenario's epoch 0 as a
multiple of the bandwidth floor and every epoch as a multiple of the warm
local copy's same epoch.

Writes OUT/<date>-<config>.json (every run, every epoch) and a PNG plot of
samples/s per epoch per scenario, prints a markdown table, and appends it
with the exact command to bench/RESULTS.md (unless --no-results-md).
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cgroup_memory  # noqa: E402
import gen_dataset  # noqa: E402
import slowfs  # noqa: E402
import uring_switch  # noqa: E402

PY = "/usr/bin/python3"
FRAMEWORKS_PY = "/opt/clairfs-venv/bin/python"  # CLAIRFS_FRAMEWORKS_PYTHON overrides
ALL = ["local-warm", "local-budget", "direct", "copy-first", "rclone",
       "clairfs-unregistered", "clairfs-registered", "clairfs-unregistered-detected",
       "clairfs-registered-train", "clairfs-registered-push", "clairfs-registered-handover",
       "clairfs-registered-no-open-push", "clairfs-registered-no-one-copy",
       "clairfs-registered-fanotify", "clairfs-ssd-registered-fanotify",
       "clairfs-unregistered-no-one-copy", "clairfs-registered-trainval",
       "clairfs-ssd-unregistered", "clairfs-ssd-registered", "clairfs-ssd-registered-no-open-push",
       "clairfs-ssd-staged", "clairfs-ssd-unregistered-no-drop-behind",
       "clairfs-ssd-registered-no-drop-behind", "clairfs-registered-blksize-1m",
       "clairfs-registered-wrong-seed",
       "clairfs-ssd-registered-blksize-1m", "clairfs-registered-dev-fuse",
       "clairfs-ssd-registered-dev-fuse", "clairfs-ssd-registered-no-passthrough",
       "clairfs-ssd-registered-ra-128k", "clairfs-ssd-registered-check-once",
       "clairfs-ssd-registered-check-once-no-drop-behind"]
NEEDS_VAL = ("clairfs-registered-train", "clairfs-registered-trainval")
# Where the jobs' interpreters and libraries live (their page cache is
# dropped before the daemon-alone memory is read again; see daemon_alone).
LIBRARY_ROOTS = ("/usr/lib", "/opt/clairfs-venv", "/usr/local/lib")
FRAMEWORKS = ("torch", "keras", "tfrecord", "lmdb")
# The jobs run by the frameworks interpreter, and the modules each needs.
VENV_MODULES = {"keras": ("tensorflow", "keras"), "tfrecord": ("tensorflow",),
                "lmdb": ("lmdb", "torch")}
# Dataset kinds packed into a few large files: each is written by
# bench/gen_KIND.py and read by job.framework KIND only (bench/KIND_job.py),
# both with the frameworks interpreter.
PACKED = ("tfrecord", "lmdb")
RECORD_KB = {"tfrecord": [50, 200], "lmdb": [60, 140]}  # dataset.record_kb's default
LMDB_ENV = "train.lmdb"  # an lmdb dataset's environment, below the dataset root
RANGES = "ranges.txt"    # its ranges manifest, beside it (relative to the mount root)
# Scenarios that register the job: clairfs plans the order of whole files.
REGISTERING = ("clairfs-registered", "clairfs-ssd-registered", "clairfs-ssd-staged")
RUNNING = []  # Popen objects to kill on abort
MOUNTS = []   # mount points to unmount on abort


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def mount_fields(path):
    """The fields of mountinfo's newest line for a mount at PATH, or None
    (read without touching the mount, which may not answer yet)."""
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4].replace("\\040", " ") == path:
                found = fields
    return found


def mounted(path):
    return mount_fields(path) is not None


def wait_mounted(path, proc=None, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if mounted(path):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mount of {path} exited with {proc.returncode}")
        time.sleep(0.1)
    raise RuntimeError(f"{path} not mounted after {timeout}s")


def unmount(path):
    if not mounted(path):
        return
    r = subprocess.run(["umount", path], capture_output=True)
    if r.returncode != 0:
        time.sleep(1)
        subprocess.run(["umount", "-l", path], capture_output=True)


def pids_with_arg(mnt):
    """The processes with MNT as an exact argument (like pgrep -f, no
    prefix), `umount` commands left out."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            args = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if mnt.encode() in args and b"umount" not in args:
            out.append(int(p))
    return out


def daemon_pid_of(mnt):
    """The process with MNT as an exact argument (like pgrep -f, no prefix)."""
    pids = pids_with_arg(mnt)
    return pids[0] if pids else None


def set_mount_readahead(mnt, kb):
    """Writes KB to the mount's /sys/class/bdi/MAJOR:MINOR/read_ahead_kb
    (found in mountinfo: a stat of the mount would ask its daemon) and
    returns what the kernel then reports."""
    fields = mount_fields(os.path.realpath(mnt))
    if fields is None:
        raise RuntimeError(f"{mnt} is not in /proc/self/mountinfo")
    path = f"/sys/class/bdi/{fields[2]}/read_ahead_kb"
    with open(path, "w") as f:
        f.write(f"{kb}\n")
    with open(path) as f:
        got = int(f.read())
    log(f"    mount readahead set to {got} KiB ({path})")
    return got


def frameworks_python():
    """The interpreter of keras, tfrecord and lmdb jobs (and of
    gen_tfrecord.py, gen_lmdb.py): the venv with tensorflow, keras and
    python-lmdb."""
    return os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or FRAMEWORKS_PY


def framework_of(cfg):
    return cfg["job"].get("framework", "torch")


def dataset_kind(cfg):
    return cfg["dataset"].get("kind", "jpeg")


def check_frameworks_python(framework="keras"):
    """Exits with a reason unless the frameworks interpreter can import what
    a FRAMEWORK job needs (VENV_MODULES; looked up, not imported: an import
    takes ~20 s)."""
    py = frameworks_python()
    mods = VENV_MODULES[framework]
    if not os.access(py, os.X_OK):
        sys.exit(f"scenarios: {framework} job: no interpreter {py} (set "
                 f"CLAIRFS_FRAMEWORKS_PYTHON to a Python with {' and '.join(mods)})")
    r = subprocess.run([py, "-c", "import importlib.util as u, sys; "
                        f"miss = [m for m in {mods!r} if not u.find_spec(m)]; "
                        "print(','.join(miss), file=sys.stderr); sys.exit(1 if miss else 0)"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"scenarios: {framework} job: {py} lacks {r.stderr.strip() or '/'.join(mods)} "
                 "(set CLAIRFS_FRAMEWORKS_PYTHON)")


def gen_packed(kind, out, ds):
    """A PACKED dataset.kind in OUT, written by bench/gen_KIND.py with the
    frameworks interpreter: tfrecord's shards (TFRecordWriter) in OUT, or
    lmdb's environment OUT/LMDB_ENV; its figures."""
    lo, hi = ds.get("record_kb", RECORD_KB[kind])
    if kind == "tfrecord":
        cmd = [out, "--shards", str(ds.get("shards", 64))]
        count = ("records_per_shard", "--records-per-shard")
    else:
        cmd = [os.path.join(out, LMDB_ENV)]
        count = ("count", "--count")
    cmd = ([frameworks_python(), os.path.join(HERE, f"gen_{kind}.py")] + cmd
           + ["--min-kb", str(lo), "--max-kb", str(hi), "--seed", str(ds.get("seed", 0))])
    if ds.get(count[0]):
        cmd += [count[1], str(ds[count[0]])]
    else:
        cmd += ["--bytes", str(ds.get("bytes", 1.1e9))]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    if r.returncode != 0:
        sys.exit(f"scenarios: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def dataset_text(info):
    """The dataset in a few words, for the log and RESULTS.md."""
    if info.get("kind") == "tfrecord":
        return (f"{info['shards']} TFRecord shards, {info['bytes'] / 1e9:.2f} GB "
                f"(median shard {info['median'] / 1e6:.1f} MB; {info['records']} records of "
                f"random bytes, {info['record_min_kb']:g}-{info['record_max_kb']:g} KB, mean "
                f"{info['record_mean'] / 1e3:.0f} KB)")
    if info.get("kind") == "lmdb":
        return (f"one LMDB (data.mdb {info['bytes'] / 1e9:.2f} GB; {info['records']} values of "
                f"random bytes, {info['record_min_kb']:g}-{info['record_max_kb']:g} KB, mean "
                f"{info['record_mean'] / 1e3:.0f} KB, put in a shuffled order)")
    split = (f" ({info['train_files']} train + {info['val_files']} val, a validation pass "
             f"after every epoch)" if info.get("val_files") else "")
    return (f"{info['files']} JPEGs{split} ({info.get('style', 'imagenet')} style), "
            f"{info['bytes'] / 1e9:.2f} GB (mean "
            f"{info['mean'] / 1e3:.0f} KB, median {info['median'] / 1e3:.0f} KB)")


def in_cgroup(pid, name):
    try:
        return name in open(f"/proc/{pid}/cgroup").read()
    except OSError:
        return False


def read_tree(root):
    n = 0
    for d, _, fs in os.walk(root):
        for f in fs:
            with open(os.path.join(d, f), "rb") as fh:
                while fh.read(1 << 20):
                    pass
            n += 1
    return n


def loop_stat(st):
    """(read requests completed, bytes read) of the shared FS's device."""
    v = open(f"/sys/block/{os.path.basename(st['loop'])}/stat").read().split()
    return int(v[0]), int(v[2]) * 512


def loop_bytes(st):
    return loop_stat(st)[1]


def tail(path, n=2000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def cg_write(st, ctl, knob, value):
    with open(os.path.join(st["cgroups"][ctl], knob), "w") as f:
        f.write(str(value))


def cg_read(st, ctl, knob):
    with open(os.path.join(st["cgroups"][ctl], knob)) as f:
        return int(f.read().split()[0])


class Bench:
    known = ALL  # the scenarios a config may name

    def __init__(self, args, cfg):
        self._options = {}  # has_option: mount options this clairfs takes
        self.a, self.cfg = args, cfg
        self.clairfs = os.path.join(os.path.abspath(args.build), "src", "clairfs")
        self.st = None
        self.work = None
        self.ranges_keys = {}  # an lmdb registration's layout keys (prepare_ranges)

    # --- plumbing -------------------------------------------------------
    def cg_prefix(self, cgroups=None):
        """cgexec.sh into CGROUPS ({"blkio", "memory", "cpuacct"}: the slow
        FS's own by default)."""
        c = cgroups or self.st["cgroups"]
        return [os.path.join(HERE, "cgexec.sh"), c["blkio"], c["memory"],
                c["cpuacct"], "--"]

    def spawn(self, cmd, cgroups=None, **kw):
        p = subprocess.Popen(self.cg_prefix(cgroups) + cmd, **kw)
        RUNNING.append(p)
        return p

    def reap(self, p, timeout=None):
        try:
            rc = p.wait(timeout=timeout)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            RUNNING.remove(p)
        return rc

    def job_specs(self):
        """The jobs a run starts together: the config's "jobs" list (each
        {"id", "seed"}), or the one job of "job" (id None)."""
        seed = self.cfg["job"].get("seed", 0)
        if not self.cfg.get("jobs"):
            return [{"id": None, "seed": seed}]
        return [{"id": str(x["id"]), "seed": x.get("seed", seed)} for x in self.cfg["jobs"]]

    def has_val(self):
        return bool(self.cfg["dataset"].get("val_files"))

    def job_cmd(self, data, seed, daemon_pid=None, go=None, rank=None, cpuacct=None):
        """train_job.py, or keras_job.py for a "keras" job and KIND_job.py
        for a PACKED one (packed_cmd), with the flags of train_job.py's
        that mean something to them. rank and cpuacct default to job.rank
        and the slow FS's cpuacct cgroup."""
        j = self.cfg["job"]
        train = os.path.join(data, "train") if self.has_val() else data
        keras = framework_of(self.cfg) == "keras"
        if framework_of(self.cfg) in PACKED:
            cmd = self.packed_cmd(train, seed, rank)
        elif keras:
            cmd = [frameworks_python(), os.path.join(HERE, "keras_job.py"), train,
                   "--epochs", str(self.epochs()),
                   "--batch", str(j.get("batch", 64)),
                   "--seed", str(seed),
                   "--image-size"] + [str(x) for x in j.get("image_size", [64, 64])]
        else:
            cmd = [PY, os.path.join(HERE, "train_job.py"), train,
                   "--epochs", str(self.epochs()),
                   "--batch", str(j.get("batch", 64)),
                   "--workers", str(j.get("workers", 2)),
                   "--seed", str(seed),
                   "--generator", j.get("generator", "explicit"),
                   "--transform", j.get("transform", "rrc"),
                   "--world", str(j.get("world", 1)),
                   "--sampler", j.get("sampler", "auto"),
                   "--rank", str(j.get("rank", 0) if rank is None else rank)]
        if j.get("model") and not keras:
            cmd += ["--model", j["model"]]
        cmd += ["--step-sleep", str(j.get("step_sleep", 0)),
                "--loop-dev", self.st["loop"],
                "--cpuacct", cpuacct or self.st["cgroups"]["cpuacct"]]
        if keras and j.get("validation_split"):
            cmd += ["--validation-split", str(j["validation_split"])]
        if self.has_val():
            cmd += ["--val", os.path.join(data, "val")]
        if not keras and data == self.data:
            # Reading the slow FS itself: how much of it the page cache kept
            # (the simulator's page-cache input, bench/sim_validate.py).
            cmd.append("--resident")
        if daemon_pid:
            cmd += ["--daemon-pid", str(daemon_pid)]
        if go:
            cmd += ["--wait-for", go]
        return cmd

    def packed_cmd(self, data, seed, rank=None):
        """tfrecord_job.py or lmdb_job.py (on DATA/LMDB_ENV) with its own
        flags (tf.data's parallel reads; the DataLoader's as train_job.py
        takes them); --records from the generated dataset, so that every
        epoch is checked against all of it."""
        j = self.cfg["job"]
        kind = framework_of(self.cfg)
        if kind == "lmdb":
            data = os.path.join(data, LMDB_ENV)
        cmd = [frameworks_python(), os.path.join(HERE, f"{kind}_job.py"), data,
               "--epochs", str(self.epochs()),
               "--batch", str(j.get("batch", 64)),
               "--seed", str(seed)]
        if kind == "tfrecord":
            cmd += ["--parallel-reads", str(j.get("parallel_reads", 8))]
        else:
            cmd += ["--workers", str(j.get("workers", 2)),
                    "--generator", j.get("generator", "explicit"),
                    "--world", str(j.get("world", 1)),
                    "--sampler", j.get("sampler", "auto"),
                    "--rank", str(j.get("rank", 0) if rank is None else rank)]
        if getattr(self, "info", None):
            cmd += ["--records", str(self.info["records"])]
        return cmd

    def run_job(self, data, daemon_pid=None):
        """Runs the job (or every job of "jobs", started together) on DATA.
        One job: {"setup_s", "epochs"}; several: {"jobs": [{"id", "seed",
        "setup_s", "epochs"}...], "span_s"}."""
        specs = self.job_specs()
        go = self.go_path() if self.cfg.get("jobs") is not None else None
        return self.run_jobs(specs, [self.job_cmd(data, spec["seed"], daemon_pid, go)
                                     for spec in specs], go)

    def go_path(self):
        """The file whose creation lets jobs started together begin (their
        --wait-for), removed if an earlier run left it."""
        go = os.path.join(self.work, "go")
        if os.path.exists(go):
            os.unlink(go)
        return go

    def run_jobs(self, specs, cmds, go=None, on_go=None, on_epoch=None):
        """Runs one job per spec ({"id", "seed"}, and "cgroups" to start it
        in other cgroups than the slow FS's) with the command of the same
        index. With GO (several jobs) they begin together once each has
        scanned the dataset; on_go() is called just before, on_epoch(idx,
        record) after each epoch line of job idx (from its reader thread).
        Returns what run_job returns."""
        multi = go is not None
        jobs = []
        for k, (spec, cmd) in enumerate(zip(specs, cmds)):
            errpath = os.path.join(self.work, f"job{k}.stderr")
            p = self.spawn(cmd, spec.get("cgroups"),
                           stdout=subprocess.PIPE, stderr=open(errpath, "w"), text=True)
            jobs.append({"spec": spec, "p": p, "err": errpath, "setup": None,
                         "epochs": [], "ready": threading.Event(), "rc": None})

        def read_lines(idx, job):
            who = f"job {job['spec']['id']} " if multi else ""
            for line in job["p"].stdout:
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if "setup_s" in rec:
                    job["setup"] = rec
                    job["ready"].set()
                    continue
                job["epochs"].append(rec)
                if on_epoch:
                    on_epoch(idx, rec)
                val = (f", val {rec['val_wall_s']:.1f} s (with val {rec['epoch_with_val_s']:.1f} s)"
                       if "val_wall_s" in rec else "")
                log(f"    {who}epoch {rec['epoch']}: {rec['wall_s']:.1f} s{val}, "
                    f"{rec['samples_per_s']:.0f} samples/s, shared FS "
                    f"{rec['shared_fs_bytes'] / 1e6:.0f} MB, outside-job CPU "
                    f"{rec.get('outside_job_cpu_s', 0):.1f} s, steal {rec.get('steal_s', 0):.1f} s"
                    + (" (" + ", ".join(f"{k} {v:.2f}" for k, v in
                                        rec["daemon_threads_cpu_s"].items()) + ")"
                       if rec.get("daemon_threads_cpu_s") else ""))

        readers = [threading.Thread(target=read_lines, args=(idx, j), daemon=True)
                   for idx, j in enumerate(jobs)]
        for t in readers:
            t.start()
        # The jobs' stdout is read until it closes, so a job that hangs (a
        # reader spinning in its cgroup's reclaim, a stuck mount) would hold
        # the harness there forever; the watchdog ends them at the timeout.
        timeout = self.cfg.get("job_timeout_s", 3600)
        expired = threading.Event()

        def expire():
            expired.set()
            for j in jobs:
                j["p"].kill()

        watchdog = threading.Timer(timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        t_go = None
        try:
            if go:
                # Every job has imported torch and scanned the dataset: go.
                while not all(j["ready"].is_set() for j in jobs):
                    if expired.is_set() or any(j["p"].poll() is not None for j in jobs):
                        break
                    time.sleep(0.05)
                if on_go:
                    on_go()
                open(go, "w").close()
                t_go = time.perf_counter()
            # Wait for all; once one job fails, the others are ended rather
            # than waited for.
            while any(j["p"].poll() is None for j in jobs):
                if any(j["p"].poll() not in (None, 0) for j in jobs):
                    for j in jobs:
                        if j["p"].poll() is None:
                            j["killed"] = True
                            j["p"].kill()
                time.sleep(0.1)
            t_end = time.perf_counter()
            for j in jobs:
                j["rc"] = self.reap(j["p"])
        finally:
            watchdog.cancel()
            for j in jobs:
                if j["p"] in RUNNING:
                    self.reap(j["p"])
        for t in readers:
            t.join(timeout=10)
        if expired.is_set():
            done = (", ".join(f"job {j['spec']['id']} {len(j['epochs'])}" for j in jobs)
                    if multi else str(len(jobs[0]["epochs"])))
            raise RuntimeError(f"train_job killed after job_timeout_s ({timeout} s) "
                               f"with {done} epoch(s) done")
        # The job that failed first, not the ones ended because of it.
        for j in sorted(jobs, key=lambda j: bool(j.get("killed"))):
            if j["rc"] != 0:
                who = f"job {j['spec']['id']} " if multi else ""
                raise RuntimeError(f"train_job {who}exited {j['rc']}:\n{tail(j['err'])}")
        if not multi:
            j = jobs[0]
            return {"setup_s": j["setup"]["setup_s"] if j["setup"] else None,
                    "epochs": j["epochs"]}
        return {"jobs": [{"id": j["spec"]["id"], "seed": j["spec"]["seed"],
                          "setup_s": j["setup"]["setup_s"] if j["setup"] else None,
                          "epochs": j["epochs"]} for j in jobs],
                "span_s": round(t_end - t_go, 3)}

    # --- scenarios --------------------------------------------------------
    def sc_local_warm(self, r):
        n = read_tree(self.local)  # outside the memory cgroup: stays cached
        r["warmed_files"] = n
        out = self.run_job(self.local)
        # What the job leaves charged to the cgroup once it exited (its
        # libraries' page cache): the floor of every scenario's figure.
        alone = self.daemon_alone(None)
        if alone:
            r["mem_daemon_alone"] = alone
            log(f"    the cgroup after the job: {alone['file'] >> 20} MiB page cache + "
                f"{alone['anon'] >> 20} MiB anonymous; less the libraries' pages "
                f"{alone['file_less_libraries'] >> 20} MiB page cache")
        return out

    def sc_local_budget(self, r):
        # run_one dropped the caches: every page the job reads is charged
        # to the memory cgroup it runs in.
        return self.run_job(self.local)

    def sc_direct(self, r):
        return self.run_job(self.data)

    def sc_copy_first(self, r):
        dst = os.path.join(self.work, "copy")
        b0, t0 = loop_bytes(self.st), time.perf_counter()
        p = self.spawn(["cp", "-a", self.data, dst])
        if self.reap(p) != 0:
            raise RuntimeError("cp failed")
        r["copy_s"] = round(time.perf_counter() - t0, 3)
        r["copy_bytes"] = loop_bytes(self.st) - b0
        log(f"    copy: {r['copy_s']:.1f} s")
        try:
            return self.run_job(dst)
        finally:
            shutil.rmtree(dst, ignore_errors=True)

    def sc_rclone(self, r):
        mnt = os.path.join(self.work, "rclone-mnt")
        cache = os.path.join(self.work, "rclone-cache")
        os.makedirs(mnt, exist_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
        conf = os.path.join(self.work, "rclone.conf")
        open(conf, "w").close()
        cmd = ["rclone", "mount", self.data, mnt, "--config", conf,
               "--cache-dir", cache] + self.cfg.get("rclone_opts", [
                   "--read-only", "--vfs-cache-mode", "full",
                   "--vfs-fast-fingerprint"])
        r["daemon_cmd"] = cmd
        log_f = open(os.path.join(self.work, "rclone.log"), "w")
        p = self.spawn(cmd, stdout=log_f, stderr=subprocess.STDOUT)
        MOUNTS.append(mnt)
        try:
            wait_mounted(mnt, p)
            r["daemon_in_cgroup"] = in_cgroup(p.pid, self.st["name"])
            return self.run_job(mnt, daemon_pid=p.pid)
        finally:
            unmount(mnt)
            MOUNTS.remove(mnt)
            self.reap(p, timeout=60)
            shutil.rmtree(cache, ignore_errors=True)

    def sc_clairfs(self, r, register=None, ssd=False, stage=False, push=False, detect=False,
                   handover=False, open_push=True, one_copy=True, opens=None, drop_behind=True,
                   blksize=None, io_uring=None, passthrough=True, readahead_kb=None,
                   ssd_check=None):
        """register: None (no registration), "job" (the job as configured:
        its train loader on a train/val dataset), "wrong" (the same with
        another seed), "trainval" (a loaders
        list: train, then val, sequential). detect: leave job detection on
        (without a registration, a plain unregistered mount turns it off)."""
        mnt = os.path.join(self.work, "clairfs-mnt")
        os.makedirs(mnt, exist_ok=True)
        cmd = [self.clairfs, "mount", self.data, mnt] + self.cfg.get("clairfs_opts", [])
        cache = os.path.join(self.work, "clairfs-ssd")
        if ssd:
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            cmd += ["--cache-dir", cache] + self.cfg.get("clairfs_ssd_opts", [])
        if stage:
            cmd += ["--stage"]
        if push:
            cmd += ["--push-ahead"]
        if handover:
            cmd += ["--handover"]
        if not open_push:
            cmd += ["--no-open-push"]
        if not one_copy:
            cmd += ["--no-one-copy"]
        if opens:
            cmd += ["--opens", opens]
        if not drop_behind:
            cmd += ["--drop-behind", "never"]
        if blksize:
            cmd += ["--blksize", blksize]
        if io_uring:
            cmd += ["--io-uring", io_uring]
        if not passthrough:
            cmd += ["--no-passthrough"]
        if ssd_check:
            cmd += ["--ssd-check", ssd_check]
        if not register and not detect and self.has_option("--no-detect"):
            cmd += ["--no-detect"]
        regs = self.registrations(register) if register else []
        if regs:
            reg = os.path.join(self.work, "registration.json")
            with open(reg, "w") as f:
                json.dump(regs[0], f)
            cmd += ["--register", reg]
            r["registrations"] = regs
        r["daemon_cmd"] = cmd
        # The mount's stderr (and the daemon's, which inherits it) goes to a
        # file, not a pipe a forked daemon would hold open.
        errpath = os.path.join(self.work, "clairfs-mount.stderr")
        p = self.spawn(cmd, stderr=open(errpath, "w"))  # returns once the mount is live
        MOUNTS.append(mnt)
        try:
            try:
                rc = self.reap(p, timeout=300)
            except subprocess.TimeoutExpired:
                raise RuntimeError("clairfs mount did not return within 300 s:\n"
                                   + tail(errpath)) from None
            if rc != 0:
                raise RuntimeError(f"clairfs mount failed (exit {rc}):\n{tail(errpath)}")
            if readahead_kb is not None:
                r["readahead_kb"] = set_mount_readahead(mnt, readahead_kb)
            # More jobs than the one --register took: written as the control
            # file takes them, one job id each, before any job starts.
            for more in regs[1:]:
                self.control_write(mnt, more)
            pid = daemon_pid_of(mnt)
            r["daemon_pid"] = pid
            r["daemon_in_cgroup"] = bool(pid) and in_cgroup(pid, self.st["name"])
            out = self.run_job(mnt, daemon_pid=pid)
            if r["daemon_in_cgroup"]:
                alone = self.daemon_alone(pid)
                if alone:
                    r["mem_daemon_alone"] = alone
                    log(f"    daemon alone in the memory cgroup: {alone['file'] >> 20} MiB page "
                        f"cache + {alone['anon'] >> 20} MiB anonymous (the daemon's own "
                        f"{alone['daemon_rss_anon'] >> 20} MiB); less the libraries' pages "
                        f"{alone['file_less_libraries'] >> 20} MiB page cache")
            try:
                with open(os.path.join(mnt, ".clairfs", "status")) as f:
                    r["clairfs_status"] = json.load(f)
            except (OSError, ValueError) as e:
                raise RuntimeError(f"cannot read {mnt}/.clairfs/status after the job: {e}\n"
                                   + tail(errpath)) from None
            st = r["clairfs_status"]
            ssd_note = ""
            if st.get("ssd", {}).get("enabled"):
                ssd_note = (f", ssd {st['ssd']['bytes'] / 1e6:.0f}/"
                            f"{st['ssd']['capacity'] / 1e6:.0f} MB, {st['ssd']['hits']} hits")
            elif st.get("ssd", {}).get("error"):
                ssd_note = f", ssd off: {st['ssd']['error']}"
            ch = st.get("chunks") or {}
            if ch.get("files"):
                # Files above max_file (TFRecord shards), held by chunk.
                ssd_note += (f", chunks: {ch['files']} files, {ch.get('reads', 0)} reads, "
                             f"{ch.get('ram_hits', 0)} RAM hits, {ch.get('read_ahead', 0)} "
                             f"read ahead, ssd {(ch.get('ssd') or {}).get('hits', 0)} hits")
            r["transport"] = (st.get("transport") or {}).get("in_use", "/dev/fuse")
            log(f"    clairfs: {r['transport']}, mode {st['mode']}, match rate "
                f"{st['match_rate']}, stall "
                f"{st['stall_seconds']:.1f} s, backing {st['backing']['files']} files, "
                f"ram {st['ram']['bytes'] / 1e6:.0f}/{st['ram']['capacity'] / 1e6:.0f} MB"
                + ssd_note)
            if "jobs" in st:
                log(f"    clairfs jobs: {jobs_note(st)}")
            return out
        finally:
            if mounted(mnt):
                subprocess.run([self.clairfs, "umount", mnt], capture_output=True)
            unmount(mnt)
            MOUNTS.remove(mnt)
            shutil.rmtree(cache, ignore_errors=True)
            r["daemon_stderr"] = tail(errpath, 4000)

    def daemon_alone(self, pid, timeout=15):
        """What the memory cgroup holds once every process of the job has
        exited and the daemon alone is left in it: page cache and anonymous
        memory, and the daemon's own resident anonymous memory (/proc; pid
        None: no daemon, the cgroup empty). The
        run's last sample is not that: it may fall while the job's last
        processes still exit (130 MiB of anonymous memory more in some
        repetitions of 20261207-0248-ram-whole, none in others). None if
        other processes stay."""
        cg = self.st["cgroups"]["memory"]
        procs_path = os.path.join(cg, "cgroup.procs")
        deadline = time.monotonic() + timeout
        while True:
            with open(procs_path) as f:
                procs = {int(x) for x in f.read().split()}
            if procs <= ({pid} if pid else set()):
                break
            if time.monotonic() > deadline:
                log(f"    processes other than the daemon stay in the cgroup: {sorted(procs)}")
                return None
            time.sleep(0.1)
        time.sleep(1)  # the exited processes' pages uncharged
        f, a, sh = cgroup_memory.split(cgroup_memory.read_stat(cg))
        # The page cache of the job's interpreter and libraries (torch's
        # alone is some 500 MiB) is charged here too and is not the
        # dataset: dropped, what stays is the mount's pages and the
        # daemon's own.
        cgroup_memory.drop_file_pages(LIBRARY_ROOTS)
        time.sleep(0.5)
        f_less, _, _ = cgroup_memory.split(cgroup_memory.read_stat(cg))
        rss_anon = 0
        if pid:
            with open(f"/proc/{pid}/status") as st:
                for line in st:
                    if line.startswith("RssAnon:"):
                        rss_anon = int(line.split()[1]) << 10
        return {"file": f, "anon": a, "shmem": sh, "daemon_rss_anon": rss_anon,
                "file_less_libraries": f_less}

    def control_write(self, mnt, reg):
        """Writes one registration to MNT/.clairfs/control; a refusal (EINVAL)
        fails the run with the reason the daemon's status gives."""
        text = json.dumps(reg)
        try:
            with open(os.path.join(mnt, ".clairfs", "control"), "w") as f:
                f.write(text)
        except OSError as e:
            why = "?"
            try:
                with open(os.path.join(mnt, ".clairfs", "status")) as f:
                    why = json.load(f).get("error") or "?"
            except (OSError, ValueError):
                pass
            raise RuntimeError(f"clairfs refused the registration {text} written to "
                               f"{mnt}/.clairfs/control: {os.strerror(e.errno or 0)}: "
                               f"{why}") from None

    def registration(self, seed=None, job_id=None, rank=None):
        """The job's sampler as .clairfs/control takes it (see train_job.py).
        On a train/val dataset, the train loader ("root": "train"); with a
        job id, that job's ("job": ID, issue 24's interface); rank defaults
        to job.rank."""
        j = self.cfg["job"]
        reg = {}
        if job_id is not None:
            reg["job"] = job_id
        if framework_of(self.cfg) == "keras":
            return self.keras_registration(reg, seed)
        if framework_of(self.cfg) == "tfrecord":
            # tfrecord_job.py's pipeline: list_files(DATA/train-*.tfrecord,
            # shuffle=True, seed), then TFRecordDataset over the shards.
            reg.update({"framework": "tensorflow", "pipeline": "list_files",
                        "pattern": "train-*.tfrecord",
                        "seed": j.get("seed", 0) if seed is None else seed,
                        "batch_size": j.get("batch", 64), "epochs": j.get("epochs", 2)})
            return reg
        if self.has_val():
            reg["root"] = "train"
        reg.update({"seed": j.get("seed", 0) if seed is None else seed,
                    "batch_size": j.get("batch", 64),
                    "num_workers": j.get("workers", 2), "epochs": j.get("epochs", 2)})
        if j.get("register_epochs") is False:
            # As a detected job is registered: until the job stops.
            del reg["epochs"]
        if j.get("world", 1) > 1 or j.get("sampler") == "distributed":
            reg.update(sampler="distributed", world_size=j.get("world", 1),
                       ranks=[j.get("rank", 0) if rank is None else rank])
        else:
            reg.update(sampler="random", generator=j.get("generator", "explicit"))
        if framework_of(self.cfg) == "lmdb":
            # Sample i is a byte range of data.mdb (prepare_ranges).
            reg.update(self.ranges_keys)
        return reg

    def keras_registration(self, reg, seed=None):
        """A keras job as the TensorFlow support of clairfs takes it:
        image_dataset_from_directory(root, shuffle=True, seed, batch_size)
        read by model.fit for `epochs` epochs. root is relative to the
        mount ("." for its root, which clairfs spells as the mount root)."""
        j = self.cfg["job"]
        reg.update({"framework": "tensorflow", "pipeline": "image_dataset_from_directory",
                    "root": "train" if self.has_val() else ".",
                    "seed": j.get("seed", 0) if seed is None else seed,
                    "batch_size": j.get("batch", 64), "epochs": j.get("epochs", 2)})
        if j.get("validation_split"):
            # Not part of the agreed keys yet: keras's split of one
            # directory (subset="both"), its validation pass unshuffled.
            reg["validation_split"] = j["validation_split"]
        return reg

    def has_option(self, opt):
        """Whether this clairfs's mount takes OPT (an older build may not)."""
        if opt not in self._options:
            h = subprocess.run([self.clairfs, "mount", "--help"], capture_output=True,
                               text=True).stdout
            self._options[opt] = opt in h
        return self._options[opt]

    def registrations(self, kind):
        """One registration per job of the run (see sc_clairfs)."""
        out = []
        multi = self.cfg.get("jobs") is not None
        for spec in self.job_specs():
            # "wrong": another seed than the job's, a registration that no
            # search can correct (what it costs against reading directly).
            seed = spec["seed"] + (1 if kind == "wrong" else 0)
            reg = self.registration(seed, spec["id"] if multi else None)
            if kind == "trainval":
                # Keys the loaders share at the top, per iface24.md: the train
                # loader, then the validation pass, in the order they run.
                train = {"root": reg.pop("root")}
                reg["loaders"] = [train, {"root": "val", "sampler": "sequential"}]
            out.append(reg)
        return out

    def availability(self):
        av = {}
        for sc in self.scenarios:
            if sc.startswith("clairfs") and not os.access(self.clairfs, os.X_OK):
                av[sc] = f"{self.clairfs} not built"
            elif sc.endswith("-dev-fuse") and not self.has_option("--io-uring"):
                av[sc] = "this clairfs has no --io-uring"
            elif sc == "rclone" and not shutil.which("rclone"):
                av[sc] = "rclone not installed"
            elif sc.startswith("clairfs-ssd"):
                h = subprocess.run([self.clairfs, "mount", "--help"], capture_output=True,
                                   text=True).stdout
                if "--cache-dir" not in h:
                    av[sc] = "this clairfs has no SSD tier (--cache-dir)"
            elif sc in NEEDS_VAL and not self.has_val():
                av[sc] = "needs a train/val dataset (dataset.val_files)"
            elif sc == "clairfs-unregistered-detected" and not self.has_option("--no-detect"):
                av[sc] = "this clairfs has no job detection"
            elif sc == "clairfs-registered-trainval" and framework_of(self.cfg) == "keras":
                av[sc] = "no loaders list for keras jobs"
            elif sc.startswith("clairfs-registered"):
                h = subprocess.run([self.clairfs, "mount", "--help"], capture_output=True,
                                   text=True).stdout
                if "--register" not in h:
                    av[sc] = "this clairfs has no mount --register"
        return av

    def prepare_ranges(self, runnable):
        """An lmdb dataset with a registered scenario to run: writes its
        ranges manifest DATA/RANGES once (`clairfs ranges lmdb`), checks it
        against the environment (gen_lmdb.py --check-ranges) and keeps the
        registration's keys for it in self.ranges_keys. Returns the
        scenarios that cannot run ({scenario: why}: all registered ones if
        either step fails)."""
        regs = [sc for sc in runnable if sc.startswith(REGISTERING)]
        if framework_of(self.cfg) != "lmdb" or not regs:
            return {}
        env, out = os.path.join(self.data, LMDB_ENV), os.path.join(self.data, RANGES)
        cmd = [self.clairfs, "ranges", "lmdb", env, "--out", out]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.info["ranges"] = {"cmd": cmd, "rc": r.returncode,
                               "s": round(time.perf_counter() - t0, 1)}
        why = None
        if r.returncode != 0 or not os.path.isfile(out):
            # The reason comes first (a usage text may follow it).
            said = (r.stderr.strip().splitlines() or ["no manifest written"])[0]
            why = (f"no ranges manifest: `clairfs ranges lmdb {LMDB_ENV} --out {RANGES}` "
                   f"exited {r.returncode}: {said[:200]}")
        else:
            root = self.ranges_root(out, env)
            if root is None:
                why = f"the ranges manifest's paths name no file below {self.data}"
            else:
                chk = subprocess.run([frameworks_python(), os.path.join(HERE, "gen_lmdb.py"),
                                      env, "--check-ranges", out,
                                      "--root", os.path.join(self.data, root)],
                                     capture_output=True, text=True)
                if chk.returncode != 0:
                    why = ("the ranges manifest does not match the LMDB: "
                           + (chk.stderr.strip().splitlines() or ["?"])[-1][:200])
                else:
                    self.ranges_keys = {"layout": "ranges", "manifest": RANGES}
                    if root != ".":
                        self.ranges_keys["root"] = root
        if why:
            self.info["ranges"]["error"] = why
            return {sc: why for sc in regs}
        self.info["ranges"]["keys"] = self.ranges_keys
        log(f"ranges manifest: {RANGES} ({self.info['ranges']['s']} s), registration keys "
            f"{json.dumps(self.ranges_keys)}")
        return {}

    def ranges_root(self, manifest, env):
        """The dataset root the manifest's paths are relative to, relative
        to the mount root: the environment (LMDB_ENV) if its first path
        names a file there, else "." if it names one below DATA, else None."""
        with open(manifest) as f:
            for line in f:
                v = line.rstrip("\n").split("\t")
                if len(v) == 4:
                    for root, d in ((LMDB_ENV, env), (".", self.data)):
                        if os.path.isfile(os.path.join(d, v[1])):
                            return root
                    return None
        return None

    def epochs(self):
        """The job's epochs in the scenario running: job.scenario_epochs
        may cut one short (direct reading of an LMDB through page faults
        takes 18 minutes an epoch at 250 IOPS, and epoch 0 is what it is
        compared on)."""
        j = self.cfg["job"]
        return j.get("scenario_epochs", {}).get(getattr(self, "scenario", None),
                                                j.get("epochs", 2))

    def run_one(self, sc, rep):
        self.scenario = sc
        r = {"scenario": sc, "rep": rep,
             "started": datetime.datetime.now().isoformat(timespec="seconds")}
        drop_caches()
        cg_write(self.st, "memory", "memory.max_usage_in_bytes", 0)
        fail0 = cg_read(self.st, "memory", "memory.failcnt")
        reqs0, bytes0 = loop_stat(self.st)
        memory = cgroup_memory.Sampler(self.st["cgroups"]["memory"]).start()
        t0 = time.perf_counter()
        fn = {"local-warm": self.sc_local_warm, "local-budget": self.sc_local_budget,
              "direct": self.sc_direct,
              "copy-first": self.sc_copy_first, "rclone": self.sc_rclone,
              "clairfs-unregistered": self.sc_clairfs,
              "clairfs-unregistered-detected": lambda r: self.sc_clairfs(r, detect=True),
              "clairfs-registered": lambda r: self.sc_clairfs(r, "job"),
              "clairfs-registered-train": lambda r: self.sc_clairfs(r, "job"),
              "clairfs-registered-push": lambda r: self.sc_clairfs(r, "job", push=True),
              "clairfs-registered-handover": lambda r: self.sc_clairfs(r, "job", handover=True),
              "clairfs-registered-no-open-push":
                  lambda r: self.sc_clairfs(r, "job", open_push=False),
              "clairfs-ssd-registered-no-open-push":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, open_push=False),
              "clairfs-registered-no-one-copy":
                  lambda r: self.sc_clairfs(r, "job", one_copy=False),
              "clairfs-registered-fanotify":
                  lambda r: self.sc_clairfs(r, "job", opens="fanotify"),
              "clairfs-ssd-registered-fanotify":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, opens="fanotify"),
              "clairfs-unregistered-no-one-copy": lambda r: self.sc_clairfs(r, one_copy=False),
              "clairfs-registered-trainval": lambda r: self.sc_clairfs(r, "trainval"),
              "clairfs-ssd-unregistered": lambda r: self.sc_clairfs(r, ssd=True),
              "clairfs-ssd-registered": lambda r: self.sc_clairfs(r, "job", ssd=True),
              "clairfs-registered-wrong-seed": lambda r: self.sc_clairfs(r, "wrong"),
              "clairfs-registered-blksize-1m":
                  lambda r: self.sc_clairfs(r, "job", blksize="1M"),
              "clairfs-ssd-registered-blksize-1m":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, blksize="1M"),
              "clairfs-ssd-staged": lambda r: self.sc_clairfs(r, "job", ssd=True, stage=True),
              "clairfs-ssd-unregistered-no-drop-behind":
                  lambda r: self.sc_clairfs(r, ssd=True, drop_behind=False),
              "clairfs-ssd-registered-no-drop-behind":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, drop_behind=False),
              "clairfs-registered-dev-fuse": lambda r: self.sc_clairfs(r, "job", io_uring="off"),
              "clairfs-ssd-registered-dev-fuse":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, io_uring="off"),
              "clairfs-ssd-registered-no-passthrough":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, passthrough=False),
              "clairfs-ssd-registered-ra-128k":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, readahead_kb=128),
              "clairfs-ssd-registered-check-once":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, ssd_check="once"),
              "clairfs-ssd-registered-check-once-no-drop-behind":
                  lambda r: self.sc_clairfs(r, "job", ssd=True, ssd_check="once",
                                            drop_behind=False),
              }[sc]
        try:
            r.update(fn(r))
        finally:
            held = memory.stop()
        r["run_s"] = round(time.perf_counter() - t0, 3)
        if held:
            # The split at the cgroup's fullest: the dataset held once or twice.
            r["mem_held"] = held
            log(f"    memory cgroup at its fullest ({held['peak_at_s']:.0f} s): "
                f"{held['peak_file'] >> 20} MiB page cache (shmem {held['peak_shmem'] >> 20}) "
                f"+ {held['peak_anon'] >> 20} MiB anonymous")
        # The whole run's reads of the shared FS: mount, scans, copy, every
        # job, and whatever the daemon fetched until it was unmounted.
        reqs1, bytes1 = loop_stat(self.st)
        r["run_shared_fs_bytes"] = bytes1 - bytes0
        r["run_shared_fs_reads"] = reqs1 - reqs0
        if "jobs" in r:
            # Several jobs: from the moment they were let go to the last one's end.
            r["total_s"] = round(r["span_s"], 3)
        else:
            # With a validation pass, an epoch's time includes it.
            r["total_s"] = round(r.get("copy_s", 0) + sum(e.get("epoch_with_val_s", e["wall_s"])
                                                          for e in r["epochs"]), 3)
        r["mem_max_usage"] = cg_read(self.st, "memory", "memory.max_usage_in_bytes")
        r["mem_failcnt"] = cg_read(self.st, "memory", "memory.failcnt") - fail0
        return r

    def main(self):
        a, cfg = self.a, self.cfg
        self.scenarios = a.scenarios.split(",") if a.scenarios else cfg["scenarios"]
        bad = [s for s in self.scenarios if s not in self.known]
        if bad:
            sys.exit(f"scenarios: unknown scenario(s) {bad}; known: {self.known}")
        reps = a.reps or cfg.get("repetitions", 1)
        if framework_of(cfg) not in FRAMEWORKS:
            sys.exit(f"scenarios: job.framework {framework_of(cfg)!r}: expected one of {FRAMEWORKS}")
        for kind in PACKED:
            if framework_of(cfg) == kind and dataset_kind(cfg) != kind:
                sys.exit(f'scenarios: a {kind} job needs dataset.kind "{kind}"')
            if dataset_kind(cfg) == kind and framework_of(cfg) != kind:
                sys.exit(f'scenarios: dataset.kind "{kind}" is read by job.framework '
                         f'"{kind}" only')
        if framework_of(cfg) in VENV_MODULES:
            check_frameworks_python(framework_of(cfg))
        unavailable = self.availability()
        for sc, why in unavailable.items():
            log(f"{sc}: unavailable: {why}")
        runnable = [s for s in self.scenarios if s not in unavailable]

        base = a.workdir or "/var/tmp"
        self.work = tempfile.mkdtemp(prefix="clairfs-bench.", dir=base)
        state = os.path.join(self.work, "slowfs.state")
        sf = cfg["slowfs"]
        try:
            self.st = slowfs.up(state, self.work, sf.get("image_size", "3G"),
                                sf.get("bps", "20M"), sf.get("iops", 250),
                                sf.get("mem", "640M"))
            log(f"slow FS: {self.st['loop']} ({self.st['majmin']}, direct-io "
                f"{self.st['direct_io']}), {self.st['bps'] / 1e6:g} MB/s, "
                f"{self.st['iops']} IOPS, memory cgroup {self.st['mem'] >> 20} MiB")
            self.data = os.path.join(self.st["mnt"], "data")
            info = self.info = self.generate_dataset()
            for sc, why in self.prepare_ranges(runnable).items():
                log(f"{sc}: unavailable: {why}")
                unavailable[sc] = why
            runnable = [s for s in runnable if s not in unavailable]
            if "local-warm" in runnable or "local-budget" in runnable:
                self.local = os.path.join(self.work, "local")
                subprocess.run(["cp", "-a", self.data, self.local], check=True)
            self.prepare(state, info)
            runs = []
            self.failures = []
            for rep in range(reps):
                order = runnable if rep % 2 == 0 else runnable[::-1]
                for sc in order:
                    log(f"rep {rep + 1}/{reps}: {sc}")
                    try:
                        runs.append(self.run_one(sc, rep))
                    except RuntimeError as e:
                        # One failed run (a job killed by the memory
                        # cgroup's OOM killer, say, or a registration an
                        # older clairfs refuses) is reported, not fatal.
                        lines = [l for l in str(e).strip().splitlines() if l.strip()]
                        # What failed (first line) and why (last line: the
                        # daemon's reason, the job's exception).
                        msg = " ".join(dict.fromkeys([lines[0], lines[-1]]) if lines
                                       else ["failed"])[:400]
                        log(f"    FAILED: {msg}")
                        self.failures.append({"scenario": sc, "rep": rep, "error": msg})
            return self.report(info, runs, unavailable, reps)
        finally:
            abort_cleanup()
            if self.st:
                kill_cgroup_procs(self.st)
            slowfs.down(state, quiet=True)
            shutil.rmtree(self.work, ignore_errors=True)

    def generate_dataset(self):
        """Writes the config's dataset into the slow FS (self.data), every
        invocation afresh (writes are not throttled; reads are): class folders
        of JPEGs (gen_dataset.py) or, with dataset.kind "tfrecord", TFRecord
        shards (gen_tfrecord.py), or "lmdb", one LMDB environment
        (gen_lmdb.py). Returns its figures, "gen_s" added."""
        ds = self.cfg["dataset"]
        t0 = time.perf_counter()
        if dataset_kind(self.cfg) in PACKED:
            info = gen_packed(dataset_kind(self.cfg), self.data, ds)
            info["gen_s"] = round(time.perf_counter() - t0, 1)
            log(f"dataset: {dataset_text(info)} ({info['gen_s']} s)")
            return info
        info = gen_dataset.generate(self.data, ds.get("files", 10000),
                                    ds.get("classes", 100),
                                    ds.get("mean_kb", 110),
                                    ds.get("median_kb", 93),
                                    ds.get("seed", 0),
                                    pool_n=ds.get("pool", 96),
                                    style=ds.get("style", "imagenet"),
                                    val_files=ds.get("val_files", 0))
        info["gen_s"] = round(time.perf_counter() - t0, 1)
        split = (f" (train {info['train_files']}, val {info['val_files']})"
                 if "val_files" in info else "")
        log(f"dataset: {info['files']} files{split}, {info['bytes'] / 1e9:.2f} GB, "
            f"mean {info['mean'] / 1e3:.0f} KB, median {info['median'] / 1e3:.0f} KB "
            f"({info['gen_s']} s)")
        return info

    def prepare(self, state, info):
        """Called once the slow FS (its state file STATE) and the dataset
        exist, before the first run: a subclass's own set-up (cluster.py's
        nodes), undone by slowfs.down. Nothing here."""

    # --- output -----------------------------------------------------------
    def output_names(self):
        """(OUT/<date>-<config> or OUT/--out-name, the exact command, the
        git revision) of this invocation's results."""
        a, cfg = self.a, self.cfg
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
        name = cfg.get("name", os.path.splitext(os.path.basename(a.config))[0])
        os.makedirs(a.out, exist_ok=True)
        prefix = os.path.join(a.out, f"{stamp}-{name}" if not a.out_name else a.out_name)
        env = ""
        if framework_of(cfg) in VENV_MODULES:
            env = f"CLAIRFS_FRAMEWORKS_PYTHON={shlex.quote(frameworks_python())} "
        command = "sudo " + env + " ".join(shlex.quote(x) for x in [PY] + sys.argv)
        rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        return prefix, command, rev

    def report(self, info, runs, unavailable, reps):
        a, cfg = self.a, self.cfg
        prefix, command, rev = self.output_names()
        floor = floors(info, self.st)
        summary = summarize(self.scenarios, runs, unavailable, info["files"], info["bytes"],
                            floor)
        failures = getattr(self, "failures", [])
        out = {"command": command, "git": rev, "config": cfg, "dataset": info,
               "slowfs": {k: self.st[k] for k in ("bps", "iops", "mem", "direct_io")},
               "repetitions": reps, "unavailable": unavailable, "runs": runs,
               "failures": failures, "summary": summary, "floors": floor}
        with open(prefix + ".json", "w") as f:
            json.dump(out, f, indent=1)
        plot(prefix + ".png", self.scenarios, runs, cfg, info, floor)
        table = markdown(summary, self.scenarios, unavailable, cfg)
        table += floor_lines(floor, summary, self.scenarios, cfg)
        table += transport_lines(self.scenarios, runs)
        for f in failures:
            table += f"\n\nFailed run: {f['scenario']} rep {f['rep'] + 1}: `{f['error']}`"
        # Runs per scenario are in the table's "runs" column.
        print(table if a.full_table else short_table(summary, self.scenarios)
              + floor_lines(floor, summary, self.scenarios, cfg)
              + transport_lines(self.scenarios, runs))
        if failures and not a.full_table:
            print("\nfailed runs:")
            for f in failures:
                print(f"  {f['scenario']} rep {f['rep'] + 1}: {f['error']}")
        print(f"\nresults: {prefix}.json\nplot:    {prefix}.png")
        if not a.no_results_md:
            append_results(os.path.join(HERE, "RESULTS.md"), command, rev, info,
                           self.st, cfg, reps, table, prefix, runs)
        return out


def transport_lines(scenarios, runs):
    """Which way each clairfs scenario's requests came (status transport)."""
    seen = {}
    for r in runs:
        if r.get("transport"):
            seen.setdefault(r["scenario"], set()).add(r["transport"])
    if not seen:
        return ""
    return "\n\nTransport: " + ", ".join(f"{sc} {'/'.join(sorted(seen[sc]))}"
                                          for sc in scenarios if sc in seen) + "."


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run_epochs(r):
    """Every epoch record of a run, of every job."""
    if "jobs" in r:
        return [ep for j in r["jobs"] for ep in j["epochs"]]
    return r["epochs"]


def epoch_summary(eps_runs, files):
    """Per-epoch medians (and min/max of wall time) over runs, each run one
    list of epoch records of one job."""
    ne = len(eps_runs[0])

    def col(key, i, f=lambda v: v):
        return [f(eps[i][key]) for eps in eps_runs if key in eps[i]]
    e = {"epoch_s": [med(col("wall_s", i)) for i in range(ne)],
         "epoch_s_min": [min(col("wall_s", i)) for i in range(ne)],
         "epoch_s_max": [max(col("wall_s", i)) for i in range(ne)],
         "samples_per_s": [med(col("samples_per_s", i)) for i in range(ne)],
         "first_batch_s": [med(col("first_batch_s", i)) for i in range(ne)],
         "shared_fs_bytes": [med(col("shared_fs_bytes", i)) for i in range(ne)],
         "shared_fs_reads": [med(col("shared_fs_reads", i)) for i in range(ne)],
         "shared_fs_reads_per_file": [med(col("shared_fs_reads", i, lambda v: v / files))
                                      for i in range(ne)],
         "outside_job_ms_per_file": [med([eps[i].get("outside_job_cpu_s", 0) * 1e3 / files
                                          for eps in eps_runs]) for i in range(ne)]}
    if "wall_less_switch_s" in eps_runs[0][0]:
        # keras_job.py: tf.data's iterator teardown at an epoch's start
        # (keras_job.py's docstring says why it is apart).
        e["iterator_switch_s"] = [med(col("iterator_switch_s", i)) for i in range(ne)]
        e["epoch_less_switch_s"] = [med(col("wall_less_switch_s", i)) for i in range(ne)]
    if "val_wall_s" in eps_runs[0][0]:
        e["val_s"] = [med(col("val_wall_s", i)) for i in range(ne)]
        e["epoch_with_val_s"] = [med(col("epoch_with_val_s", i)) for i in range(ne)]
        e["epoch_with_val_s_min"] = [min(col("epoch_with_val_s", i)) for i in range(ne)]
        e["epoch_with_val_s_max"] = [max(col("epoch_with_val_s", i)) for i in range(ne)]
        e["val_shared_fs_bytes"] = [med(col("val_shared_fs_bytes", i)) for i in range(ne)]
    if "dataset_resident_bytes" in eps_runs[0][0]:
        e["dataset_resident_bytes"] = [med(col("dataset_resident_bytes", i)) for i in range(ne)]
    if "clairfs_counts" in eps_runs[0][0]:
        e["per_file"] = [per_file([eps[i] for eps in eps_runs], files) for i in range(ne)]
    return e


# What a file cost the mount in one epoch (issue 19's table): the kernel's
# requests by kind, page-cache pushes and drops, the daemon's wake-ups and
# CPU, each per file, medians over runs.
PER_FILE_KEYS = ["req_lookup", "req_getattr", "req_open", "req_read", "req_release",
                 "pushed", "open_pushes", "page_drops"]


def per_file(recs, files):
    out = {}
    for k in PER_FILE_KEYS:
        out[k] = med([r["clairfs_counts"].get(k, 0) / files for r in recs])
    out["requests"] = med([sum(v for k, v in r["clairfs_counts"].items() if k.startswith("req_"))
                           / files for r in recs])
    out["wakeups"] = med([r.get("daemon_wakeups", 0) / files for r in recs])
    out["daemon_cpu_ms"] = med([r.get("daemon_cpu_s", 0) * 1e3 / files for r in recs])
    # The job's own CPU (its process and workers): a READ's page-cache
    # fill is the job's, a push's the daemon's.
    out["job_cpu_ms"] = med([r.get("job_cpu_s", 0) * 1e3 / files for r in recs])
    return out


def jobs_note(st):
    """One line of issue 24's per-job status: each job's mode and, per
    loader, its mode, match rate, opens and the draw offsets it followed."""
    out = []
    for j in st.get("jobs") or []:
        loaders = []
        for ld in j.get("loaders") or []:
            eps = ld.get("epochs") or []
            tf = any("tf_iterator" in ep for ep in eps)
            offs = [ep.get("tf_iterator") if tf else ep.get("draw_offset", ep.get("seed_epoch"))
                    for ep in eps]
            mr = ld.get("match_rate")
            # run_* count every epoch (newer clairfs); opens/matched the last.
            opened = (f"{ld['run_matched']}/{ld['run_opens']}" if "run_opens" in ld
                      else f"{ld.get('matched', '?')}/{ld.get('opens', '?')}")
            loaders.append(f"{ld.get('root') or '.'} {ld.get('mode')}"
                           + (f" {mr:.3f}" if isinstance(mr, (int, float)) else "")
                           + f" {opened}"
                           + (f" {'tf iterators' if tf else 'offsets'} {offs}" if offs else "")
                           + (f" warning: {ld['warning']}" if ld.get("warning") else "")
                           + (f" ({ld['reason']})" if ld.get("reason") else ""))
        out.append(f"{j.get('id')}: {j.get('mode')}"
                   + (f" ({j['reason']})" if j.get("reason") else "")
                   + (" [" + "; ".join(loaders) + "]" if loaders else ""))
    extra = [f"{k} {st[k]}" for k in ("retired", "other_opens") if k in st]
    return ", ".join(out) + (" (" + ", ".join(extra) + ")" if extra else "")


def floors(info, slow):
    """What no way of reaching the shared FS can beat in an epoch that reads
    the whole dataset once: its bytes at the read bandwidth, and its files
    at the read IOPS with one request per file. With a validation set the
    bandwidth floor is the whole dataset's (an epoch with its validation
    pass), train_bandwidth_floor_s the train part's."""
    if not slow or not slow.get("bps"):
        return None
    f = {"dataset_bytes": info["bytes"], "bps": slow["bps"],
         "bandwidth_floor_s": info["bytes"] / slow["bps"]}
    if slow.get("iops"):
        f["iops"] = slow["iops"]
        f["iops_floor_s"] = info["files"] / slow["iops"]
    if "train_bytes" in info:
        f["train_bandwidth_floor_s"] = info["train_bytes"] / slow["bps"]
    return f


def summarize(scenarios, runs, unavailable, files, dataset_bytes=None, floor=None):
    s = {}
    for sc in scenarios:
        if sc in unavailable:
            s[sc] = {"unavailable": unavailable[sc]}
            continue
        rs = [r for r in runs if r["scenario"] == sc]
        if not rs:
            continue
        if "jobs" in rs[0]:
            ids = [j["id"] for j in rs[0]["jobs"]]
            e = {"runs": len(rs), "jobs": {}}
            for jid in ids:
                eps_runs = [next(j["epochs"] for j in r["jobs"] if j["id"] == jid) for r in rs]
                je = epoch_summary(eps_runs, files)
                je["job_total_s"] = med([sum(ep["wall_s"] for ep in eps) for eps in eps_runs])
                e["jobs"][jid] = je
        else:
            e = {"runs": len(rs)}
            e.update(epoch_summary([r["epochs"] for r in rs], files))
        e.update({
            "others_cpu_s_max": max(max(ep.get("others_cpu_s", 0) for ep in run_epochs(r))
                                    for r in rs),
            "steal_s_max": max(max(ep.get("steal_s", 0) for ep in run_epochs(r)) for r in rs),
            "copy_s": med([r.get("copy_s") for r in rs]),
            "total_s": med([r["total_s"] for r in rs]),
            "mem_max_usage": max(r["mem_max_usage"] for r in rs),
            "mem_held_max": max((r["mem_held"]["peak_file_anon"] for r in rs
                                 if r.get("mem_held")), default=None),
            "run_shared_fs_bytes": med([r.get("run_shared_fs_bytes") for r in rs])})
        alone = [r["mem_daemon_alone"] for r in rs if r.get("mem_daemon_alone")]
        if alone and dataset_bytes:
            e["daemon_alone_x_dataset"] = [(x["file"] + x["anon"]) / dataset_bytes for x in alone]
            e["daemon_alone_less_libraries_x_dataset"] = [
                (x["file_less_libraries"] + x["anon"]) / dataset_bytes
                for x in alone if "file_less_libraries" in x]
        if dataset_bytes and e["mem_held_max"]:
            e["mem_held_x_dataset"] = e["mem_held_max"] / dataset_bytes
        if dataset_bytes and e["run_shared_fs_bytes"] is not None:
            e["run_shared_fs_x_dataset"] = e["run_shared_fs_bytes"] / dataset_bytes
            e["run_shared_fs_x_dataset_max"] = max(r["run_shared_fs_bytes"] / dataset_bytes
                                                   for r in rs if "run_shared_fs_bytes" in r)
        sts = [r["clairfs_status"] for r in rs if "clairfs_status" in r]
        if sts:
            e["clairfs"] = {
                "modes": sorted({x["mode"] for x in sts}),
                "match_rate": med([x["match_rate"] for x in sts]),
                "stall_s": med([x["stall_seconds"] for x in sts]),
                "backing_files": med([x["backing"]["files"] for x in sts]),
                "ram_capacity": sts[0]["ram"]["capacity"],
                "ram_hits": med([x["ram"]["hits"] for x in sts]),
                "ssd_hits": med([x.get("ssd", {}).get("hits", 0) for x in sts]),
                "ssd_capacity": sts[0].get("ssd", {}).get("capacity", 0),
                "ssd_error": sts[0].get("ssd", {}).get("error")}
            notes = list(dict.fromkeys(jobs_note(x) for x in sts if "jobs" in x))
            if notes:
                e["clairfs"]["jobs"] = notes
        s[sc] = e
    ref = s.get("local-warm", {}).get("total_s")
    dref = s.get("direct", {}).get("total_s")
    for sc, e in s.items():
        if "total_s" in e:
            e["x_local_warm"] = e["total_s"] / ref if ref else None
            e["x_direct"] = e["total_s"] / dref if dref else None
    # local-warm's copy is read into the page cache outside the cgroup, so
    # what its cgroup holds is the job's own (libraries, workers' shared
    # memory, heap): what another scenario holds beyond that is its copy of
    # the data, against the dataset's bytes.
    job_held = s.get("local-warm", {}).get("mem_held_max")
    for sc, e in s.items():
        if dataset_bytes and job_held and e.get("mem_held_max"):
            e["mem_held_beyond_job_x_dataset"] = (e["mem_held_max"] - job_held) / dataset_bytes
    # The done-when of issue 24: every epoch, its validation pass included,
    # against the warm local copy's same epoch.
    lw = s.get("local-warm", {}).get("epoch_with_val_s")
    for sc, e in s.items():
        if "epoch_with_val_s" in e and lw:
            e["epoch_with_val_x_local_warm"] = [a / b if a and b else None
                                                for a, b in zip(e["epoch_with_val_s"], lw)]
    # Epoch 0 against the bandwidth floor (with a validation pass, the
    # epoch with it against the whole dataset's), every epoch against the
    # warm local copy's same epoch.
    lwe = s.get("local-warm", {}).get("epoch_s")
    for sc, e in s.items():
        if "epoch_s" not in e:
            continue
        if floor:
            if "epoch_with_val_s" in e:
                e0, fl = e["epoch_with_val_s"][0], floor["bandwidth_floor_s"]
            else:
                e0 = e["epoch_s"][0]
                fl = floor.get("train_bandwidth_floor_s", floor["bandwidth_floor_s"])
            e["epoch0_x_bandwidth_floor"] = e0 / fl if e0 and fl else None
        if lwe:
            e["epoch_x_local_warm"] = [a / b if a and b else None
                                       for a, b in zip(e["epoch_s"], lwe)]
        lbe = s.get("local-budget", {}).get("epoch_s")
        if lbe:
            e["epoch_x_local_budget"] = [a / b if a and b else None
                                         for a, b in zip(e["epoch_s"], lbe)]
        lws = s.get("local-warm", {}).get("epoch_less_switch_s")
        if lws and "epoch_less_switch_s" in e:
            e["epoch_less_switch_x_local_warm"] = [a / b if a and b else None for a, b
                                                   in zip(e["epoch_less_switch_s"], lws)]
    lwj = s.get("local-warm", {}).get("jobs")
    for sc, e in s.items():
        for jid, je in (e.get("jobs") or {}).items():
            ref_e = (lwj or {}).get(jid, {}).get("epoch_s")
            je["x_local_warm"] = ([a / b if a and b else None for a, b in zip(je["epoch_s"], ref_e)]
                                  if ref_e else None)
    return s


def floor_lines(floor, summary, scenarios, cfg):
    """Below the table: the set-up's floors, each scenario's epoch 0 against
    the bandwidth floor and its epochs against the warm local copy's."""
    if not floor:
        return ""
    rows = [sc for sc in scenarios if "epoch_s" in (summary.get(sc) or {})]
    ne = cfg["job"].get("epochs", 2)
    ep = "/".join(f"e{i}" for i in range(ne))
    text = (f"\n\nFloors: {floor['dataset_bytes'] / 1e9:.3f} GB / {floor['bps'] / 1e6:g} MB/s "
            f"= {floor['bandwidth_floor_s']:.1f} s (bandwidth)")
    if "train_bandwidth_floor_s" in floor:
        text += f", train part alone {floor['train_bandwidth_floor_s']:.1f} s"
    if "iops_floor_s" in floor:
        text += f"; {floor['iops_floor_s']:.1f} s at {floor['iops']} IOPS and one read per file"
    text += "."
    if rows:
        sw = any("epoch_less_switch_s" in summary[sc] for sc in rows)
        lb = any("epoch_x_local_budget" in summary[sc] for sc in rows)
        text += ("\n\n| scenario | epoch 0 × bandwidth floor | epoch × local-warm "
                 f"({ep}) |"
                 + (f" epoch × local-budget ({ep}) |" if lb else "")
                 + (f" tf.data iterator switch s ({ep}) | epoch less switch s ({ep}) "
                    f"| epoch less switch × local-warm ({ep}) |" if sw else "")
                 + "\n|---|---|---|" + ("---|" if lb else "") + ("---|---|---|" if sw else ""))
        for sc in rows:
            e = summary[sc]
            text += (f"\n| {sc} | {one(e.get('epoch0_x_bandwidth_floor'), '{:.2f}')} "
                     f"| {fmt(e.get('epoch_x_local_warm') or [None] * ne, '{:.2f}')} |")
            if lb:
                text += f" {fmt(e.get('epoch_x_local_budget') or [None] * ne, '{:.2f}')} |"
            if sw:
                text += (f" {fmt(e.get('iterator_switch_s') or [None] * ne)} "
                         f"| {fmt(e.get('epoch_less_switch_s') or [None] * ne)} "
                         f"| {fmt(e.get('epoch_less_switch_x_local_warm') or [None] * ne, '{:.2f}')} |")
    return text


def fmt(xs, f="{:.1f}"):
    return " / ".join("–" if x is None else f.format(x) for x in xs)


def one(x, f):
    return "–" if x is None else f.format(x)


def ranged(m, lo, hi):
    return " / ".join(f"{a:.1f}" if b == c else f"{a:.1f} ({b:.1f}–{c:.1f})"
                      for a, b, c in zip(m, lo, hi))


def markdown(summary, scenarios, unavailable, cfg):
    if any("jobs" in (summary.get(sc) or {}) for sc in scenarios):
        lines = markdown_jobs(summary, scenarios, cfg)
    else:
        lines = markdown_one(summary, scenarios, cfg)
    cl = [sc for sc in scenarios if "clairfs" in summary.get(sc, {})]
    if cl:
        has_jobs = any("jobs" in summary[sc]["clairfs"] for sc in cl)
        lines += ["", "| clairfs scenario | mode | match rate | stall s | backing-store file reads "
                  "(all epochs) | RAM hits | RAM budget MB | SSD hits | SSD budget MB |"
                  + (" jobs (status) |" if has_jobs else ""),
                  "|---|---|---|---|---|---|---|---|---|" + ("---|" if has_jobs else "")]
        for sc in cl:
            c = summary[sc]["clairfs"]
            lines.append(f"| {sc} | {', '.join(c['modes'])} | {one(c['match_rate'], '{:.3f}')} "
                         f"| {c['stall_s']:.1f} | {c['backing_files']:.0f} | {c['ram_hits']:.0f} "
                         f"| {c['ram_capacity'] / 1e6:.0f} "
                         f"| {c.get('ssd_hits', 0):.0f} "
                         f"| {(c.get('ssd_capacity') or 0) / 1e6:.0f} |"
                         + (f" {' / '.join(c.get('jobs', ['–']))} |" if has_jobs else ""))
    pf = [sc for sc in scenarios if (summary.get(sc) or {}).get("per_file")]
    if pf:
        lines += ["", "Per file, each epoch (medians over runs; FUSE requests from the "
                  "daemon's status, wake-ups are its threads' voluntary context switches):",
                  "", "| scenario | epoch | requests | LOOKUP | GETATTR | OPEN | READ | RELEASE "
                  "| pushed ahead | pushed at open | dropped | daemon wake-ups | daemon CPU ms "
                  "| job CPU ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for sc in pf:
            for i, p in enumerate(summary[sc]["per_file"]):
                lines.append(f"| {sc} | {i} | {p['requests']:.2f} | {p['req_lookup']:.2f} "
                             f"| {p['req_getattr']:.2f} | {p['req_open']:.2f} | {p['req_read']:.2f} "
                             f"| {p['req_release']:.2f} | {p['pushed']:.2f} "
                             f"| {p.get('open_pushes', 0):.2f} | {p['page_drops']:.2f} "
                             f"| {p['wakeups']:.2f} | {p['daemon_cpu_ms']:.3f} "
                             f"| {p.get('job_cpu_ms', 0):.2f} |")
    return "\n".join(lines)


def markdown_one(summary, scenarios, cfg):
    ne = cfg["job"].get("epochs", 2)
    ep = "/".join(f"e{i}" for i in range(ne))
    val = any("val_s" in (summary.get(sc) or {}) for sc in scenarios)
    # A validation pass adds its columns at the end, so that the columns
    # every run has keep their places.
    extra_h = (f" val s ({ep}) | epoch+val s ({ep}) | epoch+val × local-warm ({ep}) "
               f"| shared-FS read over the run / dataset |") if val else ""
    lines = [f"| scenario | runs | epoch s ({ep}) | samples/s ({ep}) | first batch s ({ep}) "
             f"| shared-FS MB ({ep}) | shared-FS reads/file ({ep}) | copy s | total s | × local-warm | × direct "
             f"| outside-job CPU ms/file ({ep}) | others' CPU s (max/epoch) | host steal s (max/epoch) |"
             + extra_h,
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" * 4 if val else "")]
    for sc in scenarios:
        e = summary.get(sc)
        if e is None:
            continue
        if "unavailable" in e:
            lines.append(f"| {sc} | – | unavailable: {e['unavailable']} |  |  |  |  |  |  |  |  |  |  |  |"
                         + ("  |  |  |  |" if val else ""))
            continue
        rng = ranged(e["epoch_s"], e["epoch_s_min"], e["epoch_s_max"])
        extra = ""
        if val:
            extra = (f" {fmt(e.get('val_s', []))} "
                     f"| {ranged(e['epoch_with_val_s'], e['epoch_with_val_s_min'], e['epoch_with_val_s_max'])} "
                     f"| {fmt(e.get('epoch_with_val_x_local_warm') or [None] * ne, '{:.2f}')} "
                     f"| {one(e.get('run_shared_fs_x_dataset'), '{:.3f}')} |")
        lines.append(
            f"| {sc} | {e['runs']} | {rng} | {fmt(e['samples_per_s'], '{:.0f}')} "
            f"| {fmt(e['first_batch_s'])} "
            f"| {fmt([b / 1e6 for b in e['shared_fs_bytes']], '{:.0f}')} "
            f"| {fmt(e['shared_fs_reads_per_file'], '{:.2f}')} "
            f"| {one(e['copy_s'], '{:.1f}')} | {e['total_s']:.1f} "
            f"| {one(e['x_local_warm'], '{:.2f}')} "
            f"| {one(e['x_direct'], '{:.2f}')} "
            f"| {fmt(e['outside_job_ms_per_file'], '{:.2f}')} | {e['others_cpu_s_max']:.1f} "
            f"| {e.get('steal_s_max', 0):.1f} |" + extra)
    return lines


def markdown_jobs(summary, scenarios, cfg):
    """Several jobs at once: a row per job; the run's figures (span,
    shared-FS bytes over the run) on every row of its scenario."""
    ne = cfg["job"].get("epochs", 2)
    ep = "/".join(f"e{i}" for i in range(ne))
    lines = [f"| scenario | job | runs | epoch s ({ep}) | samples/s ({ep}) | first batch s ({ep}) "
             f"| epoch × local-warm ({ep}) | shared-FS MB, all jobs ({ep}) | span s | × local-warm "
             f"| shared-FS MB over the run | ÷ dataset (max) | others' CPU s (max/epoch) "
             f"| host steal s (max/epoch) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for sc in scenarios:
        e = summary.get(sc)
        if e is None:
            continue
        if "unavailable" in e:
            lines.append(f"| {sc} | – | – | unavailable: {e['unavailable']} |  |  |  |  |  |  |  |  |  |  |")
            continue
        for jid, je in e["jobs"].items():
            lines.append(
                f"| {sc} | {jid} | {e['runs']} "
                f"| {ranged(je['epoch_s'], je['epoch_s_min'], je['epoch_s_max'])} "
                f"| {fmt(je['samples_per_s'], '{:.0f}')} | {fmt(je['first_batch_s'])} "
                f"| {fmt(je.get('x_local_warm') or [None] * ne, '{:.2f}')} "
                f"| {fmt([b / 1e6 for b in je['shared_fs_bytes']], '{:.0f}')} "
                f"| {e['total_s']:.1f} | {one(e['x_local_warm'], '{:.2f}')} "
                f"| {one(e['run_shared_fs_bytes'] and e['run_shared_fs_bytes'] / 1e6, '{:.0f}')} "
                f"| {one(e.get('run_shared_fs_x_dataset'), '{:.3f}')} "
                f"({one(e.get('run_shared_fs_x_dataset_max'), '{:.3f}')}) "
                f"| {e['others_cpu_s_max']:.1f} | {e.get('steal_s_max', 0):.1f} |")
    return lines


def short_table(summary, scenarios):
    """A terminal-width summary: medians per epoch, ratios on total time."""
    if any("jobs" in (summary.get(sc) or {}) for sc in scenarios):
        return short_table_jobs(summary, scenarios)
    val = any("val_s" in (summary.get(sc) or {}) for sc in scenarios)
    rows = [f"{'scenario':<28}{'epoch s':>16}{'samples/s':>14}{'shared-FS MB':>16}"
            f"{'shared-FS reads':>22}{'total s':>9}{'x ceiling':>10}"
            + (f"{'epoch+val s':>22}{'x local-warm':>20}{'run/dataset':>13}" if val else "")]
    for sc in scenarios:
        e = summary.get(sc)
        if e is None:
            rows.append(f"{sc:<28}  no successful run")
            continue
        if "unavailable" in e:
            rows.append(f"{sc:<28}  unavailable: {e['unavailable']}")
            continue
        mb = [b / 1e6 for b in e["shared_fs_bytes"]]
        row = (f"{sc:<28}{fmt(e['epoch_s']):>16}{fmt(e['samples_per_s'], '{:.0f}'):>14}"
               f"{fmt(mb, '{:.0f}'):>16}"
               f"{fmt(e.get('shared_fs_reads') or [None] * len(mb), '{:.0f}'):>22}"
               f"{e['total_s']:>9.1f}{one(e['x_local_warm'], '{:.2f}'):>10}")
        if val:
            xs = e.get("epoch_with_val_x_local_warm") or [None] * len(e["epoch_s"])
            row += (f"{fmt(e.get('epoch_with_val_s', [])):>22}{fmt(xs, '{:.2f}'):>20}"
                    f"{one(e.get('run_shared_fs_x_dataset'), '{:.3f}'):>13}")
        rows.append(row)
    return "\n".join(rows)


def short_table_jobs(summary, scenarios):
    rows = [f"{'scenario':<24}{'job':>5}{'epoch s':>18}{'x local-warm':>16}{'span s':>9}"
            f"{'shared-FS MB (run)':>20}{'run/dataset':>13}"]
    for sc in scenarios:
        e = summary.get(sc)
        if e is None:
            rows.append(f"{sc:<24}  no successful run")
            continue
        if "unavailable" in e:
            rows.append(f"{sc:<24}  unavailable: {e['unavailable']}")
            continue
        for jid, je in e["jobs"].items():
            xs = je.get("x_local_warm") or [None] * len(je["epoch_s"])
            rows.append(f"{sc:<24}{jid:>5}{fmt(je['epoch_s']):>18}{fmt(xs, '{:.2f}'):>16}"
                        f"{e['total_s']:>9.1f}"
                        f"{one(e['run_shared_fs_bytes'] and e['run_shared_fs_bytes'] / 1e6, '{:.0f}'):>20}"
                        f"{one(e.get('run_shared_fs_x_dataset'), '{:.3f}'):>13}")
    return "\n".join(rows)


def series(runs, sc):
    """(label, [epoch records of each run]) per job of a scenario's runs."""
    rs = [r for r in runs if r["scenario"] == sc]
    if not rs:
        return []
    if "jobs" in rs[0]:
        return [(f"{sc} {j['id']}", [next(x["epochs"] for x in r["jobs"] if x["id"] == j["id"])
                                     for r in rs]) for j in rs[0]["jobs"]]
    return [(sc, [r["epochs"] for r in rs])]


def pyplot():
    """matplotlib.pyplot drawing to files, or None (and a note) without it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot (bash scripts/install-deps.sh bench)")
        return None
    return plt


def plot(path, scenarios, runs, cfg, info, floor=None):
    """figure()'s plot written to PATH (a PNG), where matplotlib is."""
    plt = pyplot()
    if plt is None:
        return
    fig = figure(plt, scenarios, runs, cfg, info, floor)
    if fig is None:
        return
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure(plt, scenarios, runs, cfg, info, floor=None):
    """Per-epoch time as grouped bars: one group per scenario (or job), one
    bar per epoch at the median over the repetitions, a dot for each
    repetition; the bandwidth floor and the warm local copy's median epoch
    as reference lines. Lower is better; a bar under the local line beats a
    copy on local disk. None when there is nothing to draw."""
    groups = [(label, eps_runs) for sc in scenarios for label, eps_runs in series(runs, sc)]
    if not groups:
        return None
    ne = max(len(eps_runs[0]) for _, eps_runs in groups)
    width = 0.8 / ne
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(groups) + 2), 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for e in range(ne):
        xs, meds = [], []
        for g, (_, eps_runs) in enumerate(groups):
            times = [eps[e]["wall_s"] for eps in eps_runs if len(eps) > e]
            if not times:
                continue
            x = g - 0.4 + width * (e + 0.5)
            xs.append(x)
            meds.append(med(times))
            ax.scatter([x] * len(times), times, color="black", s=8, alpha=0.6, zorder=3)
        ax.bar(xs, meds, width * 0.9, label=f"epoch {e}", color=colors[e % len(colors)])
    if floor and floor.get("bandwidth_floor_s"):
        ax.axhline(floor["bandwidth_floor_s"], color="firebrick", linestyle="--", linewidth=1,
                   label=f"bandwidth floor {floor['bandwidth_floor_s']:.1f} s")
    local = [eps[e]["wall_s"] for label, eps_runs in groups if label == "local-warm"
             for eps in eps_runs for e in range(len(eps))]
    if local:
        ax.axhline(med(local), color="dimgray", linestyle=":", linewidth=1.2,
                   label=f"warm local copy {med(local):.1f} s")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([label for label, _ in groups], rotation=20, ha="right", fontsize=8)
    ylab = "epoch time, s (median; dots: each repetition)"
    if info.get("val_files"):
        ylab = "epoch time incl. validation, s (median; dots: each repetition)"
    ax.set_ylabel(ylab)
    sf = cfg["slowfs"]
    ax.set_title(f"{info['files']} files, {info['bytes'] / 1e9:.2f} GB; slow FS "
                 f"{sf.get('bps')}B/s, {sf.get('iops')} IOPS; memcg {sf.get('mem')}",
                 fontsize=9)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.18)  # room for the legend above the bars
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", ncol=2)
    fig.tight_layout()
    return fig


def append_section(path, head, intro, prefix, rev, command, paragraph, table):
    """Appends to RESULTS.md (PATH) one invocation's section: its heading
    (the results' file name and the git revision), the exact command, a
    paragraph on the set-up and the table; first HEAD and INTRO unless the
    file has HEAD already."""
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    add = []
    if head not in text:
        add += ["", head, "", intro, ""]
    add += [f"### {os.path.basename(prefix)} (git {rev})", "",
            "```sh", command, "```", "", paragraph, "", table, ""]
    with open(path, "a") as f:
        f.write("\n".join(add) + "\n")


def append_results(path, command, rev, info, st, cfg, reps, table, prefix, runs):
    j = cfg["job"]
    others = max(max(ep.get("others_cpu_s", 0) for ep in run_epochs(r)) for r in runs) if runs else 0
    jobs = ""
    if cfg.get("jobs"):
        jobs = (f"; {len(cfg['jobs'])} jobs at once ("
                + ", ".join(f"{x['id']} seed {x.get('seed', j.get('seed', 0))}" for x in cfg["jobs"])
                + ")")
    paragraph = (
        f"Dataset {dataset_text(info)}; slow FS "
        f"{st['bps'] / 1e6:g} MB/s + {st['iops']} read IOPS (loop direct-io "
        f"{st['direct_io']}), memory cgroup {st['mem'] >> 20} MiB; {job_text(j)}"
        f"{jobs}; {reps} repetition(s), medians "
        f"(min–max when they differ). Largest CPU of processes outside the "
        f"cgroups in any epoch: {others:.1f} s. Raw: `{os.path.relpath(prefix, os.path.dirname(path))}.json`, "
        f"plot `{os.path.relpath(prefix, os.path.dirname(path))}.png`.")
    append_section(path, "## End-to-end training input (issue 4)",
                   "Produced by `bench/scenarios.py` (see bench/README.md); every "
                   "section below was appended by one invocation.",
                   prefix, rev, command, paragraph, table)


def job_text(j):
    """The job's shape, for the RESULTS.md paragraph."""
    if j.get("framework") == "tfrecord":
        return (f"tf.data job (tfrecord_job.py: list_files shuffle seed {j.get('seed', 0)}, "
                f"TFRecordDataset num_parallel_reads {j.get('parallel_reads', 8)}, map, batch "
                f"{j.get('batch', 64)}, prefetch), {j.get('epochs', 2)} epochs, step sleep "
                f"{j.get('step_sleep', 0)} s")
    if j.get("framework") == "lmdb":
        return (f"PyTorch job over LMDB (lmdb_job.py: txn.get per sample, env per worker "
                f"readonly, lock=False, readahead=False; DataLoader shuffle, batch "
                f"{j.get('batch', 64)}, {j.get('workers', 2)} workers, generator "
                f"{j.get('generator', 'explicit')}, seed {j.get('seed', 0)}), "
                f"{j.get('epochs', 2)} epochs, step sleep {j.get('step_sleep', 0)} s")
    if j.get("framework", "torch") == "keras":
        size = "x".join(str(x) for x in j.get("image_size", [64, 64]))
        vs = (f", validation_split {j['validation_split']}" if j.get("validation_split") else "")
        return (f"Keras job (keras_job.py: image_dataset_from_directory {size}, shuffle seed "
                f"{j.get('seed', 0)}{vs}, model.fit) batch {j.get('batch', 64)}, "
                f"{j.get('epochs', 2)} epochs, step sleep {j.get('step_sleep', 0)} s")
    return (f"job batch {j.get('batch', 64)}, {j.get('workers', 2)} workers, "
            f"{j.get('epochs', 2)} epochs, generator {j.get('generator', 'explicit')}, "
            f"transform {j.get('transform', 'rrc')}, step sleep {j.get('step_sleep', 0)} s")


def kill_cgroup_procs(st):
    """Kills processes left in our cgroups: only ones this run put there."""
    d = st.get("cgroups", {}).get("blkio")
    if not d or not os.path.isdir(d):
        return
    for _ in range(20):
        pids = open(os.path.join(d, "cgroup.procs")).read().split()
        if not pids:
            return
        for p in pids:
            try:
                os.kill(int(p), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def abort_cleanup():
    for p in list(RUNNING):
        if p.poll() is None:
            p.kill()
            p.wait()
    for m in list(MOUNTS):
        subprocess.run(["umount", "-l", m], capture_output=True)


def arg_parser(doc):
    """The options every harness built on Bench takes (DOC: its docstring)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--scenarios")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--out-name", help="file name prefix instead of <date>-<config>")
    ap.add_argument("--workdir", help="local-disk directory for scratch (default /var/tmp)")
    ap.add_argument("--no-results-md", action="store_true")
    ap.add_argument("--from-json", metavar="RESULT",
                    help="re-render table and plot of an earlier RESULT.json, run nothing")
    ap.add_argument("--io-uring-switch", choices=("on", "off", "keep"), default="on",
                    help="set the kernel's FUSE io_uring switch for the run and put it back "
                         "afterwards (on, the default: clairfs mounts take io_uring), or keep it")
    return ap


def run_bench(cls, a, prog):
    """Runs cls(a, config).main() as root, SIGTERM, SIGHUP and SIGINT
    turned into an exit so that its clean-up runs."""
    if os.geteuid() != 0:
        sys.exit(f"{prog}: needs root (loop device, mounts, cgroups, drop_caches)")
    if not os.path.exists("/dev/fuse"):
        sys.exit(f"{prog}: /dev/fuse is missing (modprobe fuse)")
    with open(a.config) as f:
        cfg = json.load(f)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)
    put_back = None
    try:
        put_back = uring_switch.set_for_run(a.io_uring_switch, log, prog)
        return cls(a, cfg).main()
    finally:
        uring_switch.put_back(put_back, log, prog)


def main():
    ap = arg_parser(__doc__)
    ap.add_argument("--full-table", action="store_true",
                    help="print the RESULTS.md table instead of the short one")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            d = json.load(f)
        cfg = d["config"]
        scs = a.scenarios.split(",") if a.scenarios else cfg["scenarios"]
        floor = floors(d["dataset"], d.get("slowfs"))
        summary = summarize(scs, d["runs"], d["unavailable"], d["dataset"]["files"],
                            d["dataset"]["bytes"], floor)
        plot(os.path.splitext(a.from_json)[0] + ".png", scs, d["runs"], cfg, d["dataset"], floor)
        print((markdown(summary, scs, d["unavailable"], cfg) if a.full_table
               else short_table(summary, scs)) + floor_lines(floor, summary, scs, cfg)
              + transport_lines(scs, d["runs"]))
        return
    run_bench(Bench, a, "scenarios")


if __name__ == "__main__":
    main()
