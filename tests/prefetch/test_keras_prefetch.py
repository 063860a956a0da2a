#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Real Keras 3 jobs (keras_fit_job.py) through a real mount, registered
with framework tensorflow, run by the frameworks venv's Python
(CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python).

The dataset: 6 classes of 50 PNGs under train/. Each image is one pixel
whose value is the file's number, padded with a private ancillary chunk of
random bytes (decoders skip it) so files weigh 1 to 60 KB. What the job
decoded therefore names the file it got: an epoch must hold every file
exactly once, and the file whose bytes came back must be the file opened.

Cases:
- fit: image_dataset_from_directory(seed=123, batch_size=8), model.fit for
  3 epochs. Keras 3.15's fit runs tf.data iterators 0, 2, 4: clairfs
  predicts 0, 1, 2, finds 2 and then 4 by searching; status shows
  tf_iterator 0 2 4, mode clairvoyant, match rate >= 0.99, each file read
  from the backing store once, and a full re-read through the mount
  matches the backing files;
- loop_global_seed: keras.utils.set_random_seed(42), seed=7, a plain loop:
  iterators 0, 1, 2 as predicted, no search;
- fit_validation: validation_split=0.2, subset="both", fit with
  validation_data, registered as the call is made (subset "both"): two
  loaders, training (tf.data-shuffled, iterators 0 2 4) and
  validation_of_both (Keras does not shuffle it: the numpy order every
  epoch), both clairvoyant through every epoch, each file read once;
- example: the keras-io "image classification from scratch" example's
  shape: validation_split=0.2, subset="both", two take(1) previews,
  RandomFlip/RandomRotation in an AUTOTUNE map, prefetch, fit(epochs=3,
  validation_data), then one training file read whole (load_img) and a
  predict; registered with what the script shows, "epochs": 3. The
  previews (iterators 0 and 1, a batch each) use up no epoch: fit's
  iterators 2, 4, 6 are the training loader's epochs, both loaders
  (named training and validation in status) clairvoyant to the end, the
  stray open after fit ends in no fallback;
- wrong_seed: registered with seed 124 for a job using 123: no iterator
  fits, fallback with a reason naming the tf.data iterators searched; the
  job still gets every file's right bytes;
