#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An unmodified-style PyTorch input pipeline, timed per epoch.

    train_job.py DATA [--epochs 2] [--batch 64] [--workers 2] [--seed 0]
        [--generator explicit|global] [--val DIR]
        [--transform rrc|none|bytes] [--world W --rank R] [--step-sleep S]
        [--loop-dev loopN] [--cpuacct DIR] [--daemon-pid PID]
        [--wait-for PATH] [--model NAME]

torchvision ImageFolder(DATA) + DataLoader(batch, workers, shuffle with a
seeded generator, or DistributedSampler(world, rank, seed) with set_epoch),
RandomResizedCrop(224)+ToTensor. Nothing in the loop knows about clairfs:
the data path is the only thing that changes between scenarios. --step-sleep
sleeps that many seconds per batch, standing in for a GPU step.

--transform none decodes and resizes to 224x224 (no random crop); bytes
decodes nothing: each sample is its file read whole, as a pipeline that
decodes on the GPU (NVIDIA DALI's) hands the encoded bytes over. The loop
gets a (batch,) tensor of the files' sizes. With --step-sleep it models a
node whose own cores keep up with decoding, which simulated nodes sharing
this host's two cores cannot do (bench/README.md, cluster.py).

--generator explicit (the default) passes
DataLoader(generator=torch.Generator().manual_seed(seed)); global passes no
generator, so the order comes from torch.manual_seed(seed)'s global
generator, which every iterator of every loader draws from (see
../shared/reference/torch-order.md, 5a).

--val DIR adds a validation loader, ImageFolder(DIR) with the same transform,
batch size and workers, shuffle=False and no generator argument (so its
iterator draws its _base_seed from the global generator, shifting a global
train loader's next epoch, as a real script's does). It runs after every
train epoch, like:
    for e in range(epochs):
        for _ in train: pass
        for _ in val: pass

--wait-for PATH: after the {"setup_s"} line, wait until PATH exists before
the first epoch, so that several jobs started by one harness begin their
epochs together (their imports and scans take different times).

Prints one JSON object per epoch on stdout:
  epoch, samples, wall_s, samples_per_s, first_batch_s,
  shared_fs_bytes   sectors read on /sys/block/loopN/stat x 512 (--loop-dev)
  shared_fs_reads   read requests completed on that device (what the IOPS
                    throttle counts, roughly)
  job_cpu_s         this process + its reaped DataLoader workers (rusage)
  cgroup_cpu_s      cpuacct.usage of --cpuacct over the epoch (job + daemon
                    + anything else put into that cgroup)
  outside_job_cpu_s cgroup_cpu_s - job_cpu_s: what the daemon under test cost
  daemon_cpu_s      utime+stime of --daemon-pid (all threads), if given
  daemon_threads_cpu_s  the same per thread name (clairfs-fetch, ...)
  dataset_resident_bytes  with --resident: how much of DATA the host's page
                    cache holds at the epoch's end (fincore; measured after the
                    epoch's timings), the page cache a direct run really had,
                    which bench/sim_validate.py gives the simulator
  steal_s           CPU time the hypervisor gave to other guests during the
                    epoch (/proc/stat steal): how noisy the host was
  others_cpu_s      busy CPU in /proc/stat (steal excluded) - cgroup_cpu_s: processes outside
                    the cgroup (should be ~0; a large value means noise)
and first a line {"setup_s": ...} with the time ImageFolder took to scan.

With --val, wall_s, samples_per_s and first_batch_s stay the train pass's,
and the epoch line adds
  val_samples, val_wall_s, val_first_batch_s   the validation pass's
  epoch_with_val_s  from the train pass's start to the validation pass's end
  val_shared_fs_bytes, val_shared_fs_reads     the validation pass's share
while every other difference (shared_fs_*, the CPU figures, steal) covers
the train and validation passes together. The setup line adds val_files.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def loop_stat(dev):
    """(read requests completed, bytes read) of the shared FS's block device."""
    if not dev:
        return 0, 0
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        v = f.read().split()
    return int(v[0]), int(v[2]) * 512


def cpuacct(d):
    if not d:
        return 0.0
    with open(os.path.join(d, "cpuacct.usage")) as f:
        return int(f.read()) / 1e9


def proc_stat():
    """(busy, steal) CPU seconds of the whole machine: busy without steal,
    which is time the hypervisor gave to other guests, not ours to use."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / TICK, v[7] / TICK


def pid_cpu(pid):
    if not pid:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / TICK
    except (FileNotFoundError, ProcessLookupError):
        return float("nan")


def thread_cpu(pid):
    """utime+stime per thread name (comm) of a process: which of the
    daemon's threads (FUSE workers, fetchers, scheduler) costs what."""
    out = {}
    if not pid:
        return out
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except (FileNotFoundError, ProcessLookupError):
            continue
        comm = head.split("(", 1)[1]
        rest = rest.split()
        out[comm] = out.get(comm, 0.0) + (int(rest[11]) + int(rest[12])) / TICK
    return out


def own_cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def clairfs_status_path(root):
    """.clairfs/status of the clairfs mount holding ROOT, or None."""
    d = os.path.abspath(root)
    while True:
        p = os.path.join(d, ".clairfs", "status")
        if os.path.exists(p):
            return p
        if d == "/":
            return None
        d = os.path.dirname(d)


def clairfs_counts(path):
    """What the daemon counted so far: FUSE requests by kind, files pushed
    into and dropped from the kernel's page cache, RAM hits."""
    if not path:
        return None
    with open(path) as f:
        st = json.load(f)
    c = {"req_" + k: v for k, v in st.get("requests", {}).items()}
    pf = st.get("prefetch", {})
    c.update({"pushed": pf.get("pushed", 0), "page_drops": pf.get("page_drops", 0),
              "open_pushes": pf.get("open_pushes", 0),
              "ram_hits": st.get("ram", {}).get("hits", 0)})
    return c


def wakeups(pid):
    """Voluntary context switches over the threads of PID: each is a
    thread going to sleep, so one wake-up later."""
    total = 0
    if not pid:
        return 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def snapshot(a):
    reqs, nbytes = loop_stat(a.loop_dev)
    return {"t": time.perf_counter(), "bytes": nbytes, "reqs": reqs,
            "job": own_cpu(), "cg": cpuacct(a.cpuacct), "busy": proc_stat()[0],
            "steal": proc_stat()[1],
            "daemon": pid_cpu(a.daemon_pid), "threads": thread_cpu(a.daemon_pid),
            "wakeups": wakeups(a.daemon_pid),
            "clairfs": clairfs_counts(getattr(a, "clairfs_status", None))}


def resident_bytes(root):
    """Bytes of the files under ROOT in the page cache (util-linux fincore,
    1,000 files per call; sub-second for 10,000 files)."""
    paths = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    total = 0
    for i in range(0, len(paths), 1000):
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES"]
                             + paths[i:i + 1000], check=True, capture_output=True, text=True)
        total += sum(int(x) for x in out.stdout.split())
    return total


