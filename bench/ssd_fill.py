#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How fast the SSD tier takes a dataset in: clairfs builds side by side.

    sudo /usr/bin/python3 bench/ssd_fill.py [--files 10000] [--rounds 3]
        [--binary A=build/src/clairfs --binary B=/tmp/clairfs-old] [--json FILE]

Writes FILES files of reference-style sizes (a log-normal, mean ~110 KB)
on local disk and reads them once so the backing store answers from the
page cache: the SSD tier's writer is then what limits the fill. For each
round and binary, in turn, it mounts the directory with a fresh
--cache-dir, --stage and --mem 64M, and waits until the SSD tier holds
every file with nothing pending. Reported per binary (medians of the
rounds): the fill's wall time, files per second, the CPU of the daemon's
SSD writer thread per file, and the bytes the daemon made the kernel read
from a device per file (/proc/PID/io read_bytes: the backing store is in
the page cache, so any is the tier reading back what it wrote).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from file_cost import wait_mounted, unmount  # noqa: E402
from file_profile import generate  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def warm(back):
    for root, _, files in os.walk(back):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def thread_cpu(pid, name):
    total = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != name:
                    continue
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
        except OSError:
            pass
    return total


def read_bytes(pid):
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def status(mnt):
    with open(os.path.join(mnt, ".clairfs", "status")) as f:
        return json.load(f)


def fill_once(binary, back, work, nfiles, timeout):
    mnt = os.path.join(work, "mnt")
    cache = os.path.join(work, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    os.makedirs(mnt, exist_ok=True)
    cmd = [binary, "mount", back, mnt, "-f", "--mem", "64M", "--no-detect",
           "--cache-dir", cache, "--stage"]
    daemon = subprocess.Popen(cmd, stderr=open(os.path.join(work, "daemon.log"), "w"))
    try:
        wait_mounted(mnt, timeout=120)
        t0 = time.monotonic()
        rb0 = read_bytes(daemon.pid)
        deadline = t0 + timeout
        while True:
            ssd = status(mnt)["ssd"]
            if ssd.get("files", 0) >= nfiles and ssd.get("pending_bytes", 1) == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("%s: the SSD tier holds %s of %d files after %d s"
                                   % (binary, ssd.get("files"), nfiles, timeout))
            time.sleep(0.02)
        secs = time.monotonic() - t0
        return {"seconds": secs, "files_per_s": nfiles / secs,
                "ssdw_cpu_ms_per_file": thread_cpu(daemon.pid, "clairfs-ssdw") * 1e3 / nfiles,
                "device_read_bytes_per_file": (read_bytes(daemon.pid) - rb0) / nfiles}
    finally:
        unmount(mnt)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", action="append", default=[],
                    help="LABEL=PATH of a clairfs binary (repeatable) [this build]")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--json")
    args = ap.parse_args()
    binaries = []
    for b in args.binary or ["this=" + os.path.join(REPO, "build", "src", "clairfs")]:
        label, _, path = b.partition("=")
        if not path or not os.access(path, os.X_OK):
            ap.error("--binary LABEL=PATH of an executable: %r" % b)
        binaries.append((label, path))
    work = tempfile.mkdtemp(prefix="clairfs-ssd-fill.", dir=args.workdir)
    try:
        back = os.path.join(work, "data")
        log("writing %d files under %s" % (args.files, back))
        total = generate(back, args.files, 0)
        results = {label: [] for label, _ in binaries}
        for r in range(args.rounds):
            for label, path in binaries:
                warm(back)
                row = fill_once(path, back, work, args.files, args.timeout)
                results[label].append(row)
                log("round %d, %s: %.1f s, %.0f files/s, writer %.3f ms/file, "
                    "%.0f device bytes read/file" % (
                        r + 1, label, row["seconds"], row["files_per_s"],
                        row["ssdw_cpu_ms_per_file"], row["device_read_bytes_per_file"]))
        summary = {label: {k: statistics.median(row[k] for row in rows) for k in rows[0]}
                   for label, rows in results.items()}
        print("%-10s %10s %12s %18s %22s" % ("binary", "fill s", "files/s",
                                             "writer ms/file", "device B read/file"))
        for label, s in summary.items():
            print("%-10s %10.1f %12.0f %18.3f %22.0f" % (
                label, s["seconds"], s["files_per_s"], s["ssdw_cpu_ms_per_file"],
                s["device_read_bytes_per_file"]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"command": " ".join(sys.argv), "files": args.files,
                           "dataset_bytes": total, "rounds": results, "summary": summary},
                          f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
