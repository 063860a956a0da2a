# SPDX-License-Identifier: MIT
"""The load test's large-file profile, shared by the `stress` suite
(tests/stress/test_large.py, a bounded run) and the soak (bench/soak.py
--large): Python 3 stdlib only.

loadlib.py loads the path of small files held whole. This one loads what
issue 20 added: files held by chunk (RAM and an SSD tier), read-ahead for
sequential readers, drop-behind, and a job of layout "ranges" whose
samples are pushed into the page cache ahead of its reads and dropped
behind them. Reader processes, side by side over one mount:

- a follower (reader 0) reads the registered job's samples in the order
  `clairfs order` gives, each through a read-only shared mapping of the
  packed file with MADV_RANDOM, as LMDB's readers do: one 4 KiB READ per
  page the push missed;
- streamers read a random large file from its start (or a random offset)
  to its end, or part of it, in 256 KiB reads, and sometimes drop its pages
  at the close (POSIX_FADV_DONTNEED);
- mappers map a random large file and read random slices of it with
  MADV_RANDOM;
- preaders read random ranges of any file (small ones too, some past EOF).

The packed file is the follower's alone: pages another reader faulted in
would hide samples from the job's READs, and the job would fall back (as
it should: status says so), which would leave the push path unloaded.

Every byte read is compared with the backing file's. Meanwhile the main
process reads the status in a loop, runs `clairfs status` and `--json`,
starts a stage pass (which fills the chunks' SSD tier) and writes the same
registration again (accepted, changing nothing) and bad ones (refused with
EINVAL). At the end it unmounts lazily with the readers still running.

Everything random follows one seed (reader r uses seed * 1000 + r), and a
failure names the reader, the read's number, the file, offset and length.
"""
import array
import contextlib
import json
import mmap
import os
import random
import time

import loadlib
from loadlib import MIB, diff_report
import mountlib as ml
from side_load import SideLoad

RECORD = 16 * 1024          # the packed file's records: 4 pages each
RECORDS = 2048              # 32 MiB
SHARDS = 10                 # 2-8 MiB each
SMALL = 200                 # whole files of up to 64 KiB beside them
CHUNK = "256K"              # many chunks per file, and READs across them
STREAM_READ = 256 * 1024    # what TFRecordDataset asks for
# The follower's epochs, as predicted up front: four a second of the run
# (it reads two or three), at least 64; past them it reads at random.
ORDER_EPOCHS_PER_S, ORDER_EPOCHS_MIN, ORDER_EPOCHS_MAX = 4, 64, 8000
BATCH = 16
PACKED = "packed.bin"
MANIFEST = "ranges.txt"
# Chunk counters that show each path was exercised, with what must be > 0.
EXERCISED = [("chunks.reads", "READs served from chunks"),
             ("chunks.read_ahead", "chunks read ahead of a streamer"),
             ("chunks.dropped_behind", "chunks dropped behind a streamer"),
             ("chunks.pushed.samples", "samples pushed ahead of the follower"),
             ("chunks.ssd.chunks", "chunks in the SSD tier")]


# ---------------------------------------------------------------- dataset

def make_dataset(root, seed):
    """The packed file, the shards and the small files; returns {relative
    path: size}."""
    rng = random.Random(seed + 2)
    sizes = {PACKED: RECORD * RECORDS}
    os.makedirs(os.path.join(root, "shards"))
    os.makedirs(os.path.join(root, "small"))
    for s in range(SHARDS):
        # Some sizes off any page or chunk boundary, so EOF lands mid-chunk.
        sizes[f"shards/shard-{s:02d}.bin"] = rng.randint(2 * MIB, 8 * MIB) + rng.choice([0, 1, 4095])
    for s in range(SMALL):
        sizes[f"small/f{s:03d}.bin"] = rng.randint(0, 64 * 1024)
    for rel, size in sizes.items():
        with open(os.path.join(root, rel), "wb") as f:
            for done in range(0, size, 4 * MIB):
                f.write(rng.randbytes(min(4 * MIB, size - done)))
    return sizes


