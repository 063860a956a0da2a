# SPDX-License-Identifier: MIT
"""The load test shared by the `stress` suite (tests/stress/test_load.py, a
bounded run) and the soak (bench/soak.py, 1,000,000 reads): Python 3 stdlib
only.

16 reader processes do random reads through a real mount (random file,
random offset and size, some past EOF) over a dataset of 10,000 small files
and compare every byte with the backing file, while prefetch is active (a
job registered at mount) under a RAM budget of 30% of the dataset. Meanwhile
the main process rewrites the registration (valid and invalid documents),
reads the status in a loop (the file, `clairfs status` and `--json`) and
starts stage passes (tests/stress/side_load.py). At the end it unmounts
lazily with the readers still running and times how long the daemon takes
to exit.

Everything random follows one seed (reader r uses seed * 1000 + r), so a
failure prints the reader, the read's number, the file, offset and length,
and rerunning with the same seed repeats the same reads.
"""
import array
import contextlib
import json
import multiprocessing as mp_
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402
from side_load import (SideLoad, proc_status_kib, status_figures,  # noqa: E402
                       valid_registration, write_control)

MIB = 1 << 20
CLASSES, PER_CLASS = 100, 100   # 10,000 files, ImageFolder style
BUDGET_SHARE = 0.30              # --mem as a share of the dataset's bytes
# Resident memory the daemon may use beyond --mem: the RAM tier's arena
# headroom (max(mem/8, 16 MiB), see src/cli/mount_command.cpp) plus this
# fixed part (index, FUSE and fetch thread stacks and buffers, the heap).
# Measured on the 2-core VM: see bench/RESULTS.md, "Load and soak".
FIXED_OVERHEAD = 48 * MIB
UNMOUNT_BOUND_S = 5.0            # from issue 23; a does-not-hang bound
STALL_S = 60                     # no read finished for this long: the mount hangs
MAX_FAILURES_SHOWN = 5


class Config:
    def __init__(self, seed=1, readers=16, reads=200_000, seconds=None, workdir=None,
                 mem_share=BUDGET_SHARE, register_every=0.3, status_every=0.05, log=ml.log):
        self.seed, self.readers, self.reads, self.seconds = seed, readers, reads, seconds
        self.mem_share = mem_share
        self.workdir = workdir or ("/var/tmp" if os.path.isdir("/var/tmp") else None)
        self.register_every, self.status_every, self.log = register_every, status_every, log


# ---------------------------------------------------------------- dataset

def file_sizes(seed):
    """The dataset's file sizes, a function of the seed: mostly a few KB,
    some tens of KB, a few of 1-3 MiB (read through, range by range, when
    larger than a sixteenth of the budget), some empty."""
    rng = random.Random(seed)
    sizes = []
    for _ in range(CLASSES * PER_CLASS):
        r = rng.random()
        if r < 0.01:
            sizes.append(0)
        elif r < 0.90:
            sizes.append(rng.randint(1, 8192))
        elif r < 0.998:
            sizes.append(rng.randint(8193, 64 * 1024))
        else:
            sizes.append(rng.randint(MIB, 3 * MIB))
    return sizes


def rel_path(i):
    return f"class{i // PER_CLASS:03d}/img{i % PER_CLASS:03d}.jpg"


def make_dataset(root, seed):
    """Writes the 10,000 files; returns their sizes (index i is rel_path(i))."""
    sizes = file_sizes(seed)
    rng = random.Random(seed + 1)
    for c in range(CLASSES):
        os.makedirs(os.path.join(root, f"class{c:03d}"))
    for i, size in enumerate(sizes):
        with open(os.path.join(root, rel_path(i)), "wb") as f:
            f.write(rng.randbytes(size))
    return sizes


# ---------------------------------------------------------------- readers

def pick_range(rng, size):
    """(offset, length) of one read: mostly inside the file, some whole
    files, some straddling or past EOF, a few large."""
    r = rng.random()
    if r < 0.10:
        return size + rng.randint(0, 8192), rng.randint(1, 65536)  # past EOF
    if r < 0.20:
        return 0, max(size, 1)  # the whole file
    if r < 0.25:
        return rng.randint(0, size), 2 * MIB  # large, to EOF
    off = rng.randint(0, size)
    return off, rng.randint(1, 65536)  # may straddle EOF


def diff_report(got, want):
    """(wrong byte count, text) for two reads of the same range."""
    n = min(len(got), len(want))
    wrong = sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
    first = next((k for k in range(n) if got[k] != want[k]), n)
    return wrong, (f"{wrong} bytes wrong (got {len(got)} bytes, backing {len(want)}), "
                   f"first at +{first}")


