#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The kernel's readahead on the mount follows --max-read.

A FUSE mount's readahead starts at the kernel's 128 KiB, which the FUSE
handshake can only lower; the daemon raises the mount's
/sys/class/bdi/MAJOR:MINOR/read_ahead_kb to --max-read after mounting
(kernel_readahead.hpp). Checked:
- status `readahead` says what the kernel uses, the bdi file agrees, and
  the human status has one `readahead:` line, Prometheus
  clairfs_kernel_readahead_bytes;
- a large file read in order arrives in READs that are larger than 128
  KiB: fewer READs than 128 KiB requests would take, never fewer than
  --max-read allows; every byte equals the backing file's;
- --max-read 256K sets 256 KiB, and the same read then takes at least a
  READ per 256 KiB.
- a mount made by a user (nobody) keeps 128 KiB, and status says that
  raising it needs root; the bytes are the same.
Runs as root (writing read_ahead_kb needs it; nobody's mount through
setpriv); exit 77 only without FUSE."""
import json
import os
import random

import mountlib as ml

SIZE = 17 * ml.MIB + 12345  # held by chunk under --mem 64M (above a sixteenth)


def readahead(mp):
    ra = ml.status(mp)["readahead"]
    ml.check(ra["bdi"], f"status names no bdi: {ra}")
    with open(f"/sys/class/bdi/{ra['bdi']}/read_ahead_kb") as f:
        kernel = int(f.read())
    ml.check(ra["kb"] == kernel, f"status says {ra['kb']} KiB, the bdi file {kernel}")
    return ra


def reads_for(mp, rel, want, what):
    """READ requests that reading `rel` through the mount in 64 KiB calls took."""
    before = ml.status(mp)["requests"]["read"]
    got = bytearray()
    with open(os.path.join(mp, rel), "rb", buffering=0) as f:
        while chunk := f.read(64 * 1024):
            got += chunk
    ml.check(bytes(got) == want, f"{what}: {rel} differs through the mount")
    return ml.status(mp)["requests"]["read"] - before


def case_default(data, mp, files):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect"):
        ra = readahead(mp)
        ml.check(ra["kb"] == 1024 and ra["asked_kb"] == 1024 and ra["reason"] is None,
                 f"--max-read 1M (the default): readahead {ra}")
        human = [l for l in ml.clairfs("status", mp).stdout.splitlines()
                 if l.startswith("readahead:")]
        ml.check(human == ["readahead:   1024 KiB"], f"human status: {human}")
        prom = [l for l in ml.clairfs("status", mp, "--prometheus").stdout.splitlines()
                if l.startswith("clairfs_kernel_readahead_bytes")]
        ml.check(len(prom) == 1 and float(prom[0].split()[-1]) == 1 << 20,
                 f"Prometheus: {prom}")
        n = reads_for(mp, "a.bin", files["a.bin"], "1M")
        ml.log(f"--max-read 1M: {n} READs for {SIZE} bytes")
        ml.check(n >= SIZE // ml.MIB, f"{n} READs: fewer than 1 MiB requests allow")
        ml.check(n <= SIZE // (256 * 1024),
                 f"{n} READs for {SIZE} bytes: readahead is not above 128 KiB")


def case_smaller(data, mp, files):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--max-read", "256K"):
        ra = readahead(mp)
        ml.check(ra["kb"] == 256 and ra["reason"] is None, f"--max-read 256K: {ra}")
        n = reads_for(mp, "b.bin", files["b.bin"], "256K")
        ml.log(f"--max-read 256K: {n} READs for {SIZE} bytes")
        ml.check(n >= SIZE // (256 * 1024), f"{n} READs: larger than --max-read 256K")


def case_not_root(data, mp, files):
    """A user's own mount keeps the kernel's 128 KiB and says why. A user
    may mount where /dev/fuse is 0666, as Debian's udev rule makes it; this
    machine's may be 0600: opened up for the case, then put back."""
    mp = mp + "-nobody"
    os.makedirs(mp)
    os.chown(mp, 65534, 65534)
    with ml.fuse_open_to_users():
        not_root(data, mp, files)


def not_root(data, mp, files):
    r = ml.clairfs("mount", data, mp, "--mem", "64M", "--no-detect", prefix=ml.AS_NOBODY)
    ml.check(r.returncode == 0, f"mount as nobody: exit {r.returncode}, {r.stderr!r}")
    try:
        r = ml.clairfs("status", mp, "--json", prefix=ml.AS_NOBODY)
        ml.check(r.returncode == 0, f"status as nobody: {r.stderr!r}")
        ra = json.loads(r.stdout)["readahead"]
        ml.check(ra["kb"] == 128 and ra["asked_kb"] == 1024 and ra["reason"] ==
                 "raising it needs root", f"as nobody: readahead {ra}")
        human = [l for l in ml.clairfs("status", mp, prefix=ml.AS_NOBODY).stdout.splitlines()
                 if l.startswith("readahead:")]
        ml.check(human == ["readahead:   128 KiB (asked 1024 KiB: raising it needs root)"],
                 f"as nobody, human status: {human}")
        ml.check_read_as(ml.AS_NOBODY, mp, files, "as nobody")
        ml.log(f"as nobody: readahead {ra['kb']} KiB ({ra['reason']}), bytes equal")
    finally:
        ml.unmount_as(ml.AS_NOBODY, mp)


def run():
    with ml.temp_dir() as tmp:
        os.chmod(tmp, 0o755)  # nobody must reach the data and the mount point
        data, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt")
        os.makedirs(data)
        os.makedirs(mp)
        rng = random.Random(44)
        files = {}
        for name in ("a.bin", "b.bin"):
            files[name] = rng.randbytes(SIZE)
            with open(os.path.join(data, name), "wb") as f:
                f.write(files[name])
        ml.run_cases(("default", lambda: case_default(data, mp, files)),
                     ("smaller", lambda: case_smaller(data, mp, files)),
                     ("not_root", lambda: case_not_root(data, mp, files)))


if __name__ == "__main__":
    ml.main(run)
