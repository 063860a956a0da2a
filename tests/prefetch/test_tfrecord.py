#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""TFRecord shards through a real mount, read by real TensorFlow
(tfrecord_job.py, run by the frameworks venv's Python,
CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python).
TensorFlow writes the shards; every record read back carries its number,
and TFRecordDataset checks every record's CRCs, so a wrong byte fails the
job and a wrong or missing record fails the test.

Cases:
- registered: 32 small shards held whole (--mem 256M), registered as
  list_files(pattern, seed=7) for 3 epochs, read with
  TFRecordDataset(num_parallel_reads=4) in a plain loop. Each epoch yields
  every record once; the order the shards come in (each shard's first
  record) equals `clairfs order --paths` for iterators 0, 1, 2; status
  is clairvoyant with every open matched; each byte came from the backing
  store once over the 3 epochs (RAM holds the dataset);
- interleave: the same, read with .interleave(TFRecordDataset,
  cycle_length=4);
- chunked: 8 shards of 3 MiB, above the 1 MiB that --mem 16M holds whole,
  so held by chunk, unregistered, with an SSD tier: 3 epochs, every
  record once per epoch, shards read ahead, and each byte from the
  backing store once over the 3 epochs (the SSD tier holds the shards);
- chunked_registered: the same, registered as list_files(pattern, seed=7):
  the shard order equals `clairfs order`, every open matched, and the
  first chunks of the shards due next fetched before their opens
  (chunks.predicted; none without a registration);
- chunked_once: chunked_registered with --ssd-check once: from epoch 1 the
  shards are passed through whole from their SSD files
  (chunks.ssd.kernel.opens), and in epoch 2 the heads of the shards due
  next are read ahead into the page cache before their opens
  (chunks.ssd.kernel.read_ahead), every record still right.

Exit 77 only without /dev/fuse or when the frameworks Python cannot
import tensorflow (in CI that fails instead: CI=true)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

JOB = os.path.join(HERE, "tfrecord_job.py")
PY = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or "/opt/clairfs-venv/bin/python"
EPOCHS, SEED, PATTERN = 3, 7, "train-*.tfrecord"