def pick_read(rng, sizes):
    """(file index, offset, length, whether to drop its pages) of one read."""
    i = rng.randrange(len(sizes))
    off, length = pick_range(rng, sizes[i])
    return i, off, length, rng.random() < 0.5  # dropped: later reads reach the daemon


def read_once(i, off, length, drop, mp, backing, stats):
    """One read through the mount and the same read of the backing file.
    Returns None, or what differed."""
    t0 = time.monotonic()
    fd = os.open(os.path.join(mp, rel_path(i)), os.O_RDONLY)
    stats["open_s"].append(time.monotonic() - t0)
    try:
        got = os.pread(fd, length, off)
        if drop:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    bfd = os.open(os.path.join(backing, rel_path(i)), os.O_RDONLY)
    try:
        want = os.pread(bfd, length, off)
    finally:
        os.close(bfd)
    stats["reads"] += 1
    stats["bytes"] += len(got)
    if got == want:
        return None
    wrong, text = diff_report(got, want)
    stats["wrong_bytes"] += wrong
    return text


def reader(rid, seed, mp, backing, sizes, progress, stop, unmounting, out):
    """A reader process: random reads until stop; its figures go to out."""
    rng = random.Random(seed * 1000 + rid)
    stats = {"reads": 0, "bytes": 0, "wrong_bytes": 0, "errors": 0,
             "open_s": array.array("d"), "failures": [], "after_unmount": ""}
    n = 0
    while not stop.is_set():
        i, off, length, drop = pick_read(rng, sizes)
        try:
            failure = read_once(i, off, length, drop, mp, backing, stats)
        except OSError as e:
            if unmounting.is_set():  # the mount is going away: expected
                stats["after_unmount"] = f"{type(e).__name__}: {e}"
                break
            stats["errors"] += 1
            failure = f"{type(e).__name__}: {e}"
        if failure and len(stats["failures"]) < MAX_FAILURES_SHOWN:
            stats["failures"].append(f"reader {rid} read {n} (seed {seed}): {rel_path(i)} "
                                     f"offset {off} length {length}: {failure}")
        n += 1
        if n % 64 == 0:
            progress[rid] = stats["reads"]
    progress[rid] = stats["reads"]
    stats["open_s"] = stats["open_s"].tobytes()
    out.put((rid, stats))


# ---------------------------------------------------------------- one run

def start_readers(cfg, mp, backing, sizes):
    ctx = mp_.get_context("fork")
    progress = ctx.Array("q", cfg.readers, lock=False)
    stop, unmounting, out = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=reader, args=(r, cfg.seed, mp, backing, sizes, progress, stop,
                                              unmounting, out), daemon=True)
             for r in range(cfg.readers)]
    for p in procs:
        p.start()
    return procs, progress, stop, unmounting, out


def wait_for_reads(cfg, progress, procs, log, at_tenth, pid):
    """Until the readers together did cfg.reads reads, or cfg.seconds passed,
    or something broke: the daemon died, every reader exited, or no read
    finished for STALL_S (a hang). Calls at_tenth() a tenth of the way; logs
    progress and the daemon's RSS every 30 s. Returns (reads done, seconds,
    None or what broke)."""
    t0 = last_log = last_change = time.monotonic()
    tenth_done, before = False, 0
    while True:
        done = sum(progress)
        now = time.monotonic()
        if done != before:
            before, last_change = done, now
        if not tenth_done and (done >= cfg.reads / 10 or
                               (cfg.seconds and now - t0 >= cfg.seconds / 10)):
            at_tenth()
            tenth_done = True
        if done >= cfg.reads or (cfg.seconds and now - t0 >= cfg.seconds):
            return done, now - t0, None
        if ml.wait_exit([pid], 0):
            return done, now - t0, f"the daemon (pid {pid}) died after {done} reads"
        if not any(p.is_alive() for p in procs):
            return done, now - t0, f"every reader exited after {done} reads"
        if now - last_change >= STALL_S:
            return done, now - t0, f"no read finished for {STALL_S} s after {done} reads: " \
                                   f"the mount hangs"
        if now - last_log >= 30:
            log(f"  {done} reads after {now - t0:.0f} s ({done / (now - t0):.0f}/s), daemon RSS "
                f"{(proc_status_kib(pid, 'VmRSS') or 0) / 1024:.1f} MiB")
            last_log = now
        time.sleep(0.1)