- detected_fit, detected_previews, detected_list_files (issue 47, item 3):
  nothing registered, 1,600 files, seed 123 (a listed one), batch 32:
  fit; two take(1) previews, augmentation and prefetch, then fit; a plain
  loop over list_files(train/*/*.png, seed=123) with a parallel read map.
  Each is detected by the end of epoch 0 (the job waits there, as a slow
  file system's epoch 0 would last, until status says so) from the first
  files opened, as the tensorflow job it is; every later epoch's open is
  predicted, each file read from the backing store once, and a re-read
  through the mount matches the backing files.

Exit 77 only without /dev/fuse or when the frameworks Python cannot import
tensorflow and keras (in CI that fails instead: CI=true)."""
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

JOB = os.path.join(HERE, "keras_fit_job.py")
PY = os.environ.get("CLAIRFS_FRAMEWORKS_PYTHON") or "/opt/clairfs-venv/bin/python"
CLASSES, PER_CLASS, BATCH, EPOCHS = 6, 50, 8, 3
MATCH = 0.99


def png(i, pad):
    """A 1x1 RGB PNG whose pixel is i (24 bits), with `pad` bytes in a
    private ancillary chunk ("prVt") that decoders skip."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    raw = b"\x00" + bytes([i & 255, (i >> 8) & 255, (i >> 16) & 255])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) +
            chunk(b"prVt", pad) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def make_tree(data, classes=CLASSES, per_class=PER_CLASS, pad=60_000):
    """train/classCC/imgIIII.png; returns how many files."""
    rng = random.Random(3)
    n = 0
    for c in range(classes):
        d = os.path.join(data, "train", f"class{c}")
        os.makedirs(d)
        for i in range(per_class):
            with open(os.path.join(d, f"img{i:03d}.png"), "wb") as f:
                f.write(png(n, rng.randbytes(rng.randint(1, pad))))
            n += 1
    return n


def run_job(mp, what, **cfg):
    cfg = {"root": os.path.join(mp, "train"), "seed": 123, "batch_size": BATCH,
           "epochs": EPOCHS, **cfg}
    r = subprocess.run([PY, JOB, json.dumps(cfg)], capture_output=True, text=True, timeout=900)
    ml.check(r.returncode == 0, f"{what}: the job failed ({r.returncode}): {r.stderr[-3000:]}")
    epochs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    ml.check(len(epochs) == EPOCHS, f"{what}: {len(epochs)} epochs reported: {r.stdout[-500:]}")
    return epochs


def check_epochs(epochs, n, what, val_share=None):
    """Every epoch decoded each file once: its bytes were that file's."""
    for e in epochs:
        got = e["train"] + e["val"]
        ml.check(sorted(got) == list(range(n)),
                 f"{what} epoch {e['epoch']}: decoded {len(got)} images, "
                 f"{len(set(got))} distinct, of {n} files")
        if val_share is not None:
            ml.check(len(e["val"]) == val_share,
                     f"{what} epoch {e['epoch']}: {len(e['val'])} validation images")


def loader_iterators(loader):
    return [e.get("tf_iterator") for e in loader["epochs"]]


def check_followed(mp, n, what):
    st = ml.status(mp)
    ml.check(st["mode"] == "clairvoyant", f"{what}: mode {st['mode']}: {st.get('reason')}")
    for job in st["jobs"]:
        for loader in job["loaders"]:
            # Over the whole run, every epoch's opens.
            rate = loader["run_matched"] / max(1, loader["run_opens"])
            ml.check(loader["mode"] == "clairvoyant" and rate >= MATCH,
                     f"{what}: loader {loader['root']}: {loader['mode']}, "
                     f"{loader['run_matched']} of {loader['run_opens']} opens matched")
            ml.check(loader["run_opens"] >= EPOCHS * loader["ranks"][0]["samples"],
                     f"{what}: loader {loader['root']}: {loader['run_opens']} opens counted "
                     f"for {EPOCHS} epochs of {loader['ranks'][0]['samples']}")
            # Every epoch followed to its end, nothing left unexplained.
            rank = loader["ranks"][0]
            ml.check(len(loader["epochs"]) == EPOCHS and rank["finished"] and
                     loader["held_for_search"] == 0,
                     f"{what}: loader {loader['root']} ({loader.get('subset')}): epochs "
                     f"{loader['epochs']}, rank {rank}, {loader['held_for_search']} opens "
                     f"held for a search")
    ml.check(st["backing"]["files"] == n,
             f"{what}: {st['backing']['files']} backing file reads for {n} files")
    return st


def mounted(data, mp):
    os.makedirs(mp)
    return ml.mounted(data, mp, "--mem", str(256 << 20))


def registration(**keys):
    return {"framework": "tensorflow", "pipeline": "image_dataset_from_directory",
            "root": "train", "seed": 123, "batch_size": BATCH, "epochs": EPOCHS, **keys}


def case_fit(tmp, data, n):
    mp = os.path.join(tmp, "mnt-fit")
    with mounted(data, mp):
        ml.register(mp, **registration())
        check_epochs(run_job(mp, "fit"), n, "fit")
        st = check_followed(mp, n, "fit")
        loader = st["jobs"][0]["loaders"][0]
        ml.check(loader_iterators(loader) == [0, 2, 4],
                 f"fit: iterators {loader_iterators(loader)}, expected 0 2 4 (Keras 3.15's fit)")
        human = ml.clairfs("status", mp).stdout
        ml.check("tf iterator: 0 2 4" in human, f"fit: clairfs status does not say so: {human}")
        ml.check(reread(data, mp) == n, "fit: re-read count")
        ml.log(f"fit: iterators {loader_iterators(loader)}, "
               f"{loader['run_matched']}/{loader['run_opens']} "
               f"opens matched, {st['backing']['files']} backing reads for {n} files")


def reread(data, mp):
    """Every file through the mount against the backing file; the count."""
    count = 0
    for d, _, files in os.walk(os.path.join(data, "train")):
        for name in files:
            rel = os.path.relpath(os.path.join(d, name), data)
            with open(os.path.join(data, rel), "rb") as a, open(os.path.join(mp, rel), "rb") as b:
                ml.check(hashlib.sha1(a.read()).digest() == hashlib.sha1(b.read()).digest(),
                         f"{rel}: bytes through the mount differ from the backing file")
            count += 1
    return count


def case_loop_global_seed(tmp, data, n):
    mp = os.path.join(tmp, "mnt-loop")
    with mounted(data, mp):
        ml.register(mp, **registration(seed=7, global_seed=42))
        check_epochs(run_job(mp, "loop", caller="loop", seed=7, global_seed=42), n, "loop")
        st = check_followed(mp, n, "loop")
        loader = st["jobs"][0]["loaders"][0]
        ml.check(loader_iterators(loader) == [0, 1, 2],
                 f"loop: iterators {loader_iterators(loader)}, expected 0 1 2")
        ml.check(loader["resyncs"] == 0, f"loop: {loader['resyncs']} searches, expected none")


def case_fit_validation(tmp, data, n):
    mp = os.path.join(tmp, "mnt-val")
    val = int(0.2 * n)
    with mounted(data, mp):
        # As the job calls it: subset="both" registers both datasets.
        ml.register(mp, **registration(validation_split=0.2, subset="both"))
        check_epochs(run_job(mp, "fit_validation", validation_split=0.2), n, "fit_validation",
                     val_share=val)
        st = check_followed(mp, n, "fit_validation")
        loaders = st["jobs"][0]["loaders"]
        ml.check(len(loaders) == 2, f"fit_validation: {len(loaders)} loaders in status")
        ml.check(loader_iterators(loaders[0]) == [0, 2, 4],
                 f"fit_validation: training iterators {loader_iterators(loaders[0])}")
        ml.log("fit_validation: iterators " +
               ", ".join(f"{i}: {loader_iterators(x)}" for i, x in enumerate(loaders)))


def case_example(tmp, _data, _n):
    # A preview is a batch and a little more: it is told apart from fit's
    # first epoch only if that is enough opens to name its iterator. With
    # 1,600 files and batch 32 clairfs needs about 11 (the example: 23,410
    # files, batch 128, about 7).
    data = os.path.join(tmp, "data-example")
    n = make_tree(data, classes=2, per_class=800, pad=4000)
    mp = os.path.join(tmp, "mnt-example")
    val = int(0.2 * n)
    with mounted(data, mp):
        ml.register(mp, **registration(validation_split=0.2, subset="both", batch_size=32))
        check_epochs(run_job(mp, "example", validation_split=0.2, previews=2, augment=True,
                             after=True, batch_size=32), n, "example", val_share=val)
        st = check_followed(mp, n, "example")
        loaders = st["jobs"][0]["loaders"]
        ml.check([x.get("subset") for x in loaders] == ["training", "validation"],
                 f"example: loaders named {[x.get('subset') for x in loaders]}")
        ml.check(loader_iterators(loaders[0]) == [2, 4, 6],
                 f"example: training iterators {loader_iterators(loaders[0])}, expected 2 4 6 "
                 f"(two previews, then fit)")
        human = ml.clairfs("status", mp).stdout
        ml.check("loader 'train' (training)" in human, f"example: status names no subset: {human}")
        ml.log(f"example: iterators {loader_iterators(loaders[0])}, "
               f"{loaders[0]['run_matched']}/{loaders[0]['run_opens']} training opens matched")


def case_wrong_seed(tmp, data, n):
    mp = os.path.join(tmp, "mnt-wrong")
    with mounted(data, mp):
        ml.register(mp, **registration(seed=124))
        check_epochs(run_job(mp, "wrong_seed"), n, "wrong_seed")
        st = ml.status(mp)
        ml.check(st["mode"] == "fallback", f"wrong_seed: mode {st['mode']}")
        ml.check("iterator" in (st.get("reason") or ""),
                 f"wrong_seed: the reason does not say what was searched: {st.get('reason')}")
        ml.check(reread(data, mp) == n, "wrong_seed: re-read count")
        ml.log(f"wrong_seed: {st['reason']}")


def detected_run(tmp, name, **cfg):
    """An unregistered job (seed 123, batch 32, 3 epochs) over 1,600 files
    on a mount that detects; each epoch's line holds the status as it
    ended (the detected job is dropped once the job's threads exit)."""
    data = os.path.join(tmp, f"data-{name}")
    n = make_tree(data, classes=2, per_class=800, pad=4000)
    mp = os.path.join(tmp, f"mnt-{name}")
    log = os.path.join(tmp, f"{name}.log")
    os.makedirs(mp)
    with ml.mounted_logged(data, mp, log, "--mem", str(256 << 20)):
        epochs = run_job(mp, name, batch_size=32, gate=True,
                         status=os.path.join(mp, ".clairfs", "status"), **cfg)
        check_epochs(epochs, n, name)
        check_detected_tf(epochs, n, name)
        ml.check(reread(data, mp) == n, f"{name}: re-read count")
    return epochs


def check_detected_tf(epochs, n, what):
    """Detected by the end of epoch 0 as the tensorflow job it is, and every
    epoch after it followed: each open of epochs 1 and 2 predicted."""
    first = epochs[0]["status"]
    det = first["detection"]
    ml.check(first["registered"] == "detected", f"{what}: not detected in epoch 0: {first}")
    # Judged on the first files opened, those of iterator 0, even when the
    # whole epoch was opened by then (here it takes about a second; the
    # job waits at its end, gate, as a slow file system's epoch would).
    ml.check(re.search(r"iterators? 0\b", det.get("result") or ""), f"{what}: detection {det}")
    reg = det.get("registration") or {}
    ml.check(reg.get("framework") == "tensorflow" and reg.get("seed") == 123,
             f"{what}: detected {reg}")
    last = epochs[-1]["status"]
    ml.check(last["mode"] == "clairvoyant", f"{what}: mode {last['mode']} ({last.get('reason')})")
    loader = last["jobs"][0]["loaders"][0]
    ml.check(loader["mode"] == "clairvoyant", f"{what}: loader {loader['mode']}")
    # Epoch 0's opens before detection are handed to the trackers with
    # the job; epochs 1 and 2 must be every one predicted.
    ml.check(loader["run_opens"] >= (EPOCHS - 1) * n and
             loader["run_matched"] >= 0.99 * loader["run_opens"],
             f"{what}: {loader['run_matched']} of {loader['run_opens']} opens predicted: {loader}")
    ml.check(len(loader["epochs"]) == EPOCHS, f"{what}: epochs {loader['epochs']}")
    ml.check(last["backing"]["files"] == n,
             f"{what}: {last['backing']['files']} backing file reads for {n} files")
    ml.log(f"{what}: detected after {det['opens_at_detection']} opens "
           f"({det.get('result')}); epochs {loader['epochs']}")


def case_detected_fit(tmp, _data, _n):
    epochs = detected_run(tmp, "detected_fit")
    loader = epochs[-1]["status"]["jobs"][0]["loaders"][0]
    ml.check(loader_iterators(loader) == [0, 2, 4],
             f"detected_fit: iterators {loader_iterators(loader)}, expected 0 2 4 (fit's)")


def case_detected_previews(tmp, _data, _n):
    # Two take(1) previews before fit, augmentation in a map, prefetch:
    # the first opens are three iterators' (0 and 1 a batch each), and
    # each preview's first files share the shuffle buffer's pool.
    epochs = detected_run(tmp, "detected_previews", previews=2, augment=True)
    loader = epochs[-1]["status"]["jobs"][0]["loaders"][0]
    ml.check(loader_iterators(loader) == [2, 4, 6],
             f"detected_previews: iterators {loader_iterators(loader)}, expected 2 4 6")


def case_detected_list_files(tmp, _data, _n):
    epochs = detected_run(tmp, "detected_list_files", caller="list_files")
    loader = epochs[-1]["status"]["jobs"][0]["loaders"][0]
    ml.check(loader_iterators(loader) == [0, 1, 2],
             f"detected_list_files: iterators {loader_iterators(loader)}, expected 0 1 2")


def main():
    ml.skip_unless_fuse()
    ml.skip_unless_frameworks(PY, "tensorflow", "keras")
    def cases():
        with ml.temp_dir() as tmp:
            data = os.path.join(tmp, "data")
            n = make_tree(data)
            ml.run_cases(*[(c.__name__[5:], (lambda c: lambda: c(tmp, data, n))(c))
                           for c in (case_fit, case_loop_global_seed, case_fit_validation,
                                     case_example, case_wrong_seed, case_detected_fit,
                                     case_detected_previews, case_detected_list_files)])
    ml.run_test(cases)


if __name__ == "__main__":
    main()
