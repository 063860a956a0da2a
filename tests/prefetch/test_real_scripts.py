#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 24: training scripts as people write them (script_job.py: the
global generator seeded by torch.manual_seed, a shuffled train loader and a
validation loader after it, CPU random ops per step, a model built after
the seed, several jobs on one mount), through real mounts, under Debian's
torch 1.13 (/usr/bin/python3) and, where marked [2.x], also under the torch
2.x venv that scripts/install-deps.sh test builds (CLAIRFS_VENV, default
/opt/clairfs-venv). Each job registers itself by writing .clairfs/control
from its own process. The dataset has train/ (8 classes x 60 files) and
val/ (8 x 15); every sample every job gets is checked against its backing
file's SHA-1. "Clairvoyant" below means, in the status the job read as its
train pass and as its val pass ended in every epoch: top-level mode and the
job's and each registered loader's mode "clairvoyant", match_rate >= 0.99.

- listing: script_job's own ImageFolder numbering (used where torchvision
  does not import) equals torchvision's, on the dataset and on a tree of
  hidden, nested, symlinked and odd-cased names;
- script_order: the draws each variant below makes (the expected
  draw_offset_words) are real torch's: on the backing directory, with no
  clairfs, each epoch's train order is `clairfs order`'s with that many
  draws before it (mixup + pre_model, and persistent workers);
- issue_script [2.x]: the issue's script (train + val, 3 epochs), only
  train registered (generator global): clairvoyant throughout; the train
  loader's epochs report draw_offset 0, 1, 1 (the val loader's base_seed
  draw per pass); the val opens count as other_opens; no file read twice;
- mixup, pre_model, persistent: the same with torch.randperm(batch) per
  step, with nn.Linear(10, 10) after manual_seed while registered
  pre_draws is 0, and with persistent workers (registered): clairvoyant
  throughout, each epoch's draw_offset_words exactly the draws made
  (422, 110, and 2 then 0: the persistent val loader draws once);
