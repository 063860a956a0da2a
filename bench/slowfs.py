#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A slow "shared file system" on one machine, and its teardown.

    slowfs.py up   --state FILE --dir DIR [--size 3G] [--bps 20M] [--iops 250]
                   [--mem 640M]
    slowfs.py down --state FILE

up: sparse image DIR/slowfs.img -> `losetup --direct-io=on` -> mkfs.ext4 ->
mount -o noatime at DIR/slowfs; cgroup-v1 blkio throttle (read bps and read
IOPS on the loop device's MAJ:MIN), a memory cgroup with limit --mem, and a
cpuacct cgroup (to measure CPU), all named clairfs-bench-<pid>-<random>.
Every object is recorded in FILE (JSON) as soon as it exists, so `down`
removes exactly what `up` created, in reverse, and nothing else; `down` is
idempotent (a missing object is skipped) and deletes FILE at the end.
Processes join the cgroups through bench/cgexec.sh. Needs root.
"""
import argparse
import json
import os
import secrets
import subprocess
import sys
import time

CG = "/sys/fs/cgroup"


def parse_size(s):
    s = str(s).strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def parse_rate(s):
    """Bytes per second: 20M means 20*10^6 (decimal, like the reference)."""
    s = str(s).strip().upper().removesuffix("/S").removesuffix("B")
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def _save(state_file, st):
    tmp = state_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, state_file)


def _run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def up(state_file, workdir, size="3G", bps="20M", iops=250, mem="640M"):
    if os.geteuid() != 0:
        sys.exit("slowfs: needs root (losetup, mount, cgroups)")
    for ctl in ("blkio", "memory", "cpuacct"):
        if not os.path.isdir(os.path.join(CG, ctl)):
            sys.exit(f"slowfs: cgroup v1 controller {ctl} not at {CG}/{ctl}")
    if os.path.exists(state_file):
        sys.exit(f"slowfs: {state_file} exists; run `slowfs.py down` first")
    os.makedirs(workdir, exist_ok=True)
    name = f"clairfs-bench-{os.getpid()}-{secrets.token_hex(3)}"
    st = {"name": name, "created": []}  # created: [kind, value] in order
    _save(state_file, st)

    def made(kind, value, **extra):
        st["created"].append([kind, value])
        st.update(extra)
        _save(state_file, st)

    img = os.path.join(workdir, "slowfs.img")
    mnt = os.path.join(workdir, "slowfs")
    if os.path.exists(img):
        sys.exit(f"slowfs: {img} exists (left over?); remove it first")
    with open(img, "wb") as f:
        f.truncate(parse_size(size))
    made("file", img, image=img)
    loop = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", img],
                          check=True, capture_output=True, text=True).stdout.strip()
    made("loop", loop, loop=loop)
    dio = open(f"/sys/block/{os.path.basename(loop)}/loop/dio").read().strip()
    st["direct_io"] = dio == "1"
    _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop)
    if not os.path.isdir(mnt):
        os.mkdir(mnt)
        made("dir", mnt)
    _run("mount", "-o", "noatime", loop, mnt)
    made("mount", mnt, mnt=mnt)
    majmin = open(f"/sys/block/{os.path.basename(loop)}/dev").read().strip()
    st["majmin"] = majmin
    cgs = {}
    for ctl in ("blkio", "memory", "cpuacct"):
        d = os.path.join(CG, ctl, name)
        os.mkdir(d)
        made("cgroup", d)
        cgs[ctl] = d
    st["cgroups"] = cgs
    st["bps"], st["iops"], st["mem"] = parse_rate(bps), int(iops), parse_size(mem)
    with open(os.path.join(cgs["blkio"], "blkio.throttle.read_bps_device"), "w") as f:
        f.write(f"{majmin} {st['bps']}")
    with open(os.path.join(cgs["blkio"], "blkio.throttle.read_iops_device"), "w") as f:
        f.write(f"{majmin} {st['iops']}")
    with open(os.path.join(cgs["memory"], "memory.limit_in_bytes"), "w") as f:
        f.write(str(st["mem"]))
    _save(state_file, st)
    return st


def add_node(state_file, st, label, mem):
    """A memory cgroup limited to MEM and a cpuacct cgroup of their own,
    <name>-<label>, for one simulated node (bench/cluster.py): recorded in
    the state file, so `down` removes them first. A node keeps the blkio
    cgroup of `up`: the throttle is per cgroup, so the nodes' reads share
    it as nodes share one file system. Returns the cgexec.sh cgroups."""
    cgs = {"blkio": st["cgroups"]["blkio"]}
    for ctl in ("memory", "cpuacct"):
        d = os.path.join(CG, ctl, f"{st['name']}-{label}")
        os.mkdir(d)
        st["created"].append(["cgroup", d])
        _save(state_file, st)
        cgs[ctl] = d
    with open(os.path.join(cgs["memory"], "memory.limit_in_bytes"), "w") as f:
        f.write(str(parse_size(mem)))
    return cgs


def _mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def _evacuate(cg):
    """Moves any process still in cg to the parent cgroup (so rmdir works)."""
    parent = os.path.dirname(cg)
    try:
        pids = open(os.path.join(cg, "cgroup.procs")).read().split()
    except FileNotFoundError:
        return
    for pid in pids:
        try:
            with open(os.path.join(parent, "cgroup.procs"), "w") as f:
                f.write(pid)
        except OSError:
            pass


def down(state_file, quiet=False):
    try:
        with open(state_file) as f:
            st = json.load(f)
    except FileNotFoundError:
        return
    errors = []
    for kind, value in reversed(st["created"]):
        try:
            if kind == "cgroup" and os.path.isdir(value):
                _evacuate(value)
                for _ in range(50):
                    try:
                        os.rmdir(value)
                        break
                    except OSError:
                        time.sleep(0.1)
                else:
                    os.rmdir(value)
            elif kind == "mount" and _mounted(value):
                r = subprocess.run(["umount", value], capture_output=True)
                if r.returncode != 0:
                    subprocess.run(["umount", "-l", value], check=True)
            elif kind == "dir" and os.path.isdir(value):
                os.rmdir(value)
            elif kind == "loop":
                # Detach only if it is still our image on that device.
                r = subprocess.run(["losetup", "-n", "-O", "BACK-FILE", value],
                                   capture_output=True, text=True)
                if r.returncode == 0 and r.stdout.strip().startswith(st.get("image", "\0")):
                    subprocess.run(["losetup", "-d", value], check=True)
            elif kind == "file" and os.path.exists(value):
                os.unlink(value)
        except Exception as e:  # keep tearing down the rest
            errors.append(f"{kind} {value}: {e}")
    if errors:
        print("slowfs: teardown problems:\n  " + "\n  ".join(errors), file=sys.stderr)
        return False
    os.unlink(state_file)
    if not quiet:
        print(f"slowfs: removed {len(st['created'])} objects of {st['name']}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--state", required=True)
    u.add_argument("--dir", required=True)
    u.add_argument("--size", default="3G")
    u.add_argument("--bps", default="20M")
    u.add_argument("--iops", default=250, type=int)
    u.add_argument("--mem", default="640M")
    d = sub.add_parser("down")
    d.add_argument("--state", required=True)
    a = ap.parse_args()
    if a.cmd == "up":
        try:
            st = up(a.state, a.dir, a.size, a.bps, a.iops, a.mem)
        except BaseException:
            down(a.state, quiet=True)
            raise
        json.dump(st, sys.stdout, indent=1)
        print()
    else:
        sys.exit(0 if down(a.state) is not False else 1)


if __name__ == "__main__":
    main()