def read_whole(path):
    """--transform bytes: the file read whole, as its size (a pipeline
    that decodes on the GPU would hand these bytes over)."""
    with open(path, "rb") as f:
        return len(f.read())


def add_harness_args(ap, resident=True):
    """The flags bench/scenarios.py gives every job (this one, keras_job.py,
    tfrecord_job.py, lmdb_job.py): what to measure and when to start."""
    ap.add_argument("--step-sleep", type=float, default=0.0)
    ap.add_argument("--loop-dev")
    ap.add_argument("--cpuacct")
    ap.add_argument("--daemon-pid", type=int)
    ap.add_argument("--wait-for", metavar="PATH")
    if resident:
        ap.add_argument("--resident", action="store_true",
                        help="report dataset_resident_bytes at every epoch's end")


def add_loader_args(ap):
    """The DataLoader's flags (this job's and lmdb_job.py's): batch size,
    workers, seed, sampler and generator."""
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--sampler", choices=["auto", "distributed"], default="auto",
                    help="distributed: a DistributedSampler even for --world 1 (auto: only "
                         "above 1)")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--generator", choices=["explicit", "global"], default="explicit")


def make_loader(ds, a):
    """(DataLoader, DistributedSampler or None) over DS as add_loader_args'
    flags say: shuffle=True with a seeded torch.Generator (--generator
    explicit) or none (global: the order comes from torch.manual_seed),
    or a DistributedSampler(world, rank, seed) whose set_epoch the caller
    calls. The caller has called torch.manual_seed(a.seed)."""
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    sampler = None
    if a.world > 1 or a.sampler == "distributed":
        sampler = DistributedSampler(ds, num_replicas=a.world, rank=a.rank,
                                     shuffle=True, seed=a.seed)
    kw = {}
    if a.generator == "explicit":
        gen = torch.Generator()
        gen.manual_seed(a.seed)
        kw["generator"] = gen
    loader = DataLoader(ds, batch_size=a.batch, shuffle=sampler is None,
                        sampler=sampler, num_workers=a.workers, **kw)
    return loader, sampler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=2)
    add_loader_args(ap)
    ap.add_argument("--transform", choices=["rrc", "none", "bytes"], default="rrc")
    ap.add_argument("--val", metavar="DIR")
    ap.add_argument("--model", metavar="NAME",
                    help="build torchvision.models.NAME right after manual_seed, as a "
                         "training script does: its initialisation draws from the global "
                         "generator (resnet18: some 22 million words) before the loaders")
    add_harness_args(ap)
    a = ap.parse_args()
    a.clairfs_status = clairfs_status_path(a.data) if a.daemon_pid else None

    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    torch.manual_seed(a.seed)
    if a.model:
        import torchvision
        getattr(torchvision.models, a.model)()
    folder_kw = {}
    if a.transform == "rrc":
        folder_kw["transform"] = transforms.Compose([transforms.RandomResizedCrop(224),
                                                     transforms.ToTensor()])
    elif a.transform == "none":
        folder_kw["transform"] = transforms.Compose([transforms.Resize((224, 224)),
                                                     transforms.ToTensor()])
    else:
        folder_kw["loader"] = read_whole
    t0 = time.perf_counter()
    ds = datasets.ImageFolder(a.data, **folder_kw)
    setup = {"setup_s": None, "files": len(ds)}
    val_ds = None
    if a.val:
        val_ds = datasets.ImageFolder(a.val, **folder_kw)
        setup["val_files"] = len(val_ds)
    setup["setup_s"] = round(time.perf_counter() - t0, 3)
    print(json.dumps(setup), flush=True)
    loader, sampler = make_loader(ds, a)
    val_loader = None
    if val_ds is not None:
        val_loader = DataLoader(val_ds, batch_size=a.batch, shuffle=False,
                                num_workers=a.workers)
    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.01)

    def run_pass(dl, t_start):
        n, first = 0, None
        for images, _labels in dl:
            if first is None:
                first = time.perf_counter() - t_start
            n += images.shape[0]
            if a.step_sleep:
                time.sleep(a.step_sleep)
        return n, first

    for epoch in range(a.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        s0 = snapshot(a)
        n, first = run_pass(loader, s0["t"])
        s1 = snapshot(a)  # workers are joined: their CPU is in RUSAGE_CHILDREN
        wall = s1["t"] - s0["t"]
        end = s1
        if val_loader is not None:
            vn, vfirst = run_pass(val_loader, s1["t"])
            end = snapshot(a)
        out = epoch_record(a, epoch, n, None, s0, s1, end, first,
                           {"samples": vn, "first": vfirst} if val_loader is not None else None)
        if a.resident:
            out["dataset_resident_bytes"] = resident_bytes(a.data)
        print(json.dumps(out), flush=True)


def epoch_record(a, epoch, samples, steps, s0, s_train, s_end, first, val=None):
    """One epoch's JSON object, for train_job.py and keras_job.py, from
    snapshots at the epoch's start, the end of its training pass and its end
    (with the validation pass)."""
    wall = s_train["t"] - s0["t"]
    d = {k: s_end[k] - s0[k] for k in s0 if k not in ("threads", "clairfs")}
    out = {"epoch": epoch, "samples": samples}
    if steps is not None:  # keras_job.py: optimizer steps
        out["steps"] = steps
    out.update({"wall_s": round(wall, 3),
                "samples_per_s": round(samples / wall, 2) if wall > 0 else None,
                "first_batch_s": round(first or 0.0, 3),
                "shared_fs_bytes": d["bytes"],
                "shared_fs_reads": d["reqs"],
                "job_cpu_s": round(d["job"], 3)})
    if val is not None:
        out.update({"val_samples": val["samples"],
                    "val_wall_s": round(s_end["t"] - s_train["t"], 3),
                    "val_first_batch_s": round(val["first"] or 0.0, 3),
                    "epoch_with_val_s": round(s_end["t"] - s0["t"], 3),
                    "val_shared_fs_bytes": s_end["bytes"] - s_train["bytes"],
                    "val_shared_fs_reads": s_end["reqs"] - s_train["reqs"]})
    if a.cpuacct:
        out["cgroup_cpu_s"] = round(d["cg"], 3)
        out["outside_job_cpu_s"] = round(d["cg"] - d["job"], 3)
        out["others_cpu_s"] = round(d["busy"] - d["cg"], 3)
    out["steal_s"] = round(d["steal"], 3)
    if a.daemon_pid:
        out["daemon_cpu_s"] = round(d["daemon"], 3)
        out["daemon_threads_cpu_s"] = {k: round(v - s0["threads"].get(k, 0.0), 3)
                                       for k, v in sorted(s_end["threads"].items())}
        out["daemon_wakeups"] = d["wakeups"]
    if s0.get("clairfs") and s_end.get("clairfs"):
        # Per epoch, what the daemon counted (the status reads themselves
        # add one OPEN, READ and RELEASE each).
        out["clairfs_counts"] = {k: v - s0["clairfs"].get(k, 0)
                                 for k, v in s_end["clairfs"].items() if v - s0["clairfs"].get(k, 0)}
    return out


if __name__ == "__main__":
    sys.exit(main())