def make_manifest(root):
    r = ml.clairfs("ranges", "packed", os.path.join(root, PACKED), "--record-size", str(RECORD),
                   "--root", root, "--out", os.path.join(root, MANIFEST))
    ml.check(r.returncode == 0, f"clairfs ranges packed: exit {r.returncode}: {r.stderr.strip()}")


def registration(seed):
    return {"seed": seed, "generator": "explicit", "batch_size": BATCH, "num_workers": 0,
            "layout": "ranges", "manifest": MANIFEST}


def job_order(seed, seconds):
    """The job's samples, epoch by epoch, as `clairfs order` predicts them
    (arrays: thousands of epochs of Python ints would take ~70 bytes each)."""
    epochs = int(min(ORDER_EPOCHS_MAX,
                     max(ORDER_EPOCHS_MIN, ORDER_EPOCHS_PER_S * (seconds or 0))))
    reg = registration(seed)
    r = ml.clairfs("order", "--n", str(RECORDS), "--seed", str(seed), "--generator",
                   reg["generator"], "--batch-size", str(BATCH), "--epochs", str(epochs),
                   timeout=600)
    ml.check(r.returncode == 0, f"clairfs order: exit {r.returncode}: {r.stderr.strip()}")
    return [array.array("I", json.loads(line)) for line in r.stdout.splitlines()]


# ---------------------------------------------------------------- readers

class Reader:
    """One reader process's state: its random numbers, figures and failures."""

    def __init__(self, rid, seed, mp, backing, sizes):
        self.rid, self.seed, self.mp, self.backing = rid, seed, mp, backing
        self.rng = random.Random(seed * 1000 + rid)
        self.sizes = sizes
        # The packed file is the follower's alone: another reader's pages of
        # it would hide samples from the job's READs and make it fall back.
        self.large = sorted(rel for rel, size in sizes.items() if size > 1 * MIB and rel != PACKED)
        self.others = sorted(rel for rel in sizes if rel != PACKED)
        self.stats = {"reads": 0, "bytes": 0, "wrong_bytes": 0, "errors": 0,
                      "open_s": b"", "failures": [], "after_unmount": ""}
        self.n = 0

    def want(self, rel, off, length):
        with open(os.path.join(self.backing, rel), "rb") as f:
            return os.pread(f.fileno(), length, off)

    def compare(self, rel, off, got, want):
        self.stats["reads"] += 1
        self.stats["bytes"] += len(got)
        if got == want:
            return
        wrong, text = diff_report(got, want)
        self.stats["wrong_bytes"] += wrong
        self.failure(f"{rel} offset {off} length {len(want)}: {text}")

    def failure(self, text):
        if len(self.stats["failures"]) < loadlib.MAX_FAILURES_SHOWN:
            self.stats["failures"].append(f"reader {self.rid} read {self.n} (seed {self.seed}, "
                                          f"{type(self).__name__}): {text}")

    def step(self):
        raise NotImplementedError


class Follower(Reader):
    """The registered job: its samples in order, through a mapping."""

    def __init__(self, *args, order):
        super().__init__(*args)
        self.order = order
        self.epoch, self.at = 0, 0
        self.fd = os.open(os.path.join(self.mp, PACKED), os.O_RDONLY)
        self.map = mmap.mmap(self.fd, 0, prot=mmap.PROT_READ)
        self.map.madvise(mmap.MADV_RANDOM)
        with open(os.path.join(self.backing, PACKED), "rb") as f:
            self.data = f.read()

    def step(self):
        if self.epoch < len(self.order):
            i = self.order[self.epoch][self.at]
            self.at += 1
            if self.at == len(self.order[self.epoch]):
                self.epoch, self.at = self.epoch + 1, 0
        else:
            i = self.rng.randrange(RECORDS)
        off = i * RECORD
        self.compare(PACKED, off, self.map[off:off + RECORD], self.data[off:off + RECORD])