- loaders [2.x]: train and val registered together (1.13: a JSON array;
  2.x: an object with "loaders"): both loaders clairvoyant, no draw offset
  (the val loader's draws are predicted), no other_opens, the val passes of
  epochs 1 and 2 read no file from the backing store, no file read twice;
- two_jobs [2.x]: two jobs with seeds 5 and 6 (shuffle=True, train only)
  at once on one mount with --mem at 60% of train/: each clairvoyant in its
  own "jobs" entry (which binds its pid), and backing reads below two
  independent runs' (each: the dataset, then 40% per later epoch); both
  retired once they exit;
- kill_one [2.x]: the same, job a's process group killed while it runs
  (after its first epoch), job b waiting before its second: "retired"
  becomes 1, "jobs" lists only b, which then finishes clairvoyant;
- distributed_no_set_epoch: DistributedSampler without set_epoch:
  clairvoyant all epochs, seed_epoch 0 each epoch, and the loader's warning
  names set_epoch;
- no_candidate: registered with the wrong seed (6 for 5): the chain search
  finds nothing, fallback with a reason that says what was searched
  ("searched" or "draws"), prefixed "job default, loader train: " at the
  top level; every byte of the job's and of a full re-read is right.
- resnet18: the PyTorch examples' ImageNet script's shape: manual_seed,
  then torchvision's resnet18 (about 22 million draws, counted here with
  clairfs's helper), a shuffled train loader and a sequential val loader,
  one SGD step per batch; registered with seed, batch size, workers,
  epochs and the two roots only: the deep chain search finds the model's
  draws in epoch 0 (draw_offset_words [draws, 0, 0], chain_search
  "found"), every held open is matched, both loaders clairvoyant after
  every pass, and epochs 1 and 2 read no file from the backing store;
- detected [2.x]: a DistributedSampler script (world 2, rank 1) that
  registers nothing is recognised from its first opens (issue 16):
  registered "detected" with its sampler, world size, rank, seed + epoch,
  batch size and workers; clairvoyant; every byte right;

Exit 77 only without /dev/fuse or without torch for /usr/bin/python3. A
missing or broken venv skips the [2.x] runs, except with CI=true, where it
fails; a venv whose torch is not the version pinned in
tests/requirements-frameworks.txt fails."""
import contextlib
import hashlib
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

SCRIPT = os.path.join(HERE, "script_job.py")
TORCH_1_13 = "/usr/bin/python3"
VENV = os.environ.get("CLAIRFS_VENV") or "/opt/clairfs-venv"
REQUIREMENTS = os.path.join(ml.SOURCE_ROOT, "tests", "requirements-frameworks.txt")

CLASSES, TRAIN_PER_CLASS, VAL_PER_CLASS = 8, 60, 15
SEED, BATCH, WORKERS, EPOCHS = 5, 8, 2, 3
MATCH = 0.99
# Bounds on waits for something the daemon does in the background; they
# only run out when it never happens.
RETIRE_WAIT = 60


def skip_unless_torch():
    r = ml.run([TORCH_1_13, "-c", "import torch, torchvision"], timeout=120)
    if r.returncode != 0:
        ml.log(f"SKIP: {TORCH_1_13} cannot import torch and torchvision: {r.stderr.strip()[-300:]}")
        sys.exit(77)


def pinned_torch():
    with open(REQUIREMENTS) as f:
        for line in f:
            line = line.split("#", 1)[0].replace(" ", "")
            if line.startswith("torch=="):
                return line.strip()[len("torch=="):]
    raise ml.TestFailure(f"{REQUIREMENTS} pins no torch")


def torch2_python():
    """(python, None) for a usable venv, else (None, why)."""
    py = os.path.join(VENV, "bin", "python")
    if not os.access(py, os.X_OK):
        return None, f"{py} does not exist (bash scripts/install-deps.sh test builds it)"
    r = ml.run([py, "-c", "import torch; print(torch.__version__)"], timeout=180)
    if r.returncode != 0:
        return None, f"{py} cannot import torch: {r.stderr.strip()[-300:]}"
    return py, r.stdout.split()[-1]


# ---------------------------------------------------------------- dataset

def make_dataset(root):
    """train/ and val/, each CLASSES class directories of random bytes named
    .jpg; returns {subtree: total bytes}."""
    rng = random.Random(24)
    sizes = {}
    for sub, per in (("train", TRAIN_PER_CLASS), ("val", VAL_PER_CLASS)):
        sizes[sub] = 0
        for c in range(CLASSES):
            d = os.path.join(root, sub, f"class{c:02d}")
            os.makedirs(d)
            for i in range(per):
                size = rng.randint(1, 160_000)
                with open(os.path.join(d, f"img{i:04d}.jpg"), "wb") as f:
                    f.write(rng.randbytes(size))
                sizes[sub] += size
    return sizes


def digests(root):
    """Dataset index -> SHA-1 of the backing file, numbered by torchvision."""
    import torchvision
    out = []
    for path, _ in torchvision.datasets.ImageFolder(root, loader=lambda p: p).samples:
        with open(path, "rb") as f:
            out.append(hashlib.sha1(f.read()).hexdigest())
    return out


class Data:
    def __init__(self, tmp):
        self.tmp = tmp
        self.backing = os.path.join(tmp, "data")
        self.sizes = make_dataset(self.backing)
        self.train = digests(os.path.join(self.backing, "train"))
        self.val = digests(os.path.join(self.backing, "val"))


# ---------------------------------------------------------------- soft checks

class Checks:
    """Collects every failed check of a case, so one run against an
    unfinished daemon lists all that is missing; done() raises."""

    def __init__(self, what):
        self.what, self.failures = what, []

    def __call__(self, cond, msg):
        if not cond:
            self.failures.append(msg)
            ml.log(f"  [{self.what}] {msg}")
        return bool(cond)

    def done(self):
        n = len(self.failures)
        ml.check(not n, f"{n} check{'s' * (n != 1)} failed, first: {self.failures[:1]}")


# ---------------------------------------------------------------- jobs

class Job:
    """script_job.py in its own process group, its output read as it comes."""

    def __init__(self, py, cfg, what):
        self.what, self.lines, self.errors = what, [], []
        self.proc = subprocess.Popen([py, SCRIPT, json.dumps(cfg)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.threads = [threading.Thread(target=self._read, args=(self.proc.stdout, True)),
                        threading.Thread(target=self._read, args=(self.proc.stderr, False))]
        for t in self.threads:
            t.daemon = True
            t.start()

    def _read(self, stream, out):
        for line in stream:
            if out:
                try:
                    self.lines.append(json.loads(line))
                except ValueError:
                    self.errors.append(line)
            else:
                self.errors.append(line)

    def epochs(self):
        return [line for line in self.lines if "epoch" in line]

    def header(self):
        return next((line for line in self.lines if "torch" in line), None)

    def wait_epochs(self, n, timeout=300):
        ok = ml.wait_until(lambda: len(self.epochs()) >= n or self.proc.poll() is not None,
                           timeout, 0.1)
        ml.check(ok and len(self.epochs()) >= n,
                 f"{self.what}: {len(self.epochs())} epochs done, expected {n} "
                 f"(rc {self.proc.poll()}): {''.join(self.errors)[-1500:]}")

    def finish(self, timeout=600):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ml.TestFailure(f"{self.what}: still running after {timeout} s: killed")
        for t in self.threads:
            t.join(10)
        ml.check(self.proc.returncode == 0, f"{self.what}: the job failed "
                 f"({self.proc.returncode}): {''.join(self.errors)[-2000:]}")
        return self.header(), self.epochs()

    def kill(self):
        """SIGKILL to the job's process group (its loader workers too)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(30)


@contextlib.contextmanager
def jobs_killed_on_exit(jobs):
    """Kills every job still running when the block ends, failed or not."""
    try:
        yield jobs
    finally:
        for j in jobs:
            if j.proc.poll() is None:
                j.kill()


def registration(py2, **keys):
    """The issue's registration for the train loader, plus keys."""
    reg = {"root": "train", "seed": SEED, "sampler": "random", "generator": "global",
           "batch_size": BATCH, "num_workers": WORKERS, "epochs": EPOCHS}
    if py2:
        reg["torch_version"] = "2.7"
    reg.update(keys)
    return reg


def job_config(mp, **keys):
    cfg = {"root": mp, "seed": SEED, "batch_size": BATCH, "num_workers": WORKERS,
           "epochs": EPOCHS, "val": "val", "status": os.path.join(mp, ".clairfs", "status")}
    cfg.update(keys)
    return cfg


# ---------------------------------------------------------------- checks

def check_run(c, header, epochs, data, torch_want, n_epochs, val=True, distributed=False):
    """The job ran under the torch wanted, registered itself, and got every
    byte right: each epoch the whole train set once and val in order."""
    if c(header is not None, "the job printed no header"):
        c(header["torch"].startswith(torch_want), f"torch {header['torch']}, want {torch_want}")
        c(header["registered"], f"the registration was refused: {header['register_error']}")
    c(len(epochs) == n_epochs, f"{len(epochs)} epochs, want {n_epochs}")
    for ep in epochs:
        e, got = ep["epoch"], ep["train"]
        bad = [i for i, h in got if not 0 <= i < len(data.train) or data.train[i] != h]
        c(not bad, f"epoch {e}: wrong bytes for train samples {bad[:5]}")
        c(sorted(i for i, _ in got) == list(range(len(data.train))),
          f"epoch {e}: {len(got)} train samples, not each sample once")
        if not distributed and e > 0:  # a shuffled order that repeats is no shuffle
            c([i for i, _ in got] != [i for i, _ in epochs[e - 1]["train"]],
              f"epoch {e}: the same train order as epoch {e - 1}")
        want_val = list(enumerate(data.val)) if val else []
        c([tuple(p) for p in ep["val"]] == want_val,
          f"epoch {e}: val samples {len(ep['val'])}, wrong order or bytes")


def find_job(st, job_id):
    return next((j for j in st.get("jobs") or [] if j.get("id") == job_id), None)


def find_loader(st, job_id, root):
    job = find_job(st, job_id)
    return next((lo for lo in (job or {}).get("loaders") or [] if lo.get("root") == root), None)


def check_clairvoyant(c, st, where, job_id="default", roots=("train",), top=True, rated=None):
    """Mode clairvoyant: top level (unless top is False), the job's entry
    and each of its loaders named in roots; match_rate >= MATCH at the top
    level and for the loaders in rated (default: all of roots), those whose
    pass has just ended (another's epoch may have begun with no open yet)."""
    if top:
        c(st.get("mode") == "clairvoyant", f"{where}: mode {st.get('mode')} ({st.get('reason')})")
        rate = st.get("match_rate")
        c(rate is not None and rate >= MATCH, f"{where}: match_rate {rate}")
    job = find_job(st, job_id)
    if not c(job is not None, f"{where}: no job {job_id!r} in status jobs "
             f"{[j.get('id') for j in st.get('jobs') or []] if 'jobs' in st else '(no jobs key)'}"):
        return
    c(job.get("mode") == "clairvoyant", f"{where}: job {job_id} mode {job.get('mode')} "
      f"({job.get('reason')})")
    for root in roots:
        lo = find_loader(st, job_id, root)
        if not c(lo is not None, f"{where}: job {job_id} has no loader {root!r}"):
            continue
        c(lo.get("mode") == "clairvoyant", f"{where}: loader {root} mode {lo.get('mode')} "
          f"({lo.get('reason')})")
        if rated is not None and root not in rated:
            continue
        rate = lo.get("match_rate")
        c(rate is not None and rate >= MATCH, f"{where}: loader {root} match_rate {rate} "
          f"({lo.get('matched')} of {lo.get('opens')})")


def check_every_snapshot(c, epochs, job_id="default", roots=("train",), top=True):
    """check_clairvoyant on the status the job read after each pass; the
    loader whose pass just ended must have matched."""
    for ep in epochs:
        for key, rated in (("status_train", ("train",)), ("status_val", ("val",))):
            if key in ep:
                check_clairvoyant(c, ep[key], f"epoch {ep['epoch']} {key}", job_id, roots, top,
                                  rated)


def check_draw_offsets(c, st, want_words, job_id="default", root="train", want_draws=None):
    """The loader's per-epoch draw_offset_words are want_words (and
    draw_offset want_draws, if given)."""
    lo = find_loader(st, job_id, root)
    if not c(lo is not None, f"final status: no loader {root} of job {job_id}"):
        return
    per_epoch = {e.get("epoch"): e for e in lo.get("epochs") or []}
    got = [per_epoch.get(e, {}).get("draw_offset_words") for e in range(len(want_words))]
    c(got == want_words, f"loader {root}: draw_offset_words per epoch {got}, want {want_words} "
      f"(epochs {lo.get('epochs')})")
    if want_draws is not None:
        got = [per_epoch.get(e, {}).get("draw_offset") for e in range(len(want_draws))]
        c(got == want_draws, f"loader {root}: draw_offset per epoch {got}, want {want_draws}")


def expected_words(n, mixup=False, pre_model=False, persistent=False, val_registered=False):
    """Global 32-bit draws past the registered chain, per epoch: the
    model's 110 before epoch 0; then before each later epoch the draws of
    the epoch before: randperm(len(batch)) per step (len - 1 each) and the
    val loader's base_seed (2, only its first pass with persistent
    workers; none when the val loader is registered too)."""
    out = [110 if pre_model else 0]
    for e in range(1, EPOCHS):
        w = n - -(-n // BATCH) if mixup else 0
        if not val_registered and (not persistent or e == 1):
            w += 2
        out.append(w)
    return out


def mountpoint(data, name):
    mp = os.path.join(data.tmp, "mnt-" + re.sub(r"[^A-Za-z0-9_-]", "-", name))
    os.makedirs(mp)
    return mp


def status_now(mp):
    try:
        return ml.status(mp)
    except (OSError, ValueError) as e:
        raise ml.TestFailure(f"status unreadable: {e}")


# ---------------------------------------------------------------- cases

def case_listing(data):
    """list_image_folder, script_job's ImageFolder numbering for torch 2.x,
    against torchvision's on the dataset and on a tree of tricky names."""
    import torchvision
    spec = importlib.util.spec_from_file_location("script_job", SCRIPT)
    sj = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sj)
    tree = os.path.join(data.tmp, "tricky")
    files = ["B/x.JPG", "B/y.Jpeg", "B/notes.txt", "B/10.jpg", "B/9.jpg", "B/.h.jpg",
             "a/sub/deeper/w.png", "a/sub x/v.jpg", "a/sub-x/u.TIFF", "a/sub/t.webp",
             "a/Z.bmp", "a/_u.ppm", "a/é.pgm", ".hid/k.jpg", "c.jpg/d.jpg"]
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
        with open(os.path.join(tree, f), "wb") as fh:
            fh.write(f.encode())
    os.symlink("B", os.path.join(tree, "linked"))
    os.symlink("missing.jpg", os.path.join(tree, "a", "broken.jpg"))
    with open(os.path.join(tree, "top.jpg"), "wb"):
        pass  # files directly under the root are no sample
    for root in (tree, os.path.join(data.backing, "train"), os.path.join(data.backing, "val")):
        want = torchvision.datasets.ImageFolder(root, loader=lambda p: p).samples
        got = sj.list_image_folder(root)
        at = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                  min(len(got), len(want)))
        ml.check(got == want, f"{root}: list_image_folder differs from torchvision at sample "
                 f"{at}: {got[at:at + 2]} against {want[at:at + 2]} ({len(got)}, {len(want)})")
    ml.log(f"listing: {len(sj.list_image_folder(tree))} tricky samples as torchvision numbers them")