def job(cfg, what):
    r = subprocess.run([PY, JOB, json.dumps(cfg)], capture_output=True, text=True, timeout=900)
    ml.check(r.returncode == 0, f"{what}: the job failed ({r.returncode}): {r.stderr[-3000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def write_shards(root, shards, records, lo, hi):
    job({"write": root, "shards": shards, "records": records, "min": lo, "max": hi, "seed": 5},
        "write")
    return sorted(os.listdir(root))


def read_epochs(mp, what, reader="parallel_reads"):
    epochs = job({"root": mp, "pattern": PATTERN, "seed": SEED, "epochs": EPOCHS,
                  "reader": reader, "cycle": 4, "batch_size": 16}, what)
    ml.check(len(epochs) == EPOCHS, f"{what}: {len(epochs)} epochs reported")
    return epochs


def check_records(epochs, total, what):
    for e in epochs:
        ml.check(sorted(e["ids"]) == list(range(total)),
                 f"{what} epoch {e['epoch']}: {len(e['ids'])} records, {len(set(e['ids']))} "
                 f"distinct, of {total}")


def shard_order(ids, records, names):
    """The shards in the order their first record came."""
    seen = []
    for k in ids:
        name = names[k // records]
        if name not in seen:
            seen.append(name)
    return seen


def predicted(root):
    r = ml.clairfs("order", "--framework", "tensorflow", "--pipeline", "list_files", "--pattern",
                   PATTERN, "--seed", str(SEED), "--epochs", str(EPOCHS), "--root", root,
                   "--paths")
    ml.check(r.returncode == 0, f"clairfs order failed: {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def dataset_bytes(root):
    return sum(os.path.getsize(os.path.join(root, n)) for n in os.listdir(root))


def case_registered(tmp, reader="parallel_reads"):
    what = "registered" if reader == "parallel_reads" else "interleave"
    data, mp = ml.make_dirs(tmp, f"data-{what}", f"mnt-{what}")
    records = 30
    names = write_shards(data, 32, records, 1000, 9000)
    with ml.mounted(data, mp, "--mem", "256M", "--no-detect"):
        ml.register(mp, framework="tensorflow", pipeline="list_files", pattern=PATTERN,
                    seed=SEED, batch_size=16, epochs=EPOCHS)
        epochs = read_epochs(mp, what, reader)
        check_records(epochs, 32 * records, what)
        want = predicted(data)
        for e, order in zip(epochs, want):
            got = shard_order(e["ids"], records, names)
            ml.check(got == order, f"{what} epoch {e['epoch']}: shards came in {got[:6]}..., "
                                   f"clairfs order says {order[:6]}...")
        st = ml.status(mp)
        loader = st["jobs"][0]["loaders"][0]
        ml.check(st["mode"] == "clairvoyant" and loader["run_matched"] == loader["run_opens"]
                 and loader["run_opens"] >= EPOCHS * 32,
                 f"{what}: mode {st['mode']} ({st.get('reason')}), "
                 f"{loader['run_matched']} of {loader['run_opens']} opens matched")
        ml.check(st["backing"]["bytes"] == dataset_bytes(data),
                 f"{what}: {st['backing']['bytes']} backing bytes for a "
                 f"{dataset_bytes(data)}-byte dataset over {EPOCHS} epochs")
        ml.log(f"{what}: {loader['run_matched']}/{loader['run_opens']} opens matched, shard "
               f"order as predicted in {EPOCHS} epochs, {st['backing']['bytes']} backing bytes")


def case_interleave(tmp):
    case_registered(tmp, "interleave")


def case_chunked(tmp, registered=False, once=False):
    what = "chunked-once" if once else "chunked-registered" if registered else "chunked"
    data, cache, mp = ml.make_dirs(tmp, f"data-{what}", f"cache-{what}", f"mnt-{what}")
    records = 40
    names = write_shards(data, 8, records, 70_000, 90_000)  # ~3.2 MB a shard
    check = ("--ssd-check", "once") if once else ()
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect", "--cache-dir", cache, "--ssd", "64M",
                    *check):
        if registered:
            ml.register(mp, framework="tensorflow", pipeline="list_files", pattern=PATTERN,
                        seed=SEED, batch_size=16, epochs=EPOCHS)
        epochs = read_epochs(mp, what)
        check_records(epochs, 8 * records, what)
        st = ml.status(mp)
        c = st["chunks"]
        ml.check(c is not None and c["files"] == 8, f"{what}: status chunks {c}")
        kernel = c["ssd"]["kernel"]
        passthrough = st["passthrough"]["state"] == "on"
        if once and passthrough:
            ml.check(kernel["opens"] >= 8, f"{what}: shards not passed through: {kernel}")
            ml.check(kernel["read_ahead"] > 0, f"{what}: no shard's head read ahead: {kernel}")
        else:
            ml.check(c["read_ahead"] > 0, f"{what}: nothing read ahead: {c}")
        if registered:
            for e, order in zip(epochs, predicted(data)):
                got = shard_order(e["ids"], records, names)
                ml.check(got == order, f"{what} epoch {e['epoch']}: shards came in {got[:6]}..., "
                                       f"clairfs order says {order[:6]}...")
            loader = st["jobs"][0]["loaders"][0]
            ml.check(st["mode"] == "clairvoyant" and loader["run_matched"] == loader["run_opens"]
                     and loader["run_opens"] >= EPOCHS * 8,
                     f"{what}: mode {st['mode']} ({st.get('reason')}), "
                     f"{loader['run_matched']} of {loader['run_opens']} opens matched")
            # The first chunks of the shards due next, fetched before their
            # opens (prefetch/chunks/shard_heads.cpp).
            if not (once and passthrough):
                ml.check(c["predicted"] > 0, f"{what}: no shard's first chunks fetched ahead: {c}")
        else:
            ml.check(c["predicted"] == 0, f"{what}: chunks predicted without a registration: {c}")
        ml.check(st["backing"]["bytes"] == dataset_bytes(data),
                 f"{what}: {st['backing']['bytes']} backing bytes for a "
                 f"{dataset_bytes(data)}-byte dataset over {EPOCHS} epochs")
        ml.log(f"{what}: {c['chunks']} chunks, {c['read_ahead']} read ahead "
               f"({c['read_ahead_wasted']} wasted), {c['predicted']} predicted, "
               f"{c['ssd']['hits']} SSD hits, {st['backing']['bytes']} backing bytes, "
               f"kernel {kernel}")


def case_chunked_registered(tmp):
    case_chunked(tmp, registered=True)


def case_chunked_once(tmp):
    case_chunked(tmp, registered=True, once=True)


def main():
    ml.skip_unless_fuse()
    ml.skip_unless_frameworks(PY, "tensorflow")

    def cases():
        with ml.temp_dir() as tmp:
            ml.run_cases(*[(c.__name__[5:], (lambda c: lambda: c(tmp))(c))
                           for c in (case_registered, case_interleave, case_chunked,
                                     case_chunked_registered, case_chunked_once)])
    ml.run_test(cases)


if __name__ == "__main__":
    main()