class Streamer(Reader):
    """A large file from its start (or anywhere) onwards, in 256 KiB reads."""

    def step(self):
        rel = self.rng.choice(self.large)
        size = self.sizes[rel]
        off = 0 if self.rng.random() < 0.7 else self.rng.randrange(size)
        end = size if self.rng.random() < 0.6 else min(size, off + self.rng.randint(1, 4 * MIB))
        fd = os.open(os.path.join(self.mp, rel), os.O_RDONLY)
        try:
            with open(os.path.join(self.backing, rel), "rb") as b:
                while off < end:
                    got = os.pread(fd, STREAM_READ, off)
                    self.compare(rel, off, got, os.pread(b.fileno(), STREAM_READ, off))
                    if not got:
                        break
                    off += len(got)
            if self.rng.random() < 0.3:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Mapper(Reader):
    """Random slices of a mapped large file."""

    def step(self):
        rel = self.rng.choice(self.large)
        size = self.sizes[rel]
        fd = os.open(os.path.join(self.mp, rel), os.O_RDONLY)
        try:
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        with m, open(os.path.join(self.backing, rel), "rb") as b:
            m.madvise(mmap.MADV_RANDOM)
            for _ in range(16):
                off = self.rng.randrange(size)
                length = self.rng.randint(1, 64 * 1024)
                self.compare(rel, off, m[off:off + length], os.pread(b.fileno(), length, off))


class Preader(Reader):
    """Random ranges of any file, as loadlib's readers do."""

    def step(self):
        rel = self.rng.choice(self.others)
        off, length = loadlib.pick_range(self.rng, self.sizes[rel])
        fd = os.open(os.path.join(self.mp, rel), os.O_RDONLY)
        try:
            got = os.pread(fd, length, off)
            if self.rng.random() < 0.5:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        self.compare(rel, off, got, self.want(rel, off, length))


KINDS = [Streamer, Mapper, Preader]


def reader(rid, seed, mp, backing, sizes, order, progress, stop, unmounting, out):
    """A reader process: steps until stop; its figures go to out."""
    r = None
    try:
        r = (Follower(rid, seed, mp, backing, sizes, order=order) if rid == 0
             else KINDS[(rid - 1) % len(KINDS)](rid, seed, mp, backing, sizes))
        while not stop.is_set():
            # The follower is a job that ends with the unmount: holding its
            # mapping, it would keep a lazily unmounted mount alive.
            if rid == 0 and unmounting.is_set():
                break
            try:
                r.step()
            except OSError as e:
                if unmounting.is_set():  # the mount is going away: expected
                    r.stats["after_unmount"] = f"{type(e).__name__}: {e}"
                    break
                r.stats["errors"] += 1
                r.failure(f"{type(e).__name__}: {e}")
            r.n += 1
            progress[rid] = r.stats["reads"]
    except OSError as e:  # the follower's open or mapping failed
        if r is None:
            r = Reader(rid, seed, mp, backing, sizes)
            r.stats["errors"] += 1
            r.failure(f"could not start: {type(e).__name__}: {e}")
    out.put((rid, r.stats))


def start_readers(cfg, mp, backing, sizes, order):
    ctx = loadlib.mp_.get_context("fork")
    progress = ctx.Array("q", cfg.readers, lock=False)
    stop, unmounting, out = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=reader, args=(r, cfg.seed, mp, backing, sizes, order, progress,
                                              stop, unmounting, out), daemon=True)
             for r in range(cfg.readers)]
    for p in procs:
        p.start()
    return procs, progress, stop, unmounting, out


# ---------------------------------------------------------------- side load

def dig(st, path):
    v = st
    for key in path.split("."):
        v = v.get(key) if isinstance(v, dict) else None
    return v


class LargeSideLoad(SideLoad):
    """loadlib's side load, with registrations that fit this dataset: the
    job's own (accepted again, changing nothing) and bad ones, EINVAL."""

    # The job's own registration again (accepted, changing nothing) 30% of
    # the time; else one of these, each refused with EINVAL.
    valid_share = 0.3
    invalid_documents = [json.dumps({**registration(1), "manifest": "no-such-manifest.txt"}),
                         json.dumps({**registration(1), "n": RECORDS + 1}),
                         json.dumps({**registration(1), "layout": "bogus"}),
                         '{"layout": "ranges"}', "not json", '{"seed": 1e999}']
    rng_offset = 998

    def __init__(self, cfg, m, unmounting):
        super().__init__(cfg, m, unmounting)
        self.seen = {path: 0 for path, _ in EXERCISED}

    def valid_document(self, rng):
        return json.dumps(registration(self.cfg.seed))

    def read_status_file(self):
        super().read_status_file()
        with self.lock:
            st = self.last_status
            for path in self.seen:
                self.seen[path] = max(self.seen[path], dig(st, path) or 0)
        ram = (st.get("chunks") or {}).get("ram") or {}
        if (ram.get("bytes") or 0) > (ram.get("capacity") or 0):
            self.fail(f"status: the chunks' RAM holds {ram.get('bytes')} bytes, over its "
                      f"capacity {ram.get('capacity')}")