def predicted_order(root, epoch, pre_draws, persistent):
    """clairfs order's epoch for the issue's train loader."""
    r = ml.clairfs("order", "--root", root, "--seed", str(SEED), "--batch-size", str(BATCH),
                   "--num-workers", str(WORKERS), "--epochs", str(epoch + 1),
                   "--pre-draws", str(pre_draws), "--persistent-workers",
                   "true" if persistent else "false")
    ml.check(r.returncode == 0, f"clairfs order failed: {r.stderr}")
    return json.loads(r.stdout.splitlines()[epoch])


def case_script_order(data):
    """script_job's draws, on the backing directory without clairfs, are
    the ones expected_words() counts: epoch e's train order is clairfs
    order's for the registered chain shifted by the draws made so far."""
    root = os.path.join(data.backing, "train")
    for keys in (dict(mixup=True, pre_model=True), dict(persistent=True)):
        cfg = job_config(data.backing, status=None, mixup=bool(keys.get("mixup")),
                         persistent_workers=bool(keys.get("persistent")),
                         pre_model=bool(keys.get("pre_model")))
        with jobs_killed_on_exit([Job(TORCH_1_13, cfg, f"script order {keys}")]) as jobs:
            _, epochs = jobs[0].finish()
        words = expected_words(len(data.train), **keys)
        for ep in epochs:
            e = ep["epoch"]
            want = predicted_order(root, e, sum(words[:e + 1]), keys.get("persistent", False))
            ml.check([i for i, _ in ep["train"]] == want,
                     f"{keys} epoch {e}: the train order is not clairfs order's with "
                     f"{sum(words[:e + 1])} draws before it")
        ml.log(f"script order {keys}: draws before each epoch {words}, as predicted")


