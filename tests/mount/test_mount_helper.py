#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mount helper convention (issue 21): mount(8) runs
/sbin/mount.fuse.clairfs (a link to clairfs, which `meson install` makes)
for `mount -t fuse.clairfs`, an fstab line and a systemd mount unit, with
BACKING MOUNTPOINT -o OPTIONS; mount.fuse3 runs `clairfs BACKING MOUNTPOINT
-o OPTIONS` the same way.

- `mount -t fuse.clairfs` with clairfs options as -o key=value and the
  generic ones fstab lines carry (rw, nodev, nosuid, x-systemd.*): mounted,
  the options in effect (status), the bytes the backing files', and
  `umount` ends the daemon;
- an fstab line, through `mount -T FSTAB MOUNTPOINT`;
- `clairfs BACKING MOUNTPOINT -o ...` directly;
- an unknown option and a missing backing directory: a non-zero exit, one
  clear line, nothing mounted.
The test points /sbin/mount.fuse.clairfs at this build for its duration
and puts back whatever was there. Needs root and /dev/fuse (exit 77
without FUSE)."""
import os
import subprocess
import tempfile

import mountlib as ml

HELPER = "/sbin/mount.fuse.clairfs"


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def check_mounted(mp, expected, what, mem=16 << 20, one_copy="never"):
    ml.check(ml.is_mounted(mp), f"{what}: not mounted ({ml.mounts()})")
    ml.read_expected(mp, expected, what)
    st = ml.status(mp)
    ml.check(st["ram"]["capacity"] == mem, f"{what}: --mem not applied: {st['ram']['capacity']}")
    ml.check(st["prefetch"]["one_copy"]["mode"] == one_copy,
             f"{what}: one_copy not applied: {st['prefetch']['one_copy']}")
    ml.check(st["mode"] == "unregistered" and st["detection"]["state"] == "off",
             f"{what}: no_detect not applied: {st['detection']}")


def unmount(mp, what):
    pids = ml.daemon_pids(mp)
    r = run(["umount", mp])
    ml.check(r.returncode == 0, f"{what}: umount failed: {r.stderr.strip()}")
    ml.check(ml.wait_exit(pids), f"{what}: the daemon outlived umount")


def mount_check_unmount(cmd, mp, expected, what, **want):
    """Mounts with `cmd`, checks the mount (check_mounted, with `want`),
    unmounts with umount(8); never leaves the mount behind."""
    r = run(cmd)
    try:
        ml.check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr}")
        check_mounted(mp, expected, what, **want)
        unmount(mp, what)
    finally:
        ml.lazy_unmount(mp)


def case_mount_t(data, mp, expected):
    opts = "mem=16M,no_detect,one_copy=never,rw,nodev,nosuid,x-systemd.requires=/"
    mount_check_unmount(["mount", "-t", "fuse.clairfs", data, mp, "-o", opts], mp, expected,
                        "mount -t fuse.clairfs")


def case_fstab(data, mp, expected, tmp):
    fstab = os.path.join(tmp, "fstab")
    with open(fstab, "w") as f:
        f.write(f"# a test fstab\n{data} {mp} fuse.clairfs "
                "mem=16M,no_detect,one_copy=never,noauto,_netdev,nofail,"
                "x-systemd.after=network-online.target,defaults 0 0\n")
    mount_check_unmount(["mount", "-T", fstab, mp], mp, expected, "fstab line")


def case_direct(data, mp, expected):
    mount_check_unmount([ml.CLAIRFS, data, mp, "-o", "mem=32M,no_detect"], mp, expected,
                        "clairfs BACKING MNT -o", mem=32 << 20, one_copy="auto")


def case_bad(data, mp, tmp):
    for args, want in ((["-t", "fuse.clairfs", data, mp, "-o", "mem=16M,bogus=1"],
                        "unknown option 'bogus'"),
                       (["-t", "fuse.clairfs", data, mp, "-o", "one_copy=sometimes"],
                        "expected auto, always or never"),
                       (["-t", "fuse.clairfs", os.path.join(tmp, "missing"), mp],
                        "cannot open backing directory")):
        r = run(["mount"] + args)
        try:
            ml.check(r.returncode != 0, f"mount {args}: succeeded")
            lines = [l for l in r.stderr.splitlines() if l.startswith("clairfs:")]
            ml.check(len(lines) == 1 and want in lines[0],
                     f"mount {args}: expected one line with {want!r}, got {r.stderr!r}")
            ml.check(not ml.is_mounted(mp), f"mount {args}: mounted anyway")
        finally:
            ml.lazy_unmount(mp)


def test():
    saved = os.readlink(HELPER) if os.path.islink(HELPER) else None
    ml.check(saved is not None or not os.path.exists(HELPER),
             f"{HELPER} exists and is not a link; not replacing it")
    os.symlink(os.path.abspath(ml.CLAIRFS), HELPER + ".test")
    os.replace(HELPER + ".test", HELPER)
    try:
        with tempfile.TemporaryDirectory(prefix="clairfs-helper.", dir="/var/tmp") as tmp:
            data = os.path.join(tmp, "data")
            expected = ml.random_dataset(data, 20, 3, 40_000)
            mp = os.path.join(tmp, "mnt")
            os.makedirs(mp)
            ml.run_cases(("mount -t", lambda: case_mount_t(data, mp, expected)),
                         ("fstab", lambda: case_fstab(data, mp, expected, tmp)),
                         ("direct", lambda: case_direct(data, mp, expected)),
                         ("bad input", lambda: case_bad(data, mp, tmp)))
    finally:
        if saved is None:
            os.unlink(HELPER)
        else:
            os.symlink(saved, HELPER + ".test")
            os.replace(HELPER + ".test", HELPER)


if __name__ == "__main__":
    ml.main(test)