def collect(procs, out, timeout=60):
    """Each reader's stats; a reader that does not report is a failure."""
    got, failures = {}, []
    deadline = time.monotonic() + timeout
    while len(got) < len(procs) and time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            rid, stats = out.get(timeout=1)
            got[rid] = stats
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
    missing = [r for r in range(len(procs)) if r not in got]
    if missing:
        failures.append(f"readers {missing} did not finish within {timeout} s of the unmount "
                        f"(exit codes {[procs[r].exitcode for r in missing]})")
    return got, failures


def unmount_under_load(m, unmounting, side):
    """Restarts a stage pass and rewrites the registration, then unmounts
    lazily while the readers run (a plain unmount refuses with files open):
    (seconds until `clairfs umount` returned, seconds until the daemon
    exited, or None if it had not after 30 s)."""
    side.stage()
    write_control(m.mp, json.dumps(valid_registration(random.Random(0))))
    unmounting.set()
    t0 = time.monotonic()
    r = ml.clairfs("umount", "--lazy", m.mp, timeout=60)
    t_cmd = time.monotonic() - t0
    ml.check(r.returncode == 0, f"clairfs umount --lazy: exit {r.returncode}: {r.stderr.strip()}")
    exited = ml.wait_exit(m.pids, 30)
    return t_cmd, (time.monotonic() - t0 if exited else None)


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summarize(got, sizes, mem, t_load, t_cmd, t_exit, side, hwm, baseline):
    opens = array.array("d")
    for s in got.values():
        opens.frombytes(s["open_s"])
    opens = sorted(opens)
    reads = sum(s["reads"] for s in got.values())
    return {
        "reads": reads, "seconds": round(t_load, 1), "reads_per_second": round(reads / t_load),
        "bytes_read": sum(s["bytes"] for s in got.values()),
        "wrong_bytes": sum(s["wrong_bytes"] for s in got.values()),
        "read_errors": sum(s["errors"] for s in got.values()),
        "files": len(sizes), "dataset_bytes": sum(sizes), "mem": mem,
        "arena_headroom": max(mem // 8, 16 * MIB),
        "rss_after_mount": baseline, "peak_rss": hwm, "rss_over_mem": hwm - mem,
        "open_ms": {"median": round(percentile(opens, 0.5) * 1e3, 3),
                    "p99": round(percentile(opens, 0.99) * 1e3, 3),
                    "max": round(opens[-1] * 1e3, 3) if opens else 0.0},
        "umount_command_s": round(t_cmd, 3) if t_cmd is not None else None,
        "unmount_s": round(t_exit, 3) if t_exit is not None else None,
        **side.counts, "modes_seen": sorted(str(x) for x in side.modes),
        "stage_states_seen": sorted(str(x) for x in side.stage_states),
        "prefetched_max": side.prefetched, "last_status": status_figures(side.last_status),
    }


def run(cfg, body=None, prefix="clairfs-stress-"):
    """One load run in a fresh directory: returns (figures, failure lines).
    `body(cfg, tmp, log)` is the load (run_in, or large_load's)."""
    tmp = tempfile.mkdtemp(prefix=prefix, dir=cfg.workdir)
    try:
        return (body or run_in)(cfg, tmp, cfg.log)
    finally:
        for mpt, *_ in reversed(ml.mounts()):
            if mpt.startswith(tmp + "/"):
                ml.cleanup(ml.Mount("", mpt))
        shutil.rmtree(tmp, ignore_errors=True)


class Driven:
    """What drive() saw: reads done when the load ended, its seconds, the
    daemon's RSS after the mount and at its peak (bytes), the unmount's
    times (None if it broke first), each reader's stats, the failures."""
    done = t_load = baseline = hwm = 0
    t_cmd = t_exit = None
    got, failures = {}, []


def drive(cfg, m, start, side, log, before_unmount=None):
    """Runs a load on mount m to its end: `start()` starts the readers
    (returning start_readers()'s tuple), `side(unmounting)` makes the side
    load; waits for the reads or the time, then unmounts lazily under load,
    or, if the load broke (the daemon died or hung), kills the daemon.
    `before_unmount()` runs just before either. Stops and collects the
    readers and the side load however it ends."""
    ml.check(len(m.pids) == 1, f"expected one daemon for {m.mp}, found {m.pids}")
    d = Driven()
    d.baseline = proc_status_kib(m.pids[0], "VmRSS") * 1024
    procs, progress, stop, unmounting, out = start()
    sl = side(unmounting)
    failures = []
    try:
        sl.start()
        d.done, d.t_load, broke = wait_for_reads(cfg, progress, procs, log, sl.stage, m.pids[0])
        d.hwm = (proc_status_kib(m.pids[0], "VmHWM") or 0) * 1024
        if before_unmount:
            before_unmount()
        if broke:
            failures.append(broke)
            log(f"FAIL: {broke}; killing the daemon")
            unmounting.set()
            ml.cleanup(m)  # kills a hung daemon, so readers blocked on it return
        else:
            log(f"load: {d.done} reads in {d.t_load:.1f} s; unmounting with the readers running")
            d.t_cmd, d.t_exit = unmount_under_load(m, unmounting, sl)
            log(f"daemon exited {d.t_exit} s after the unmount began")
    finally:  # stops the readers and the side load however the run ends
        stop.set()
        d.got, reader_failures = collect(procs, out)
        sl.finish()
    failures += reader_failures + sl.failures
    for st in d.got.values():
        failures += st["failures"]
    d.failures = failures
    d.side = sl
    return d


def run_in(cfg, tmp, log):
    backing, mnt = ml.make_dirs(tmp, "data", "mnt")
    t0 = time.monotonic()
    sizes = make_dataset(backing, cfg.seed)
    mem = int(sum(sizes) * cfg.mem_share)
    log(f"dataset: {len(sizes)} files, {sum(sizes) / 1e6:.1f} MB in {time.monotonic() - t0:.1f} s; "
        f"--mem {mem} ({cfg.mem_share:.0%}), seed {cfg.seed}")
    job = os.path.join(tmp, "job.json")
    with open(job, "w") as f:
        json.dump({"seed": cfg.seed, "batch_size": 16, "num_workers": 2}, f)
    with ml.mounted(backing, mnt, "--mem", str(mem), "--register", job) as m:
        d = drive(cfg, m, lambda: start_readers(cfg, mnt, backing, sizes),
                  lambda unmounting: SideLoad(cfg, m, unmounting), log)
    fig = summarize(d.got, sizes, mem, d.t_load, d.t_cmd, d.t_exit, d.side, d.hwm, d.baseline)
    return fig, d.failures + judge(fig)


def judge(fig):
    """The run's promises, one failure line each."""
    out = judge_common(fig)
    ram = fig["last_status"]
    if (ram["ram.bytes"] or 0) > (ram["ram.capacity"] or 0):
        out.append(f"status: the RAM tier holds {ram['ram.bytes']} bytes, over its capacity "
                   f"{ram['ram.capacity']}")
    if fig["prefetched_max"] == 0 and fig["mem"] > 0:
        out.append("status never showed a prefetched file: prefetch was not active")
    return out


def judge_common(fig):
    """The promises every load makes: no wrong byte, no failed read, RSS
    within its bound, a quick exit after a lazy unmount under load, and a
    side load that ran."""
    out = []
    if fig["wrong_bytes"]:
        out.append(f"{fig['wrong_bytes']} wrong bytes read through the mount")
    if fig["read_errors"]:
        out.append(f"{fig['read_errors']} reads failed before the unmount")
    bound = fig["mem"] + fig["arena_headroom"] + FIXED_OVERHEAD
    if fig["peak_rss"] > bound:
        out.append(f"peak RSS {fig['peak_rss'] / MIB:.1f} MiB is over --mem "
                   f"{fig['mem'] / MIB:.1f} MiB + arena headroom "
                   f"{fig['arena_headroom'] / MIB:.1f} MiB + {FIXED_OVERHEAD // MIB} MiB")
    if fig["umount_command_s"] is None:
        pass  # never unmounted: the load broke first, and said how
    elif fig["unmount_s"] is None or fig["unmount_s"] >= UNMOUNT_BOUND_S:
        out.append(f"the daemon took {fig['unmount_s'] or 'over 30'} s to exit after a lazy "
                   f"unmount under load (bound {UNMOUNT_BOUND_S} s)")
    if not fig["valid_registrations"] or not fig["invalid_registrations"]:
        out.append(f"registrations: {fig['valid_registrations']} valid, "
                   f"{fig['invalid_registrations']} invalid written; expected both")
    if not fig["status_reads"] or not fig["status_commands"] or not fig["stages"]:
        out.append(f"side load too thin: {fig['status_reads']} status reads, "
                   f"{fig['status_commands']} status commands, {fig['stages']} stages")
    return out


def report(fig, failures, log=ml.log):
    log(json.dumps(fig, indent=1))
    for line in failures:
        log(f"FAIL: {line}")