def case_issue_script(data, py, torch_want, what, mixup=False, pre_model=False,
                      persistent=False):
    """The issue's script (bullets 1 and 2), only train registered."""
    mp = mountpoint(data, what)
    c = Checks(what)
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        reg = registration(py != TORCH_1_13, persistent_workers=persistent, pre_draws=0)
        cfg = job_config(mp, mixup=mixup, pre_model=pre_model, persistent_workers=persistent,
                         register=reg)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            header, epochs = jobs[0].finish()
        check_run(c, header, epochs, data, torch_want, EPOCHS)
        check_every_snapshot(c, epochs)
        final = epochs[-1]["status_val"] if epochs else status_now(mp)
        words = expected_words(len(data.train), mixup, pre_model, persistent)
        plain = not (mixup or pre_model or persistent)
        check_draw_offsets(c, final, words, want_draws=[w // 2 for w in words] if plain else None)
        n_val = EPOCHS * len(data.val)
        c(final.get("other_opens") == n_val, f"other_opens {final.get('other_opens')}, want "
          f"{n_val}: the val loader's opens")
        files = len(data.train) + len(data.val)
        c(final["backing"]["files"] <= files, f"{final['backing']['files']} backing file reads "
          f"for {files} files with room for all")
        ml.log(f"{what}: backing {final['backing']['files']} files, draw offsets "
               f"{(find_loader(final, 'default', 'train') or {}).get('epochs')}")
    c.done()


def case_loaders(data, py, torch_want, what):
    """Train and val registered together: the val loader's draws are
    predicted and the later val passes are served from RAM."""
    mp = mountpoint(data, what)
    c = Checks(what)
    py2 = py != TORCH_1_13
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        train = registration(py2)
        if py2:  # the object form: top-level keys are every loader's defaults
            reg = {k: v for k, v in train.items() if k != "root"}
            reg.update(job="tv", loaders=[{"root": "train"},
                                          {"root": "val", "sampler": "sequential"}])
        else:  # the array form, one object per loader
            reg = [train, {**{k: v for k, v in train.items() if k != "generator"},
                           "root": "val", "sampler": "sequential"}]
        job_id = "tv" if py2 else "default"
        with jobs_killed_on_exit([Job(py, job_config(mp, register=reg), what)]) as jobs:
            header, epochs = jobs[0].finish()
        check_run(c, header, epochs, data, torch_want, EPOCHS)
        check_every_snapshot(c, epochs, job_id, roots=("train", "val"))
        final = epochs[-1]["status_val"] if epochs else status_now(mp)
        check_draw_offsets(c, final, [0] * EPOCHS, job_id)
        c(final.get("other_opens") == 0, f"other_opens {final.get('other_opens')}, want 0")
        for ep in epochs[1:]:
            before = ep["status_train"]["backing"]["files"]
            during = ep["status_val"]["backing"]["files"] - before
            c(during == 0, f"epoch {ep['epoch']}: the val pass read {during} files from the "
              f"backing store")
        files = len(data.train) + len(data.val)
        c(final["backing"]["files"] <= files, f"{final['backing']['files']} backing file reads "
          f"for {files} files with room for all")
        ml.log(f"{what}: backing {final['backing']['files']} files, "
               f"other_opens {final.get('other_opens')}")
    c.done()


def two_job_configs(mp, py, gates=None, victim_epochs=EPOCHS):
    """Both jobs register themselves, then wait at gate mp + "-start" (see
    start_both) so that neither runs an epoch before the other registered."""
    py2 = py != TORCH_1_13
    out = []
    for job_id, seed, epochs in (("a", SEED, victim_epochs), ("b", SEED + 1, EPOCHS)):
        reg = registration(py2, job=job_id, seed=seed, epochs=epochs)
        cfg = job_config(mp, seed=seed, epochs=epochs, val=None, register=reg)
        cfg["gates"] = {"0": mp + "-start"}
        if gates and job_id == "b":
            cfg["gates"].update(gates)
        out.append((job_id, cfg))
    return out


def start_both(mp):
    """Opens the start gate once both jobs' registrations are in."""
    wait_status(mp, lambda s: sorted(j.get("id") for j in s.get("jobs") or []) == ["a", "b"])
    with open(mp + "-start", "w"):
        pass


def wait_status(mp, cond, timeout=RETIRE_WAIT):
    """Polls status until cond(status) holds; returns the last status.
    Stops at once if the status has no "retired" key (nothing to wait for)."""
    last = {}

    def poll():
        nonlocal last
        last = status_now(mp)
        return "retired" not in last or cond(last)

    ml.wait_until(poll, timeout, 0.2)
    return last


def case_two_jobs(data, py, torch_want, what):
    """Two jobs at once on one mount with RAM for 60% of train/."""
    mp = mountpoint(data, what)
    c = Checks(what)
    size, n = data.sizes["train"], len(data.train)
    with ml.mounted(data.backing, mp, "--mem", str(size * 6 // 10)):
        with jobs_killed_on_exit([]) as jobs:
            for job_id, cfg in two_job_configs(mp, py):
                jobs.append(Job(py, cfg, f"{what} job {job_id}"))
            start_both(mp)
            runs = {job_id: j.finish() for job_id, j in zip("ab", jobs)}
        for job_id, (header, epochs) in runs.items():
            jc = Checks(f"{what} job {job_id}")
            check_run(jc, header, epochs, data, torch_want, EPOCHS, val=False)
            check_every_snapshot(jc, epochs, job_id, top=False)
            for ep in epochs[:1]:
                entry = find_job(ep["status_train"], job_id) or {}
                pid = jobs["ab".index(job_id)].proc.pid
                jc(pid in (entry.get("pids") or []),
                   f"epoch 0: job {job_id}'s pid {pid} not in its pids {entry.get('pids')}")
            c.failures += jc.failures
        a_seen = [i for i, _ in runs["a"][1][0]["train"]] if runs["a"][1] else []
        b_seen = [i for i, _ in runs["b"][1][0]["train"]] if runs["b"][1] else []
        c(a_seen != b_seen, "both jobs got the same epoch-0 order: the seeds did not differ")
        st = wait_status(mp, lambda s: s.get("retired") == 2)
        # Retired jobs stay listed, their counters frozen, until registered
        # again or unregistered.
        states = {j.get("id"): j.get("state") for j in st.get("jobs") or []}
        c(st.get("retired") == 2 and states == {"a": "retired", "b": "retired"},
          f"after both exited: retired {st.get('retired')}, jobs {states}, want 2, both retired")
        held = st["ram"]["capacity"] / size
        # Each job alone: every file in epoch 0, then at best the share
        # that does not fit in each later epoch.
        independent = 2 * n * (1 + (EPOCHS - 1) * (1 - held))
        reads = st["backing"]["files"]
        c(reads < independent, f"{reads} backing file reads, two independent runs read "
          f"{independent:.0f}")
        c(st["prefetch"]["prefetched"] > 0, f"nothing was prefetched: {st['prefetch']}")
        c(st["ram"]["bytes"] <= st["ram"]["capacity"], f"RAM over budget: {st['ram']}")
        ml.log(f"{what}: {reads} backing file reads for 2 x {EPOCHS} x {n} opens "
               f"(independent runs: {independent:.0f}), ram capacity {held:.0%} of train/")
    c.done()


def case_kill_one(data, py, torch_want, what):
    """Two jobs; job a's process group is killed while it runs (after its
    first epoch) and job b waits before its second: a is retired, b
    finishes clairvoyant."""
    mp = mountpoint(data, what)
    c = Checks(what)
    size = data.sizes["train"]
    go, leave = mp + "-go", mp + "-leave"
    with ml.mounted(data.backing, mp, "--mem", str(size * 6 // 10)):
        with jobs_killed_on_exit([]) as jobs:
            # a could run 10 epochs: it is still running when killed.
            for job_id, cfg in two_job_configs(mp, py, gates={"1": go, str(EPOCHS): leave},
                                               victim_epochs=10):
                jobs.append(Job(py, cfg, f"{what} job {job_id}"))
            start_both(mp)
            victim, survivor = jobs
            survivor.wait_epochs(1)
            victim.wait_epochs(1)
            both = survivor.epochs()[0]["status_train"]
            ids = sorted(j.get("id") for j in both.get("jobs") or [])
            c(ids == ["a", "b"], f"while both run: jobs {ids}")
            c(both.get("retired") == 0, f"while both run: retired {both.get('retired')}")
            victim.kill()
            with open(go, "w"):
                pass
            survivor.wait_epochs(EPOCHS)  # then it waits at the exit gate, alive
            def active(s):
                return [j.get("id") for j in s.get("jobs") or [] if j.get("state") == "active"]
            st = wait_status(mp, lambda s: s.get("retired") == 1 and active(s) == ["b"])
            c(st.get("retired") == 1, f"after the kill: retired {st.get('retired')}, want 1")
            c(active(st) == ["b"], f"after the kill: active jobs {active(st)}, want only b")
            states = {j.get("id"): j.get("state") for j in st.get("jobs") or []}
            c(states.get("a") == "retired", f"after the kill: job a is {states.get('a')}")
            check_clairvoyant(c, st, "after the kill", "b")
            with open(leave, "w"):
                pass
            header, epochs = survivor.finish()
        check_run(c, header, epochs, data, torch_want, EPOCHS, val=False)
        check_every_snapshot(c, epochs, "b", top=False)
        for ep in victim.epochs():  # what a got before it died was right too
            bad = [i for i, h in ep["train"] if data.train[i] != h]
            c(not bad, f"job a epoch {ep['epoch']}: wrong bytes for samples {bad[:5]}")
        ml.log(f"{what}: job a killed after {len(victim.epochs())} epochs, retired "
               f"{st.get('retired')}, jobs {ids}")
    c.done()


def case_distributed_no_set_epoch(data, py, torch_want, what):
    mp = mountpoint(data, what)
    c = Checks(what)
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        reg = registration(py != TORCH_1_13, sampler="distributed", world_size=1, ranks=[0])
        del reg["generator"]
        cfg = job_config(mp, val=None, sampler="distributed", world_size=1, rank=0,
                         set_epoch=False, register=reg)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            header, epochs = jobs[0].finish()
        check_run(c, header, epochs, data, torch_want, EPOCHS, val=False, distributed=True)
        c(len({tuple(i for i, _ in ep["train"]) for ep in epochs}) == 1,
          "the epochs' orders differ: the job did call set_epoch")
        check_every_snapshot(c, epochs)
        final = epochs[-1]["status_train"] if epochs else status_now(mp)
        lo = find_loader(final, "default", "train") or {}
        warning = lo.get("warning")
        c(isinstance(warning, str) and "set_epoch" in warning,
          f"loader warning {warning!r}, want one naming set_epoch")
        seeds = [e.get("seed_epoch") for e in lo.get("epochs") or []]
        c(seeds == [0] * EPOCHS, f"seed_epoch per epoch {seeds}, want {[0] * EPOCHS}")
        c(final["backing"]["files"] <= len(data.train),
          f"{final['backing']['files']} backing file reads for {len(data.train)} files")
        ml.log(f"{what}: warning {warning!r}")
    c.done()


def case_detected(data, py, torch_want, what):
    """Issue 16: the script registers nothing; its DistributedSampler (world
    2, rank 1, the script's seed) is recognised from its first opens."""
    mp = mountpoint(data, what)
    c = Checks(what)
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        cfg = job_config(mp, val=None, sampler="distributed", world_size=2, rank=1)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            header, epochs = jobs[0].finish()
        if c(header is not None, "the job printed no header"):
            c(header["torch"].startswith(torch_want), f"torch {header['torch']}, want {torch_want}")
        c(len(epochs) == EPOCHS, f"{len(epochs)} epochs, want {EPOCHS}")
        for ep in epochs:
            got = ep["train"]
            bad = [i for i, h in got if not 0 <= i < len(data.train) or data.train[i] != h]
            c(not bad, f"epoch {ep['epoch']}: wrong bytes for train samples {bad[:5]}")
            c(len(got) == len(data.train) // 2, f"epoch {ep['epoch']}: {len(got)} samples")
        st = status_now(mp)
        c(st.get("registered") == "detected", f"registered {st.get('registered')!r}, "
          f"detection {st.get('detection')}")
        reg = st.get("detection", {}).get("registration") or {}
        found = (reg.get("sampler"), reg.get("world_size"), reg.get("ranks"),
                 (reg.get("seed") or 0) + (reg.get("start_epoch") or 0), reg.get("batch_size"),
                 reg.get("num_workers"))
        want = ("distributed", 2, [1], SEED, BATCH, WORKERS)
        c(found == want, f"detected {found}, the job is {want}")
        c(st.get("mode") == "clairvoyant", f"mode {st.get('mode')} ({st.get('reason')})")
        ml.log(f"{what}: detected after {st.get('detection', {}).get('opens_at_detection')} "
               f"opens as {reg}")
    c.done()


def case_no_candidate(data, py, torch_want, what):
    """Registered with a wrong seed: nothing in the chain fits."""
    mp = mountpoint(data, what)
    c = Checks(what)
    epochs_run = 2
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        # The deep search ends at 2^20 words: a fallback within milliseconds.
        reg = registration(py != TORCH_1_13, seed=SEED + 1, epochs=epochs_run,
                           pre_draws_max=1 << 20)
        cfg = job_config(mp, epochs=epochs_run, register=reg)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            header, epochs = jobs[0].finish()
        check_run(c, header, epochs, data, torch_want, epochs_run)
        # As the job saw it: once it exits, its job is retired.
        st = epochs[-1]["status_val"] if epochs else status_now(mp)
        c(st.get("mode") == "fallback", f"mode {st.get('mode')}, want fallback")
        reason = st.get("reason") or ""
        c(reason.startswith("job default, loader 'train': "),
          f"top-level reason {reason!r} does not name the job and loader")
        lo = find_loader(st, "default", "train") or {}
        c(lo.get("mode") == "fallback", f"loader train mode {lo.get('mode')}, want fallback")
        why = lo.get("reason") or ""
        c("searched" in why or "draws" in why,
          f"loader reason {why!r} does not say what was searched")
        files = sum(len(f) for _, _, f in os.walk(data.backing))
        c(ml.read_all(mp, data.backing) == files, "the re-read missed files")
        ml.log(f"{what}: {reason!r}")
    c.done()


def model_draws(name, seed=SEED):
    """The global generator's 32-bit draws torch 1.13 makes building
    torchvision's `name` (8 classes) after manual_seed(seed), as clairfs's
    Python helper reads them from the generator's state."""
    code = ("import sys, torch, torchvision; torch.manual_seed(int(sys.argv[1])); "
            "getattr(torchvision.models, sys.argv[2])(num_classes=8); "
            "from clairfs._generator import draws_since_seed; print(draws_since_seed(torch)[1])")
    env = dict(os.environ, PYTHONPATH=os.path.join(ml.SOURCE_ROOT, "python"))
    out = subprocess.run([TORCH_1_13, "-c", code, str(seed), name], env=env, text=True,
                         capture_output=True, timeout=300)
    ml.check(out.returncode == 0, f"counting {name}'s draws failed: {out.stderr[-400:]}")
    return int(out.stdout)


def case_real_model(data, py, torch_want, what):
    """The PyTorch examples' ImageNet script's shape: seed, then a real
    model (resnet18: millions of draws no user can know), then a shuffled
    train loader and a sequential val loader, registered with only what
    the script shows. The deep chain search finds the model's draws in
    epoch 0; every epoch is followed, and the later ones read nothing
    from the backing store."""
    words = model_draws("resnet18")
    mp = mountpoint(data, what)
    c = Checks(what)
    with ml.mounted(data.backing, mp, "--mem", "256M"):
        reg = {"job": "imagenet", "seed": SEED, "batch_size": BATCH, "num_workers": WORKERS,
               "epochs": EPOCHS,
               "loaders": [{"root": "train"}, {"root": "val", "sampler": "sequential"}]}
        cfg = job_config(mp, model="resnet18", register=reg)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            header, epochs = jobs[0].finish()
        check_run(c, header, epochs, data, torch_want, EPOCHS)
        check_every_snapshot(c, epochs, "imagenet", roots=("train", "val"))
        final = epochs[-1]["status_val"] if epochs else status_now(mp)
        check_draw_offsets(c, final, [words] + [0] * (EPOCHS - 1), "imagenet")
        lo = find_loader(final, "imagenet", "train") or {}
        search = lo.get("chain_search") or {}
        c(search.get("state") == "found" and lo.get("draw_offset") == words,
          f"chain search {search}, draw_offset {lo.get('draw_offset')}, want {words} found")
        # The opens held while it searched were matched once it found the seed.
        c(lo.get("run_matched") == lo.get("run_opens"),
          f"train loader matched {lo.get('run_matched')} of {lo.get('run_opens')} opens")
        for prev, ep in zip(epochs, epochs[1:]):
            read = ep["status_val"]["backing"]["files"] - prev["status_val"]["backing"]["files"]
            c(read == 0, f"epoch {ep['epoch']} read {read} files from the backing store")
        ml.log(f"{what}: {words} draws found in {search.get('cpu_seconds')} s of CPU "
               f"({search.get('scanned')} words scanned), backing {final['backing']['files']} files")
    c.done()


def detected_registrations(st):
    """The registrations detection made, as status shows them."""
    det = st.get("detection") or {}
    regs = det.get("registrations") or [det.get("registration")]
    out = {}
    for r in regs:
        for lo in (r or {}).get("loaders") or [r or {}]:
            if lo.get("root") is not None:
                out[lo["root"]] = lo
    return out


def case_real_model_detected(data, py, torch_want, what):
    """Issue 47: the same script with a common seed (42) registers nothing.
    Zero configuration searches the listed seeds' global chains and finds
    the sampler's seed below resnet18's initialisation; the validation
    loader beside it is detected as a job of its own; both are then
    followed as if their registrations had been written."""
    seed = 42
    words = model_draws("resnet18", seed)
    mp = mountpoint(data, what)
    c = Checks(what)
    log = mp + ".log"
    with ml.mounted(data.backing, mp, "--mem", "256M", "--log-file", log,
                    "--log-level", os.environ.get("CLAIRFS_TEST_LOG_LEVEL", "info")):
        # The job is small (epoch 0 lasts seconds; ImageNet's lasts an
        # hour): epoch 1 waits until the training loader is detected, epoch
        # 2 until the validation loader is too, so that what is checked is
        # what detection finds, not how fast this machine is.
        gates = {"1": mp + "-detected-train", "2": mp + "-detected-val"}
        cfg = job_config(mp, model="resnet18", seed=seed, gates=gates)
        with jobs_killed_on_exit([Job(py, cfg, what)]) as jobs:
            for root, gate in (("train", gates["1"]), ("val", gates["2"])):
                ml.wait_until(lambda r=root: r in detected_registrations(status_now(mp)), 240, 0.2)
                with open(gate, "w"):
                    pass
            header, epochs = jobs[0].finish()
        c(header is not None and not header["registered"], f"the job registered itself: {header}")
        if header is not None:
            header["registered"] = True  # check_run's other checks
        check_run(c, header, epochs, data, torch_want, EPOCHS)
        # As the job saw it at its end (once it exits, detection starts over).
        st = epochs[-1]["status_val"] if epochs else status_now(mp)
        det = st.get("detection") or {}
        regs = detected_registrations(st)
        train, val = regs.get("train") or {}, regs.get("val") or {}
        found = (train.get("sampler"), train.get("generator"), train.get("seed"),
                 train.get("pre_draws"), train.get("batch_size"), train.get("num_workers"))
        want = ("random", "global", seed, words, BATCH, WORKERS)
        c(found == want, f"detected {found}, the job is {want}; detection {det}")
        c(val.get("sampler") == "sequential" and val.get("batch_size") == BATCH,
          f"validation loader detected as {val}; detection {det}")
        chain = det.get("chain_search") or {}
        c(chain.get("state") == "found", f"chain search {chain}")
        c(st.get("registered") == "detected", f"registered {st.get('registered')!r}")
        # Once both are detected, every later pass is predicted: clairvoyant
        # when it ends, and no file is read twice from the backing store.
        for ep in epochs[2:]:
            for part in ("status_train", "status_val"):
                s = ep[part]
                c(s.get("mode") == "clairvoyant",
                  f"epoch {ep['epoch']} {part}: mode {s.get('mode')} ({s.get('reason')})")
        c(st["backing"]["files"] == len(data.train) + len(data.val),
          f"{st['backing']['files']} files read from the backing store, want each once")
        if c.failures:
            with open(log, errors="replace") as f:
                ml.log(f"the daemon's log:\n" + "".join(f.readlines()[-40:]))
        first = epochs[0]["status_train"] if epochs else {}
        ml.log(f"{what}: {words} draws; at the end of epoch 0's train pass: registered "
               f"{first.get('registered')!r}; detection {det}")
    c.done()


@ml.main
def test():
    skip_unless_torch()
    pin = pinned_torch()
    py2, version = torch2_python()
    with ml.temp_dir() as tmp:
        data = Data(tmp)
        ml.log(f"dataset: train {len(data.train)} files {data.sizes['train'] / 1e6:.1f} MB, "
               f"val {len(data.val)} files {data.sizes['val'] / 1e6:.1f} MB")
        old = ("1.13", TORCH_1_13)
        cases = [("listing", lambda: case_listing(data)),
                 ("script_order", lambda: case_script_order(data))]

        def add(fn, name, runtime, **kw):
            want, py = runtime
            what = f"{name}[{want}]"
            cases.append((what, lambda: fn(data, py, want, what, **kw)))

        add(case_issue_script, "issue_script", old)
        add(case_issue_script, "mixup", old, mixup=True)
        add(case_issue_script, "pre_model", old, pre_model=True)
        add(case_issue_script, "persistent", old, persistent=True)
        add(case_loaders, "loaders", old)
        add(case_two_jobs, "two_jobs", old)
        add(case_kill_one, "kill_one", old)
        add(case_distributed_no_set_epoch, "distributed_no_set_epoch", old)
        add(case_no_candidate, "no_candidate", old)
        add(case_detected, "detected", old)
        add(case_real_model, "resnet18", old)
        add(case_real_model_detected, "resnet18_detected", old)
        if py2 is not None and version.split("+")[0] != pin:
            cases.append(("torch2_venv", lambda: ml.check(False, (
                f"{VENV} has torch {version}, {REQUIREMENTS} pins {pin}: "
                f"run bash scripts/install-deps.sh test"))))
        elif py2 is not None:
            new = (pin, py2)
            add(case_issue_script, "issue_script", new)
            add(case_loaders, "loaders", new)
            add(case_two_jobs, "two_jobs", new)
            add(case_kill_one, "kill_one", new)
            add(case_detected, "detected", new)
        elif os.environ.get("CI") == "true":
            cases.append(("torch2_venv", lambda: ml.check(False, f"CI: {version}")))
        else:
            ml.log(f"SKIP the torch 2.x runs: {version}")
        ml.run_cases(*cases)
