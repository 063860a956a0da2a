#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Zero configuration (issue 16): real, unmodified PyTorch jobs (Debian's
torch 1.13) reading through a real mount that nobody registered a job with.

- DistributedSampler with its default seed, world size 8, rank 5, batch 32,
  3 workers, 2 epochs: detected (registered "detected", the keys found)
  before any worker began its third batch; clairvoyant from then on, with
  at least 99% of the opens since detection matched, and epoch 1 followed
  without another search;
- shuffle=True with generator=Generator().manual_seed(42), batch 16, 2
  workers: detected as that seed;
- a DistributedSampler job resumed at epoch 37: detected at epoch 37;
- a random 64-bit seed: never detected, every byte right, unregistered;
- a sequential pass (shuffle=False): detected as sequential;
- files read in sorted order by a plain reader (not torch): not taken for a
  shuffled job;
- processes reading in an order no job explains, one after another, with
  --detect-cpu 0.01: one search, the later ones deferred, and status (JSON
  and summary) says how long the next waits;
- one detected job after another: the first registration falls back on
  the second job's opens, is dropped, and the second job is detected;
- --no-detect: the same default-seed job stays unregistered;
- a written registration replaces a detected job.
Every byte each job got equals the backing file's.

Needs root, /dev/fuse and /usr/bin/python3 with torch (exit 77 otherwise)."""
import contextlib
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

from torchlib import check_bytes, digests, finish, start_job, status  # noqa: E402

CLASSES, PER_CLASS = 16, 256  # 4096 small files: 512 per rank of 8, 16 batches of 32


def make_small_dataset(root):
    rng = random.Random(5)
    for c in range(CLASSES):
        d = os.path.join(root, f"c{c:02d}")
        os.makedirs(d)
        for i in range(PER_CLASS):
            with open(os.path.join(d, f"s{i:04d}.jpg"), "wb") as f:
                f.write(rng.randbytes(rng.randint(500, 6000)))


@contextlib.contextmanager
def mounted(tmp, name, *options):
    """The dataset under tmp/data mounted at tmp/mnt-NAME with --mem 256M.
    A failing case shows the daemon's log: what detection saw and decided is
    the only account of a failure that depends on timing."""
    mp = os.path.join(tmp, f"mnt-{name}")
    log = os.path.join(tmp, f"{name}.log")
    os.makedirs(mp)
    with ml.mounted_logged(os.path.join(tmp, "data"), mp, log, "--mem", "256M", *options,
                           lines=40):
        yield mp


def settled(mp):
    """Waits until detection is neither searching nor confirming."""
    ok = ml.wait_until(lambda: status(mp)["detection"]["state"] not in ("searching", "confirming"),
                       60)
    ml.check(ok, f"detection still busy after 60 s: {status(mp)['detection']}")


def loader_of(st):
    jobs = st["jobs"]
    ml.check(len(jobs) == 1 and len(jobs[0]["loaders"]) == 1, f"one detected loader: {jobs}")
    return jobs[0]["loaders"][0]


def registration_of(st):
    reg = st["detection"].get("registration")
    ml.check(isinstance(reg, dict), f"status shows no detected registration: {st['detection']}")
    return reg


def check_detected(st, what, **keys):
    ml.check(st["registered"] == "detected", f"{what}: registered {st['registered']!r}, "
             f"detection {st['detection']}")
    ml.check(st["mode"] == "clairvoyant", f"{what}: mode {st['mode']} ({st.get('reason')})")
    reg = registration_of(st)
    for k, v in keys.items():
        ml.check(reg.get(k) == v, f"{what}: detected {k} {reg.get(k)!r}, the job's is {v!r}: {reg}")
    return reg


def case_distributed_default_seed(tmp, expected):
    with mounted(tmp, "d") as mp:
        epochs = finish(start_job(mp, sampler="distributed", world_size=8, rank=5, seed=0,
                                  batch_size=32, num_workers=3, epochs=2,
                                  status=os.path.join(mp, ".clairfs", "status")),
                        "distributed")
        check_bytes(epochs, expected, "distributed", share=len(expected) // 8)
        # As the job read it in its last epoch: once it exits, its detected
        # job is dropped (detection starts over), which may come before a
        # status read here.
        st = epochs[-1]["status"]
        check_detected(st, "distributed", sampler="distributed", seed=0, start_epoch=0,
                       world_size=8, ranks=[5], batch_size=32, num_workers=3)
        det = st["detection"]
        # The first two batches of each of the 3 workers are 192 opens.
        ml.check(det["opens_at_detection"] <= 2 * 32 * 3,
                 f"detected only after {det['opens_at_detection']} opens")
        ml.check(det["searches"] == 1, f"{det['searches']} searches for one job")
        lo = loader_of(st)
        rate = lo["run_matched"] / max(lo["run_opens"], 1)
        ml.check(rate >= 0.99, f"after detection {lo['run_matched']}/{lo['run_opens']} matched")
        # Epoch 1 was followed as the registration's next epoch.
        e1 = epochs[1]["status"]
        ml.check(e1["mode"] == "clairvoyant" and e1["epoch"] == 1,
                 f"epoch 1: mode {e1['mode']}, epoch {e1['epoch']}")
        ml.check(st["prefetch"]["prefetched"] > 0, "nothing was prefetched after detection")
        ml.log(f"distributed: detected after {det['opens_at_detection']} opens, search "
               f"{det['search_cpu_seconds'] * 1e3:.1f} ms CPU; {lo['run_matched']}/"
               f"{lo['run_opens']} matched since; backing {st['backing']['files']} files")


def case_explicit_generator(tmp, expected):
    with mounted(tmp, "g") as mp:
        epochs = finish(start_job(mp, seed=42, batch_size=16, num_workers=2, epochs=2),
                        "generator 42")
        check_bytes(epochs, expected, "generator 42")
        st = status(mp)
        check_detected(st, "generator 42", sampler="random", generator="explicit", seed=42,
                       batch_size=16, num_workers=2)
        lo = loader_of(st)
        rate = lo["run_matched"] / max(lo["run_opens"], 1)
        ml.check(rate >= 0.99, f"generator 42: {lo['run_matched']}/{lo['run_opens']} matched")
        ml.log(f"generator 42: detected after {st['detection']['opens_at_detection']} opens; "
               f"{lo['run_matched']}/{lo['run_opens']} matched since")


def case_resumed(tmp, expected):
    with mounted(tmp, "37") as mp:
        epochs = finish(start_job(mp, sampler="distributed", world_size=2, rank=0, seed=0,
                                  start_epoch=37, batch_size=16, num_workers=2, epochs=2),
                        "resumed")
        check_bytes(epochs, expected, "resumed", share=len(expected) // 2)
        st = status(mp)
        check_detected(st, "resumed", sampler="distributed", seed=0, start_epoch=37,
                       world_size=2, ranks=[0])
        ml.log(f"resumed at 37: detected after {st['detection']['opens_at_detection']} opens")


def case_unguessable_seed(tmp, expected):
    seed = random.Random().getrandbits(64)
    while seed & 0xFFFFFFFF <= 200000:  # only the low 32 bits reach the generator
        seed = random.Random().getrandbits(64)
    with mounted(tmp, "u") as mp:
        epochs = finish(start_job(mp, seed=seed, batch_size=16, num_workers=2, epochs=2),
                        "unguessable")
        check_bytes(epochs, expected, "unguessable")
        # The job may end before the search of its last epoch's workers does.
        settled(mp)
        st = status(mp)
        ml.check(st["registered"] is False and st["mode"] == "unregistered",
                 f"seed {seed}: registered {st['registered']!r}, mode {st['mode']}, "
                 f"detection {st['detection']}")
        det = st["detection"]
        ml.check(det["searches"] >= 1 and det["state"] == "watching",
                 f"seed {seed}: detection {det}")
        ml.log(f"seed {seed}: not detected after {det['searches']} searches "
               f"({det['search_cpu_seconds'] * 1e3:.0f} ms CPU the last)")


def case_sequential(tmp, expected):
    with mounted(tmp, "s") as mp:
        epochs = finish(start_job(mp, sampler="sequential", batch_size=16, num_workers=2,
                                  epochs=1), "sequential")
        check_bytes(epochs, expected, "sequential")
        ml.check([i for i, _ in epochs[0]["samples"]] == list(range(len(expected))),
                 "a sequential pass yields the samples in order")
        st = status(mp)
        check_detected(st, "sequential", sampler="sequential", batch_size=16, num_workers=2)


def case_sorted_reader(tmp, expected):
    """A plain program reading the files in sorted order, one process."""
    with mounted(tmp, "r") as mp:
        paths = sorted(os.path.relpath(os.path.join(d, f), mp)
                       for d, _, fs in os.walk(mp) if ".clairfs" not in d for f in fs)
        for rel in paths[:300]:
            with open(os.path.join(mp, rel), "rb") as f:
                got = f.read()
            with open(os.path.join(tmp, "data", rel), "rb") as g:
                ml.check(got == g.read(), f"{rel}: bytes differ")
        settled(mp)
        st = status(mp)
        reg = st["detection"].get("registration") or {}
        ml.check(reg.get("sampler") not in ("random", "distributed") or reg.get("shuffle") is False,
                 f"sorted reads taken for a shuffled job: {st['detection']}")
        ml.log(f"sorted reader: registered {st['registered']!r}, sampler {reg.get('sampler')}")


def case_cpu_budget(tmp, expected):
    """Processes that read in an order no job explains, one after another
    (a script run in a loop): each is fresh evidence, but with
    --detect-cpu 0.01 the first failed search spends the whole budget,
    so the next due search waits, and status says for how long."""
    with mounted(tmp, "b", "--detect-cpu", "0.01") as mp:
        paths = sorted(os.path.relpath(os.path.join(d, f), mp)
                       for d, _, fs in os.walk(mp) if ".clairfs" not in d for f in fs)
        for k in range(3):
            mine = random.Random(k).sample(paths, 150)
            code = ("import sys\nfor p in sys.argv[1:]:\n    open(p, 'rb').read()\n")
            r = ml.run([sys.executable, "-c", code, *(os.path.join(mp, p) for p in mine)],
                       timeout=60)
            ml.check(r.returncode == 0, f"reader {k}: {r.stderr.strip()}")
            settled(mp)
        for rel in random.Random(9).sample(paths, 50):
            with open(os.path.join(mp, rel), "rb") as f, \
                    open(os.path.join(tmp, "data", rel), "rb") as g:
                ml.check(f.read() == g.read(), f"{rel}: bytes differ")
        st = status(mp)
        det = st["detection"]
        ml.check(st["registered"] is False, f"a job was registered: {det}")
        ml.check(det["searches"] == 1 and det["searches_deferred"] >= 1,
                 f"searches {det['searches']}, deferred {det['searches_deferred']}: the budget "
                 f"did not hold the later processes' searches back: {det}")
        ml.check(det["cpu_share"] == 0.0001 and det["search_cpu_total_seconds"] > 0,
                 f"budget figures: {det}")
        ml.check(isinstance(det["next_search_in_seconds"], (int, float)) and
                 det["next_search_in_seconds"] > 0, f"no wait shown: {det}")
        line = [l for l in ml.run([ml.CLAIRFS, "status", mp]).stdout.splitlines()
                if l.startswith("detection:")]
        ml.check(line and "next search in" in line[0] and "0.01% of one core" in line[0],
                 f"the status summary does not say a search waits: {line}")
        ml.log(f"budget: 1 search ({det['search_cpu_total_seconds'] * 1e3:.0f} ms CPU), "
               f"{det['searches_deferred']} deferred, next in {det['next_search_in_seconds']} s")


def case_next_job(tmp, expected):
    """A detected job ends and another starts: the first registration falls
    back on the new job's opens, is dropped, and the new job is detected."""
    with mounted(tmp, "j") as mp:
        a = finish(start_job(mp, sampler="distributed", world_size=4, rank=1, seed=0,
                             batch_size=16, num_workers=2, epochs=1), "job a")
        check_bytes(a, expected, "job a", share=len(expected) // 4)
        settled(mp)
        first = registration_of(status(mp))
        ml.check(first["world_size"] == 4, f"job a detected as {first}")
        # Job b may start before job a's registration is retired (once a
        # second): its first opens then go to that registration, which
        # falls back, is dropped, and detection starts over on b's later
        # opens (a search needs a generation of workers whose first opens
        # it saw). The first search after the drop may see b's workers
        # mid-epoch, find no torch job and try every tf.data pipeline (a
        # second of CPU at nice 10): ten short epochs were over before it
        # ended on a loaded machine (a CI run). So job b runs until the
        # test has seen it detected (stop_file), at most 200 epochs.
        stop_b = os.path.join(tmp, "stop-b")
        job_b = start_job(mp, sampler="distributed", world_size=2, rank=0, seed=1234,
                          batch_size=16, num_workers=2, epochs=200, stop_file=stop_b)
        # Its output is read as it comes: an epoch's line (every sample's
        # digest) is more than a pipe holds, and a job blocked writing it
        # neither exits nor opens, so the wait below would run to its end.
        done = {}
        reader = threading.Thread(target=lambda: done.update(b=finish(job_b, "job b")),
                                  daemon=True)
        reader.start()
        # Read while job b runs: once it exits, its detected job is dropped
        # (detection starts over), and job b may be found as late as its
        # last epoch's workers.
        seen = {}

        def detected_b():
            st = status(mp)
            reg = (st.get("detection") or {}).get("registration") or {}
            if st.get("registered") == "detected" and reg.get("world_size") == 2:
                seen.update(st)
                return True
            return job_b.poll() is not None

        ml.wait_until(detected_b, 300, 0.05)
        open(stop_b, "w").close()
        reader.join(600)
        ml.check("b" in done, f"job b did not finish: returncode {job_b.returncode}")
        b = done["b"]
        check_bytes(b, expected, "job b", share=len(expected) // 2)
        st = seen or status(mp)
        reg = check_detected(st, "job b", sampler="distributed", world_size=2, ranks=[0])
        # Found at the epoch whose workers it saw first (seed + epoch).
        ml.check(1234 <= reg["seed"] + reg["start_epoch"] <= 1234 + len(b) - 1,
                 f"job b detected as {reg}, in {len(b)} epochs")
        ml.log(f"next job: detected as seed {reg['seed']} epoch {reg['start_epoch']} after "
               f"{st['detection']['searches']} searches")


def case_no_detect(tmp, expected):
    with mounted(tmp, "n", "--no-detect") as mp:
        epochs = finish(start_job(mp, sampler="distributed", world_size=4, rank=1, seed=0,
                                  batch_size=16, num_workers=2, epochs=1), "no-detect")
        check_bytes(epochs, expected, "no-detect", share=len(expected) // 4)
        st = status(mp)
        ml.check(st["registered"] is False and st["mode"] == "unregistered",
                 f"--no-detect: registered {st['registered']!r}, mode {st['mode']}")
        ml.check(st["detection"]["state"] == "off", f"--no-detect: {st['detection']}")


def case_written_wins(tmp, expected):
    with mounted(tmp, "w") as mp:
        epochs = finish(start_job(mp, sampler="distributed", world_size=4, rank=2, seed=0,
                                  batch_size=16, num_workers=2, epochs=1), "before")
        check_bytes(epochs, expected, "before", share=len(expected) // 4)
        ml.check(status(mp)["registered"] == "detected", "the first job was not detected")
        ml.register(mp, sampler="random", generator="explicit", seed=9, batch_size=8,
                    num_workers=2)
        st = status(mp)
        ml.check(st["registered"] is True, f"after writing a registration: {st['registered']!r}")
        ml.check(len(st["jobs"]) == 1 and st["detection"].get("registration") is None,
                 f"the detected job is still there: {st['jobs']}")
        epochs = finish(start_job(mp, seed=9, batch_size=8, num_workers=2, epochs=1), "written")
        check_bytes(epochs, expected, "written")
        st = status(mp)
        ml.check(st["mode"] == "clairvoyant" and st["registered"] is True,
                 f"written job: mode {st['mode']}, registered {st['registered']!r}")


@ml.main
def test():
    with ml.temp_dir("clairfs-detect-") as tmp:
        data = os.path.join(tmp, "data")
        make_small_dataset(data)
        expected = digests(data)
        ml.log(f"dataset: {len(expected)} files")
        ml.run_cases(*((c.__name__[5:], lambda c=c: c(tmp, expected)) for c in (
            case_distributed_default_seed, case_explicit_generator, case_resumed,
            case_unguessable_seed, case_sequential, case_sorted_reader, case_cpu_budget,
            case_next_job,
            case_no_detect, case_written_wins)))
