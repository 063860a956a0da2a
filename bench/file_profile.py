#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What one file costs clairfs while it follows a registered job (issue 19).

    sudo python3 bench/file_profile.py [--files 4000] [--mem 1G]
        [--cache-dir DIR] [--cgroup-mem SIZE] [--callgrind] [--json FILE]

Writes a dataset of FILES files (ImageFolder: 100 class directories of
.jpg names holding random bytes, sizes drawn like the reference-style
dataset) on local disk, mounts clairfs over it, registers a RandomSampler
job (explicit generator, seed 0, batch 64, no workers, 2 epochs), and
reads each epoch in exactly the job's order (`clairfs order --paths`):
open, fstat (as Python's open() does), read to EOF in 1 MiB calls, close,
then --work-us of busy CPU (a job's decoding), from one process, as a DataLoader
with num_workers=0 would. The same lists are then read from the backing
directory with its pages cached, as a warm local copy.

Per file and epoch it reports, from the daemon's own counters and /proc:
  - FUSE requests of each kind (status `requests`);
  - pages pushed into the kernel's cache and files dropped from it;
  - daemon CPU (utime + stime) and the thread wake-ups (voluntary context
    switches, per thread kind);
  - wall time per file against the warm local read.
With --callgrind the daemon runs under valgrind's callgrind (about 50x
slower, so wall time and CPU are then meaningless) and each epoch is
dumped separately: instructions, heap allocations (malloc, calloc,
realloc, aligned allocations) and mutex acquisitions per file, each split
into the daemon's own code and libfuse's.

--cgroup-mem puts the daemon and the reader in a memory cgroup (v1) of
that size, as the end-to-end configs do, so the kernel's page cache of the
mount competes with the daemon's RAM tier.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from file_cost import parse_size, wait_mounted, unmount, cpu_seconds  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLAIRFS = os.path.join(REPO, "build", "src", "clairfs")
CGEXEC = os.path.join(REPO, "bench", "cgexec.sh")
JOB = {"sampler": "random", "generator": "explicit", "seed": 0, "batch_size": 64,
       "num_workers": 0, "epochs": 2, "layout": "imagefolder"}


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def generate(back, nfiles, seed):
    """Reference-style sizes (mean ~110 KB, median ~93 KB: a log-normal),
    random bytes, in 100 class directories. Returns the bytes written."""
    rng = random.Random(seed)
    total = 0
    for i in range(nfiles):
        d = os.path.join(back, "c%03d" % (i % 100))
        os.makedirs(d, exist_ok=True)
        size = max(4096, min(int(rng.lognormvariate(11.44, 0.55)), 2 << 20))
        with open(os.path.join(d, "f%06d.jpg" % i), "wb") as f:
            f.write(rng.randbytes(size))
        total += size
    os.sync()
    return total


def job_order(back, epochs):
    cmd = [CLAIRFS, "order", "--root", back, "--layout", "imagefolder", "--paths",
           "--sampler", "random", "--generator", "explicit", "--seed", "0",
           "--batch-size", "64", "--epochs", str(epochs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def read_all(root, rel, work_us=0):
    """open, read to EOF, close, in order, then work_us of busy CPU per
    file (a job decoding its sample); returns (seconds, bytes, CPU seconds
    the reader spent in open to close: its side of each file's cost, such
    as filling the page cache on a READ)."""
    t0 = time.monotonic()
    total = 0
    io_cpu = 0.0
    for r in rel:
        if work_us:
            until = time.perf_counter() + work_us / 1e6
            while time.perf_counter() < until:
                pass
        c0 = time.thread_time()
        fd = os.open(os.path.join(root, r), os.O_RDONLY)
        try:
            os.fstat(fd)  # as Python's open() does, and so PIL's and torch's loaders
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                total += len(b)
        finally:
            os.close(fd)
        io_cpu += time.thread_time() - c0
    return time.monotonic() - t0, total, io_cpu


def status(mnt):
    with open(os.path.join(mnt, ".clairfs", "status")) as f:
        return json.load(f)


def thread_switches(pid):
    """{thread kind: [voluntary, involuntary]} summed over the threads of
    pid (a thread kind is its name without a trailing number)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = re.sub(r"[-_]?\d+$", "", f.read().strip())
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                st = f.read()
        except OSError:
            continue  # exited in between
        v = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
        n = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
        acc = out.setdefault(name, [0, 0])
        acc[0] += v
        acc[1] += n
    return out


def memory(pid, cg):
    """Where the bytes are at this moment: the daemon's resident memory,
    and with a cgroup its page cache and anonymous memory (a file held by
    both the RAM tier and the mount's page cache is counted twice)."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["daemon_rss_mb"] = int(line.split()[1]) / 1024
    if cg:
        with open(os.path.join(cg, "memory.stat")) as f:
            st = dict(line.split() for line in f)
        out["cgroup_cache_mb"] = int(st["total_cache"]) / 2**20
        out["cgroup_rss_mb"] = int(st["total_rss"]) / 2**20
    return out


class Snapshot:
    def __init__(self, mnt, pid, timed, cg=None):
        self.status = status(mnt)
        self.switches = thread_switches(pid)
        self.cpu = cpu_seconds(pid) if timed else None
        self.memory = memory(pid, cg)


def diff_epoch(a, b, files):
    """Per-file figures between two snapshots."""
    ra, rb = a.status.get("requests", {}), b.status.get("requests", {})
    req = {k: (rb[k] - ra.get(k, 0)) / files for k in rb if rb[k] - ra.get(k, 0)}
    pa, pb = a.status["prefetch"], b.status["prefetch"]
    wake = {}
    for k, (v, n) in b.switches.items():
        v0, n0 = a.switches.get(k, [0, 0])
        if v - v0 or n - n0:
            wake[k] = {"voluntary": (v - v0) / files, "involuntary": (n - n0) / files}
    out = {
        "requests_per_file": req,
        "requests_total_per_file": sum(req.values()),
        "pushed_per_file": (pb["pushed"] - pa["pushed"]) / files,
        "open_pushes_per_file": (pb.get("open_pushes", 0) - pa.get("open_pushes", 0)) / files,
        "page_drops_per_file": (pb["page_drops"] - pa["page_drops"]) / files,
        "backing_reads_per_file": (b.status["backing"]["reads"] - a.status["backing"]["reads"]) / files,
        "ram_hits_per_file": (b.status["ram"]["hits"] - a.status["ram"]["hits"]) / files,
        "wakeups_per_file": wake,
        "wakeups_total_per_file": sum(w["voluntary"] for w in wake.values()),
    }
    if a.cpu is not None:
        out["daemon_cpu_ms_per_file"] = (b.cpu - a.cpu) * 1000 / files
    return out


# ------------------------------------------------------------- callgrind

# operator new is counted where clairfs calls it (the malloc it makes is
# libstdc++'s call, counted nowhere); libfuse calls malloc itself.
ALLOC = re.compile(r"^(malloc|calloc|realloc|aligned_alloc|posix_memalign|memalign|operator new)")
MUTEX = re.compile(r"^_*pthread_mutex_(lock|trylock)")


def callgrind_counts(path, own_object):
    """Instructions, and calls of heap allocation and mutex lock functions
    made from own_object's code and from libfuse's, in one callgrind dump."""
    names = {"fn": {}, "cfn": {}, "ob": {}, "cob": {}}
    shared = {}  # callgrind compresses fn and cfn names into one table
    objects = {}
    cur_ob = cur_fn_ob = None
    cur_fn = None
    cfn = None
    callers = {"alloc": {}, "mutex": {}}
    total = 0
    counts = {"alloc": {}, "mutex": {}}

    def name_of(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?$", text)
        if not m:
            return text
        table = objects if kind in ("ob", "cob") else shared
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
            elif line.startswith("ob="):
                cur_ob = name_of("ob", line[3:].strip())
            elif line.startswith("fn="):
                cur_fn = name_of("fn", line[3:].strip())
                cur_fn_ob = cur_ob
            elif line.startswith("cob="):
                name_of("cob", line[4:].strip())
            elif line.startswith("cfn="):
                cfn = name_of("cfn", line[4:].strip())
            elif line.startswith("calls=") and cfn is not None:
                n = int(line[6:].split()[0])
                base = cfn.split("@")[0].split("'")[0]
                who = ("clairfs" if cur_fn_ob and os.path.basename(cur_fn_ob) == own_object
                       else "libfuse" if cur_fn_ob and "libfuse3" in cur_fn_ob
                       else None)
                if who:
                    for kind, rx in (("alloc", ALLOC), ("mutex", MUTEX)):
                        if rx.match(base):
                            counts[kind][who] = counts[kind].get(who, 0) + n
                            if who == "clairfs":
                                c = re.split(r"[(<]", cur_fn or "?")[0] or (cur_fn or "?")[:60]
                                callers[kind][c] = callers[kind].get(c, 0) + n
                cfn = None
    return total, counts, callers


def callgrind_epoch(dump, files):
    total, counts, callers = callgrind_counts(dump, os.path.basename(CLAIRFS))
    out = {"instructions_per_file": total / files}
    for kind in ("alloc", "mutex"):
        out[kind + "_per_file"] = {k: v / files for k, v in sorted(counts[kind].items())}
        top = sorted(callers[kind].items(), key=lambda kv: -kv[1])[:12]
        out[kind + "_callers_per_file"] = {k: round(v / files, 3) for k, v in top if v / files >= 0.01}
    return out


def newest_dump(outbase, before):
    dumps = [p for p in os.listdir(os.path.dirname(outbase))
             if p.startswith(os.path.basename(outbase) + ".") and p not in before]
    if not dumps:
        raise RuntimeError("callgrind wrote no dump")
    return os.path.join(os.path.dirname(outbase), sorted(dumps, key=lambda p: int(p.rsplit(".", 1)[1]))[-1])


def callgrind_dump(pid, outbase):
    before = set(os.listdir(os.path.dirname(outbase)))
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            return newest_dump(outbase, before)
        except RuntimeError:
            time.sleep(0.2)
    raise RuntimeError("callgrind dump did not appear")


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=4000)
    ap.add_argument("--epochs", type=int, default=2,
                    help="epochs of the job read [2]; from the third on, the steady state")
    ap.add_argument("--mem", default="1G", help="clairfs --mem [1G]")
    ap.add_argument("--cache-dir", help="turn on the SSD tier there")
    ap.add_argument("--cgroup-mem", help="memory cgroup (v1) for the daemon and the reader")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--work-us", type=int, default=0,
                    help="busy CPU per file after reading it, as a job's decoding [0]")
    ap.add_argument("--clairfs-opt", action="append", default=[],
                    help="one more clairfs mount argument (repeat)")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("file_profile.py: run as root (it mounts and may make a cgroup)")
    if not os.access(CLAIRFS, os.X_OK):
        sys.exit("file_profile.py: build first: %s is missing" % CLAIRFS)

    work = tempfile.mkdtemp(prefix="clairfs-profile.", dir=args.workdir)
    back, mnt = os.path.join(work, "data"), os.path.join(work, "mnt")
    os.makedirs(back)
    os.makedirs(mnt)
    cg = None
    daemon = None
    try:
        log("writing %d files under %s" % (args.files, back))
        generate(back, args.files, 0)
        epochs = job_order(back, args.epochs)
        files = args.files
        prefix = []
        if args.cgroup_mem:
            cg = "/sys/fs/cgroup/memory/clairfs-profile-%d" % os.getpid()
            os.makedirs(cg, exist_ok=True)
            with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
                f.write(str(parse_size(args.cgroup_mem)))
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))  # the reader (this process) and the daemon
        cmd = [CLAIRFS, "mount", back, mnt, "-f", "--mem", args.mem, "--no-detect"]
        if args.cache_dir:
            os.makedirs(args.cache_dir, exist_ok=True)
            cmd += ["--cache-dir", args.cache_dir]
        cmd += args.clairfs_opt
        outbase = os.path.join(work, "callgrind.out")
        if args.callgrind:
            prefix = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outbase,
                      "--dump-instr=no", "--collect-systime=no"]
        log("mounting: %s" % " ".join(prefix + cmd))
        daemon = subprocess.Popen(prefix + cmd, stderr=open(os.path.join(work, "daemon.log"), "w"))
        wait_mounted(mnt, timeout=120)
        timed = not args.callgrind
        result = {"command": " ".join(sys.argv), "files": files, "mem": args.mem,
                  "work_us": args.work_us,
                  "cache_dir": bool(args.cache_dir), "cgroup_mem": args.cgroup_mem,
                  "callgrind": args.callgrind, "clairfs_opts": args.clairfs_opt, "epochs": []}
        if args.callgrind:
            callgrind_dump(daemon.pid, outbase)  # the mount: not a file's cost
        # Epoch 0 counts from the registration on: planning the job and
        # prefetching are part of what its files cost.
        snap = Snapshot(mnt, daemon.pid, timed)
        if args.callgrind:
            callgrind_dump(daemon.pid, outbase)  # rendering the status: not either
        with open(os.path.join(mnt, ".clairfs", "control"), "w") as f:
            f.write(json.dumps({**JOB, "epochs": args.epochs}))
        for e, rel in enumerate(epochs):
            secs, nbytes, io_cpu = read_all(mnt, rel, args.work_us)
            dump = callgrind_dump(daemon.pid, outbase) if args.callgrind else None
            after = Snapshot(mnt, daemon.pid, timed, cg)
            row = {"epoch": e, "files": len(rel), "bytes": nbytes, "seconds": secs,
                   "us_per_file": secs * 1e6 / len(rel),
                   "reader_io_cpu_ms_per_file": io_cpu * 1e3 / len(rel)}
            row.update(diff_epoch(snap, after, len(rel)))
            row["memory_at_end"] = after.memory
            k = after.status["ram"].get("kernel", {})
            row["ram_mb_at_end"] = after.status["ram"]["bytes"] / 2**20
            row["kernel_mb_at_end"] = k.get("bytes", 0) / 2**20
            if dump:
                row.update(callgrind_epoch(dump, len(rel)))
            result["epochs"].append(row)
            log("epoch %d: %.1f us/file, %s" % (e, row["us_per_file"], json.dumps(
                {k: v for k, v in row.items() if k.endswith("per_file") and not isinstance(v, dict)})))
            snap = after
            if args.callgrind:
                callgrind_dump(daemon.pid, outbase)  # the status render
        st = status(mnt)
        result["mode"], result["match_rate"] = st.get("mode"), st.get("match_rate")
        if timed:
            read_all(back, epochs[0])  # the local copy, warm
            for e, rel in enumerate(epochs):
                secs, _, io_cpu = read_all(back, rel, args.work_us)
                result["epochs"][e]["local_warm_us_per_file"] = secs * 1e6 / len(rel)
                result["epochs"][e]["local_warm_io_cpu_ms_per_file"] = io_cpu * 1e3 / len(rel)
                result["epochs"][e]["x_local_warm"] = result["epochs"][e]["us_per_file"] / (secs * 1e6 / len(rel))
        print(json.dumps(result, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        if os.path.ismount(mnt):
            unmount(mnt)
        if daemon:
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.send_signal(signal.SIGKILL)
        if cg:
            with open("/sys/fs/cgroup/memory/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))
            for _ in range(50):
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