# ---------------------------------------------------------------- one run

def run(cfg):
    """One large-file load run: returns (figures, failure lines)."""
    return loadlib.run(cfg, run_in, prefix="clairfs-stress-large-")


def run_in(cfg, tmp, log):
    backing, mnt, cache = ml.make_dirs(tmp, "data", "mnt", "cache")
    t0 = time.monotonic()
    sizes = make_dataset(backing, cfg.seed)
    make_manifest(backing)
    sizes[MANIFEST] = os.path.getsize(os.path.join(backing, MANIFEST))
    order = job_order(cfg.seed, cfg.seconds)
    mem = int(sum(sizes.values()) * cfg.mem_share)
    log(f"dataset: {len(sizes)} files, {sum(sizes.values()) / 1e6:.1f} MB in "
        f"{time.monotonic() - t0:.1f} s; --mem {mem} ({cfg.mem_share:.0%}), chunks of {CHUNK}, "
        f"an SSD tier, drop-behind always, seed {cfg.seed}")
    job = os.path.join(tmp, "job.json")
    with open(job, "w") as f:
        json.dump(registration(cfg.seed), f)
    follow = {}
    with ml.mounted(backing, mnt, "--mem", str(mem), "--chunk-size", CHUNK, "--cache-dir", cache,
                    "--drop-behind", "always", "--register", job) as m:
        d = loadlib.drive(cfg, m, lambda: start_readers(cfg, mnt, backing, sizes, order),
                          lambda unmounting: LargeSideLoad(cfg, m, unmounting), log,
                          before_unmount=lambda: follow.update(job=job_status(mnt)))
    fig = summarize(d, sizes, mem, follow.get("job"))
    return fig, d.failures + judge(fig)


def job_status(mp):
    """What status says of the registered job's loader, before the unmount."""
    with contextlib.suppress(OSError, ValueError, LookupError, TypeError):
        loader = ml.status(mp)["jobs"][0]["loaders"][0]
        return {k: loader.get(k) for k in ("mode", "reason", "epoch", "matched", "opens")}
    return None


def summarize(d, sizes, mem, follow):
    return {
        "reads": sum(s["reads"] for s in d.got.values()), "reads_during_load": d.done,
        "seconds": round(d.t_load, 1), "reads_per_second": round(d.done / d.t_load),
        "bytes_read": sum(s["bytes"] for s in d.got.values()),
        "wrong_bytes": sum(s["wrong_bytes"] for s in d.got.values()),
        "read_errors": sum(s["errors"] for s in d.got.values()),
        "files": len(sizes), "dataset_bytes": sum(sizes.values()), "mem": mem,
        "arena_headroom": max(mem // 8, 16 * MIB),
        "rss_after_mount": d.baseline, "peak_rss": d.hwm, "rss_over_mem": d.hwm - mem,
        "umount_command_s": round(d.t_cmd, 3) if d.t_cmd is not None else None,
        "unmount_s": round(d.t_exit, 3) if d.t_exit is not None else None,
        **d.side.counts, "stage_states_seen": sorted(str(x) for x in d.side.stage_states),
        "exercised": dict(d.side.seen), "job": follow,
    }


def judge(fig):
    """The run's promises, one failure line each: loadlib's, and each path
    loaded."""
    out = loadlib.judge_common(fig)
    for path, what in EXERCISED:
        if not fig["exercised"][path]:
            out.append(f"status never showed {what} ({path} stayed 0): that path was not loaded")
    return out
