#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Samples as byte ranges of one large file, through a real mount, read by
a real torch DataLoader (ranges_job.py, run by the frameworks venv's
Python, CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python)
with python-lmdb and h5py from the package index. `clairfs ranges` writes
the manifest, the job is registered with layout "ranges", and clairfs
follows the sampler by the READs' offsets.

Cases (3 epochs each, shuffle=True with an explicit generator, 2 workers;
between epochs the job drops the file's pages from the page cache, as
memory pressure would, so every epoch's reads reach the mount):
- lmdb: 400 values of 20-60 KB inserted out of key order, read through
  LMDB's mmap (readahead=False: page faults of one page each);
- hdf5: 300 rows of 70000 bytes of a contiguous dataset, read with pread.
Each: every sample of every epoch byte-identical to what was written (its
SHA-1, whether read through READs or from pages clairfs pushed into the
page cache), each epoch yields every sample once, status clairvoyant into
the last epoch with at most one sample told unmatched an epoch, samples
pushed ahead without error (told and pushed together at least half of all
samples read) and, for LMDB's page faults, dropped behind the readers
(h5py: none), chunks fetched ahead of the READs by
the prediction, and each byte of the file from the backing store once over
the 3 epochs (RAM holds the chunks).
- lmdb_twice: two registered jobs (seeds 11 and 12) read one LMDB at once
  through a mount with 2 FUSE threads (each sample pushed, faulted and
  dropped by both at about the same time; a push from a READ's handler may
  take only one of the threads): both finish, every sample of every epoch
  byte-identical, no push error, and both jobs clairvoyant to the end (each
  worker claimed by its own job);
- lmdb_same_seed: the same with one seed for both jobs, each registered by
  clairfs.register() in its own process (one order: only the registering
  processes tell the jobs' READs apart): both clairvoyant to the end;
- refused: bad manifests (out-of-range offsets, a missing file, overlapping
  entries, unsorted entries, a declared sample count the entries do not
  fill, a registration whose n is not the manifest's count) fail the
  registration with EINVAL and a one-line reason in status; the mount keeps
  serving.

Exit 77 only without /dev/fuse or when the frameworks Python cannot import
torch, lmdb and h5py (in CI that fails instead: CI=true)."""
import errno
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

JOB = os.path.join(HERE, "ranges_job.py")
PY = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or "/opt/clairfs-venv/bin/python"
EPOCHS, SEED, BATCH, WORKERS = 3, 11, 8, 2
SEEDS_TWICE = {"a": 11, "b": 12}  # a sweep's two jobs


def job(cfg, what):
    r = subprocess.run([PY, JOB, json.dumps(cfg)], capture_output=True, text=True, timeout=900)
    ml.check(r.returncode == 0, f"{what}: the job failed ({r.returncode}): {r.stderr[-3000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def make_manifest(data, kind, out):
    if kind == "lmdb":
        args = ["ranges", "lmdb", os.path.join(data, "env"), "--root", data]
    else:
        args = ["ranges", "hdf5", os.path.join(data, "h5", "data.h5"), "--dataset", "x",
                "--root", data]
    r = ml.clairfs(*args, "--out", os.path.join(data, out))
    ml.check(r.returncode == 0, f"clairfs {' '.join(args)} failed: {r.stderr}")


def registration(**extra):
    return {"seed": extra.pop("seed", SEED), "generator": "explicit", "batch_size": BATCH, "num_workers": WORKERS,
            "epochs": EPOCHS, "torch_version": "2.7", "layout": "ranges",
            "manifest": "ranges.txt", **extra}


def check_epochs(epochs, sums, what):
    ml.check(len(epochs) == EPOCHS, f"{what}: {len(epochs)} epochs reported")
    for e in epochs:
        idx = [i for i, _ in e["samples"]]
        ml.check(sorted(idx) == list(range(len(sums))),
                 f"{what} epoch {e['epoch']}: {len(idx)} samples, {len(set(idx))} distinct")
        bad = [i for i, h in e["samples"] if h != sums[i]]
        ml.check(not bad, f"{what} epoch {e['epoch']}: samples {bad[:5]} differ from the data")


def case_kind(tmp, kind):
    data, mp = ml.make_dirs(tmp, f"data-{kind}", f"mnt-{kind}")
    if kind == "lmdb":
        cfg = {"write": os.path.join(data, "env"), "kind": "lmdb", "n": 400,
               "min": 20_000, "max": 60_000}
        big = os.path.join(data, "env", "data.mdb")
    else:
        cfg = {"write": os.path.join(data, "h5"), "kind": "hdf5", "n": 300, "row": 70_000}
        big = os.path.join(data, "h5", "data.h5")
    sums = job(cfg, f"{kind} write")[0]["sha1"]
    n = len(sums)
    make_manifest(data, kind, "ranges.txt")
    root = "env" if kind == "lmdb" else "h5"
    # --mem 64M holds files up to 4 MiB whole: the 15 MB file is held by chunk.
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect"):
        ml.register(mp, **registration())
        epochs = job({"read": os.path.join(mp, root), "kind": kind, "n": n, "seed": SEED,
                      "batch_size": BATCH, "num_workers": WORKERS, "epochs": EPOCHS,
                      "drop": True}, f"{kind} read")
        check_epochs(epochs, sums, kind)
        st = ml.status(mp)
        loader = st["jobs"][0]["loaders"][0]
        told, matched = loader["run_opens"], loader["run_matched"]
        ml.check(st["mode"] == "clairvoyant" and loader["epoch"] >= EPOCHS - 1,
                 f"{kind}: mode {st['mode']} ({st.get('reason')}) in epoch {loader['epoch']}")
        # The samples due next are pushed into the page cache, and a
        # sample whose first page the kernel kept makes no READ that
        # begins it: only some samples are told, each READ at the edge of
        # what was pushed, yet enough to follow every epoch.
        c = st["chunks"]
        pushed = c["pushed"]["samples"]
        # With the samples due pushed, a READ is rare (the reader at the
        # edge of what was pushed), so one stray READ at an epoch's turn
        # weighs a few percent: at most one unmatched an epoch.
        ml.check(told >= EPOCHS and told - matched <= EPOCHS,
                 f"{kind}: {matched} of {told} samples told matched ({n} samples a epoch)")
        ml.check(pushed > 0 and c["pushed"]["errors"] == 0 and told + pushed >= EPOCHS * n // 2,
                 f"{kind}: {pushed} samples pushed, {told} told, of {EPOCHS * n}: {c['pushed']}")
        ml.check(c["predicted"] > 0, f"{kind}: no chunk fetched by the prediction: {c}")
        # The samples read are dropped from the page cache behind the
        # readers (room for the pushes), each once an epoch at most.
        # Only a reader that faults page by page (LMDB's mmap) keeps what
        # it read mapped; h5py's preads leave it to the kernel's LRU.
        dropped = c["dropped"]
        ml.check(0 < dropped <= EPOCHS * n if kind == "lmdb" else dropped == 0,
                 f"{kind}: {dropped} samples dropped behind the readers, of {EPOCHS * n}")
        size = os.path.getsize(big)
        ml.check(st["backing"]["bytes"] <= size + (1 << 20),
                 f"{kind}: {st['backing']['bytes']} backing bytes for a {size}-byte file "
                 f"over {EPOCHS} epochs")
        ml.log(f"{kind}: {n} samples x {EPOCHS} epochs byte-identical; {matched}/{told} told "
               f"matched, {pushed} pushed ahead, {c['dropped']} dropped behind; "
               f"{c['predicted']} chunks predicted, "
               f"{c['ram_hits']} RAM hits of "
               f"{c['reads']} chunk reads; {st['backing']['bytes']} backing bytes of {size}")


def case_lmdb(tmp):
    case_kind(tmp, "lmdb")


def case_hdf5(tmp):
    case_kind(tmp, "hdf5")


def case_lmdb_twice(tmp):
    """Two registered jobs, seeds 11 and 12, read one LMDB at once through
    a mount with 2 FUSE threads: each sample is pushed, faulted and dropped
    by both jobs' followers at about the same time, and a push from a
    READ's handler may only take one of the two threads."""
    two_jobs(tmp, "twice", SEEDS_TWICE, self_registered=False)


def case_lmdb_same_seed(tmp):
    """A sweep of one seed: two jobs read one LMDB in one order, each
    registered by clairfs.register() in its own process. Their READs fit
    both jobs at the same places; the registering process is what tells
    them apart (credited to the nearest job, one job's reader moved the
    other's cursors, and one of the two fell back in 3 of 12 loaded runs)."""
    two_jobs(tmp, "same-seed", {"a": SEED, "b": SEED}, self_registered=True)


def two_jobs(tmp, name, seeds, self_registered):
    data, mp = ml.make_dirs(tmp, "data-" + name, "mnt-" + name)
    cfg = {"write": os.path.join(data, "env"), "kind": "lmdb", "n": 300,
           "min": 20_000, "max": 60_000}
    sums = job(cfg, f"{name} write")[0]["sha1"]
    make_manifest(data, "lmdb", "ranges.txt")
    read = {"read": os.path.join(mp, "env"), "kind": "lmdb", "n": len(sums), "seed": SEED,
            "batch_size": BATCH, "num_workers": WORKERS, "epochs": EPOCHS, "drop": True}
    # A failure here has come once in a few loaded runs and never when
    # watched: it shows the daemon's log and the jobs' status in full.
    log = os.path.join(tmp, f"{name}.log")
    with ml.mounted_logged(data, mp, log, "--mem", "64M", "--no-detect", "-t", "2",
                           also=lambda: f"jobs: {json.dumps(ml.status(mp).get('jobs'))}"):
        if not self_registered:
            for j, seed in seeds.items():
                ml.register(mp, **registration(job=j, seed=seed))
        reg = {j: {"register": {"root": mp, "manifest": "ranges.txt", "job": j}}
               if self_registered else {} for j in seeds}
        # The clairfs package of this source tree, as tests/python does.
        env = dict(os.environ, PYTHONPATH=os.path.join(ml.SOURCE_ROOT, "python"))
        procs = [subprocess.Popen([PY, JOB, json.dumps({**read, "seed": seed, **reg[j]})],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)
                 for j, seed in seeds.items()]
        for k, p in enumerate(procs):
            try:
                out, err = p.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                ml.check(False, f"{name}: job {k} still running after 600 s (a hung mount?)")
            ml.check(p.returncode == 0, f"{name}: job {k} failed ({p.returncode}): {err[-3000:]}")
            epochs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            check_epochs(epochs, sums, f"{name} job {k}")
        st = ml.status(mp)
        c = st["chunks"]
        ml.check(c["pushed"]["errors"] == 0, f"{name}: push errors: {c['pushed']}")
        # Each job's workers are its own: bound at registration to the
        # process that registered it, or else claimed by three READs in a
        # row that fit their job alone. Neither job's READs move the
        # other's cursors: both stay clairvoyant.
        modes = {j["id"]: [(ld["mode"], ld.get("reason")) for ld in j["loaders"]]
                 for j in st["jobs"]}
        ml.check(all(m == "clairvoyant" for ls in modes.values() for m, _ in ls),
                 f"{name}: {modes}")
        ml.log(f"{name}: 2 jobs x {len(sums)} samples x {EPOCHS} epochs byte-identical with 2 "
               f"FUSE threads; {c['pushed']['samples']} pushed, {c['dropped']} dropped, "
               f"modes {[ld['mode'] for j in st['jobs'] for ld in j['loaders']]}")


def case_refused(tmp):
    data, mp = ml.make_dirs(tmp, "data-refused", "mnt-refused")
    with open(os.path.join(data, "big.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    head = "clairfs-ranges 1\nsamples {}\n"
    bad = {
        "past the end": (head.format(1) + "0\tbig.bin\t1048000\t1000\n", "past the end"),
        "missing file": (head.format(1) + "0\tnone.bin\t0\t10\n", "'none.bin'"),
        "overlapping": (head.format(2) + "0\tbig.bin\t0\t100\n1\tbig.bin\t50\t100\n",
                        "overlap"),
        "unsorted": (head.format(2) + "1\tbig.bin\t0\t100\n0\tbig.bin\t100\t100\n",
                     "sample 1 where sample 0 was expected"),
        "count": (head.format(3) + "0\tbig.bin\t0\t100\n1\tbig.bin\t100\t100\n",
                  "declares 3 samples but has 2"),
    }
    for label, (text, _) in bad.items():
        with open(os.path.join(data, f"bad-{label.replace(' ', '-')}.txt"), "w") as f:
            f.write(text)
    with open(os.path.join(data, "good.txt"), "w") as f:
        f.write(head.format(2) + "0\tbig.bin\t0\t100\n1\tbig.bin\t100\t100\n")
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        for label, (_, words) in bad.items():
            try:
                ml.register(mp, seed=1, layout="ranges",
                            manifest=f"bad-{label.replace(' ', '-')}.txt")
                ml.check(False, f"{label}: the registration was accepted")
            except OSError as e:
                ml.check(e.errno == errno.EINVAL, f"{label}: {e} instead of EINVAL")
            err = ml.status(mp)["error"]
            ml.check(isinstance(err, str) and words in err and "\n" not in err,
                     f"{label}: status error {err!r} lacks {words!r}")
            ml.log(f"refused ({label}): {err}")
        # The job's len(dataset) (key n) is not the manifest's count.
        try:
            ml.register(mp, seed=1, layout="ranges", manifest="good.txt", n=5)
            ml.check(False, "n 5 for a manifest of 2 samples was accepted")
        except OSError as e:
            ml.check(e.errno == errno.EINVAL, f"n: {e} instead of EINVAL")
        err = ml.status(mp)["error"]
        ml.check("5" in err and "2" in err, f"n: status error {err!r} lacks both counts")
        ml.log(f"refused (n): {err}")
        ml.register(mp, seed=1, layout="ranges", manifest="good.txt")
        st = ml.status(mp)
        ml.check(st["registered"] and st["error"] is None, f"a good manifest: {st['error']}")
        with open(os.path.join(mp, "big.bin"), "rb") as f, \
                open(os.path.join(data, "big.bin"), "rb") as g:
            ml.check(hashlib.sha1(f.read()).digest() == hashlib.sha1(g.read()).digest(),
                     "big.bin read through the mount differs")


def main():
    ml.skip_unless_fuse()
    ml.skip_unless_frameworks(PY, "torch", "lmdb", "h5py")

    def cases():
        with ml.temp_dir() as tmp:
            ml.run_cases(*[(c.__name__[5:], (lambda c: lambda: c(tmp))(c))
                           for c in (case_refused, case_lmdb, case_hdf5, case_lmdb_twice,
                                     case_lmdb_same_seed)])
    ml.run_test(cases)


if __name__ == "__main__":
    main()
