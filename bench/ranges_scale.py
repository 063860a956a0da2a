#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a ranges job of millions of samples costs: the manifest's size,
`clairfs ranges`'s time and memory, the registration's time, and the
daemon's memory while the job is registered.

The data file is sparse (a packed file of fixed-size records that takes no
disk space), so ImageNet-22k's 14.2 million samples fit any machine:

  sudo /usr/bin/python3 bench/ranges_scale.py [--samples 14200000] [--record 8192]
      [--dir /var/tmp/clairfs-ranges-scale] [--build build] [--json out.json]

Needs root and /dev/fuse; Python's standard library only. Prints one JSON
object; the figures are in bench/RESULTS.md ("A ranges job of 14.2 million
samples").
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mib(kib):
    return round(kib / 1024, 1)


def proc(pid):
    """(VmRSS MiB, VmHWM MiB, CPU seconds) of a process."""
    f = {}
    with open(f"/proc/{pid}/status") as s:
        for line in s:
            if line.startswith(("VmRSS:", "VmHWM:")):
                f[line.split(":")[0]] = int(line.split()[1])
    with open(f"/proc/{pid}/stat") as s:
        fields = s.read().rsplit(")", 1)[1].split()
    return mib(f["VmRSS"]), mib(f["VmHWM"]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=14_200_000)
    ap.add_argument("--record", type=int, default=8192, help="bytes per record (default 8192)")
    ap.add_argument("--dir", default="/var/tmp/clairfs-ranges-scale")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    clairfs = os.path.join(os.path.abspath(a.build), "src", "clairfs")
    data, mnt = os.path.join(a.dir, "data"), os.path.join(a.dir, "mnt")
    subprocess.run(["umount", "-l", mnt], capture_output=True)
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(data)
    os.makedirs(mnt)
    packed = os.path.join(data, "packed.bin")
    with open(packed, "wb") as f:
        f.truncate(a.samples * a.record)
    out = {"samples": a.samples, "record": a.record}

    # The manifest, and what writing it took (the child's peak RSS).
    t = time.monotonic()
    r = subprocess.run([clairfs, "ranges", "packed", packed, "--record-size", str(a.record),
                        "--root", data, "--out", os.path.join(data, "ranges.txt")],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"clairfs ranges failed: {r.stderr.strip()}")
    out["ranges_s"] = round(time.monotonic() - t, 2)
    out["ranges_peak_mib"] = mib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    out["manifest_bytes"] = os.path.getsize(os.path.join(data, "ranges.txt"))

    r = subprocess.run([clairfs, "mount", data, mnt, "--mem", "256M", "--no-detect"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"mount failed: {r.stderr.strip()}")
    try:
        pid = int(subprocess.run(["pgrep", "-f", f"clairfs mount {data}"], capture_output=True,
                                 text=True).stdout.split()[0])
        out["rss_after_mount_mib"] = proc(pid)[0]
        samples, stop = [], threading.Event()

        def sample():
            while not stop.wait(0.5):
                samples.append(proc(pid))
        th = threading.Thread(target=sample)
        th.start()
        reg = {"layout": "ranges", "manifest": "ranges.txt", "seed": 1, "batch_size": 256,
               "num_workers": 8, "generator": "explicit"}
        t = time.monotonic()
        with open(os.path.join(mnt, ".clairfs", "control"), "w") as f:
            f.write(json.dumps(reg))
        out["register_s"] = round(time.monotonic() - t, 2)
        time.sleep(3)
        stop.set()
        th.join()
        rss, hwm, cpu = proc(pid)
        with open(os.path.join(mnt, ".clairfs", "status")) as f:
            st = json.load(f)
        out.update(rss_registered_mib=rss, peak_mib=hwm, daemon_cpu_s=round(cpu, 2),
                   bytes_per_sample=round((rss - out["rss_after_mount_mib"]) * 2**20 / a.samples),
                   mode=st.get("mode"),
                   rss_while_registering_mib=[s[0] for s in samples])
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
