#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The local-SSD tier through real mounts, with real PyTorch jobs (Debian's
torch: ImageFolder + DataLoader, 2 workers) where the order matters:

- a dataset 3x the RAM budget with SSD room for all of it, registered,
  3 epochs: every byte right, and no backing read after epoch 0;
- SSD room for half of it: backing reads in each later epoch within 5% of
  the optimum, (1 - SSD/dataset) of the files;
- unregistered: first touch fills RAM, then the SSD; a second pass reads
  nothing from the backing store;
- restart-warm: a remount with the same --cache-dir reads nothing from the
  backing store, and after one file changes, exactly that file (with its
  new bytes);
- stage-in (mount --stage, and clairfs stage --wait) reaches 100% and the
  job then reads nothing from the backing store;
- a cache directory that cannot exist, and one on a file system too small
  for --ssd: the tier is off with a one-line reason in status, and the
  mount serves every byte from RAM and the backing store.

Needs root, /dev/fuse and /usr/bin/python3 with torch (exit 77 otherwise)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

from torchlib import (JOB_KEYS, check_bytes, finish, register,  # noqa: E402
                      run_cases_on_dataset, start_job, status)


def run_epochs(mp, what, expected, epochs=3):
    """A registered job; returns its epochs, each with the status at its end."""
    job = start_job(mp, epochs=epochs, status=os.path.join(mp, ".clairfs", "status"))
    out = finish(job, what)
    check_bytes(out, expected, what)
    return out


def backing_per_epoch(out):
    files = [e["status"]["backing"]["files"] for e in out]
    return [files[0]] + [b - a for a, b in zip(files, files[1:])]


def case_ssd_holds_all(tmp, data, expected, size):
    mp, cache = os.path.join(tmp, "mnt-all"), os.path.join(tmp, "cache-all")
    os.makedirs(mp)
    os.makedirs(cache)
    with ml.mounted(data, mp, "--mem", str(size // 3), "--cache-dir", cache, "--ssd",
                    str(2 * size)):
        register(mp, **JOB_KEYS, epochs=3)
        out = run_epochs(mp, "ssd all", expected)
        per = backing_per_epoch(out)
        st = out[-1]["status"]
        ml.log(f"ssd all: backing reads per epoch {per}, ssd {st['ssd']}, ram {st['ram']}")
        ml.check(st["mode"] == "clairvoyant", f"ssd all: mode {st['mode']} ({st['reason']})")
        ml.check(st["ssd"]["enabled"], f"ssd all: tier off: {st['ssd']['error']}")
        ml.check(per[0] <= len(expected), f"ssd all: epoch 0 read {per[0]} files")
        ml.check(per[1:] == [0, 0], f"ssd all: backing reads after epoch 0: {per}")
        ml.check(st["ssd"]["hits"] > 0, "ssd all: nothing was read back from the SSD")
        ml.check(st["ram"]["bytes"] <= st["ram"]["capacity"], f"ssd all: RAM over budget")
        ml.check(st["backing"]["saved_reads"] >= 2 * len(expected),
                 f"ssd all: saved_reads {st['backing']['saved_reads']}")


def case_ssd_holds_half(tmp, data, expected, size):
    mp, cache = os.path.join(tmp, "mnt-half"), os.path.join(tmp, "cache-half")
    os.makedirs(mp)
    os.makedirs(cache)
    ssd = size // 2
    # RAM small next to the SSD, so the SSD's share decides.
    with ml.mounted(data, mp, "--mem", str(size // 20), "--cache-dir", cache, "--ssd", str(ssd)):
        register(mp, **JOB_KEYS, epochs=3)
        out = run_epochs(mp, "ssd half", expected)
        per = backing_per_epoch(out)
        st = out[-1]["status"]
        held = st["ssd"]["bytes"] / size
        bound = (1 - held + 0.05) * len(expected)
        ml.log(f"ssd half: backing reads per epoch {per}, SSD holds {held:.2%} of the bytes, "
               f"bound {bound:.0f} per later epoch")
        ml.check(held > 0.4, f"ssd half: the SSD holds only {held:.2%} of the dataset")
        for e, reads in enumerate(per[1:], 1):
            ml.check(reads <= bound, f"ssd half: epoch {e} read {reads} files, bound {bound:.0f}")


def case_unregistered_first_touch(tmp, data, expected, size):
    mp, cache = os.path.join(tmp, "mnt-u"), os.path.join(tmp, "cache-u")
    os.makedirs(mp)
    os.makedirs(cache)
    with ml.mounted(data, mp, "--mem", str(size // 4), "--cache-dir", cache):
        n = ml.read_all(mp, data)
        ml.wait_until(lambda: status(mp)["ssd"]["bytes"] >= 0.7 * size, 30)
        first = status(mp)["backing"]["files"]
        # The kernel keeps the pages it read (keep_cache); without dropping
        # them the second pass would never reach the daemon.
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        ml.read_all(mp, data)
        st = status(mp)
        ml.log(f"unregistered: {first} backing reads, then {st['backing']['files'] - first}; "
               f"ram {st['ram']['bytes']}, ssd {st['ssd']['bytes']}")
        ml.check(first == n, f"unregistered: first pass read {first} files of {n}")
        ml.check(st["backing"]["files"] == first, "unregistered: second pass read the backing store")
        ml.check(st["ssd"]["hits"] > 0, "unregistered: nothing came from the SSD")


def case_restart_warm(tmp, data, expected, size):
    mp, cache = os.path.join(tmp, "mnt-rw"), os.path.join(tmp, "cache-rw")
    os.makedirs(mp)
    os.makedirs(cache)
    opts = ("--mem", str(size // 4), "--cache-dir", cache)
    with ml.mounted(data, mp, *opts):
        n = ml.read_all(mp, data)
    with ml.mounted(data, mp, *opts):
        ml.read_all(mp, data)
        st = status(mp)
        ml.log(f"restart-warm: backing {st['backing']['files']}, ssd {st['ssd']}")
        ml.check(st["backing"]["files"] == 0,
                 f"restart-warm: {st['backing']['files']} backing reads after a remount")
        ml.check(st["ssd"]["reused"] == n, f"restart-warm: reused {st['ssd']['reused']} of {n}")
    # One file changes (same size, new bytes, new mtime): only it is refetched.
    victim = os.path.join(data, "class03", "img0007.jpg")
    old = open(victim, "rb").read()
    new = bytes(b ^ 0x5A for b in old)
    with open(victim, "wb") as f:
        f.write(new)
    st0 = os.stat(victim)
    os.utime(victim, ns=(st0.st_atime_ns, st0.st_mtime_ns + 1_000_000_000))
    try:
        with ml.mounted(data, mp, *opts):
            ml.read_all(mp, data)
            st = status(mp)
            ml.log(f"restart-warm after a change: backing {st['backing']['files']}, "
                   f"ssd reused {st['ssd']['reused']}, invalidated {st['ssd']['invalidated']}")
            ml.check(st["backing"]["files"] == 1,
                     f"restart-warm: {st['backing']['files']} backing reads after one file changed")
            ml.check(st["ssd"]["invalidated"] == 1,
                     f"restart-warm: invalidated {st['ssd']['invalidated']}")
    finally:
        with open(victim, "wb") as f:
            f.write(old)


def case_stage_in(tmp, data, expected, size):
    for how in ("mount --stage", "clairfs stage --wait"):
        tag = "s1" if how.startswith("mount") else "s2"
        mp, cache = os.path.join(tmp, f"mnt-{tag}"), os.path.join(tmp, f"cache-{tag}")
        os.makedirs(mp)
        os.makedirs(cache)
        extra = ("--stage",) if how.startswith("mount") else ()
        with ml.mounted(data, mp, "--mem", str(size // 4), "--cache-dir", cache, *extra):
            if not extra:
                r = ml.clairfs("stage", mp, "--wait", timeout=300)
                ml.check(r.returncode == 0, f"{how}: exit {r.returncode}: {r.stderr.strip()}")
                ml.check("100%" in r.stderr, f"{how}: no 100% in its progress: {r.stderr!r}")
            ok = ml.wait_until(lambda: status(mp)["stage"]["state"] == "done", 120)
            st = status(mp)
            ml.check(ok, f"{how}: stage {st['stage']}")
            ml.check(st["stage"]["done_bytes"] == st["stage"]["total_bytes"] == size,
                     f"{how}: stage {st['stage']} for {size} bytes")
            human = ml.clairfs("status", mp).stdout
            ml.check("100%" in human, f"{how}: clairfs status shows no 100%: {human}")
            staged = st["backing"]["files"]
            ml.check(staged == len(expected), f"{how}: staging read {staged} files")
            register(mp, **JOB_KEYS, epochs=1)
            run_epochs(mp, how, expected, epochs=1)
            st = status(mp)
            ml.check(st["backing"]["files"] == staged,
                     f"{how}: the job read {st['backing']['files'] - staged} files after staging")
            ml.log(f"{how}: staged {size} bytes; stage {st['stage']}")


def case_cache_dir_unusable(tmp, data, expected, size):
    blocker = os.path.join(tmp, "a-file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    small = os.path.join(tmp, "small-fs")
    os.makedirs(small)
    image = os.path.join(tmp, "small.img")
    subprocess.run(["truncate", "-s", "16M", image], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
    r = ml.run(["mount", "-o", "loop", image, small])
    ml.check(r.returncode == 0, f"cannot loop-mount a small ext4 here: {r.stderr.strip()}")
    try:
        for what, cache_dir, ssd, word in (
                ("missing", os.path.join(blocker, "cache"), "64M", "Not a directory"),
                ("too small", small, "64M", "No space left"),
        ):
            mp = os.path.join(tmp, f"mnt-bad-{what.replace(' ', '-')}")
            os.makedirs(mp)
            with ml.mounted(data, mp, "--mem", str(size // 4), "--cache-dir", cache_dir,
                            "--ssd", ssd) as m:
                st = status(mp)
                err = st["ssd"]["error"] or ""
                ml.check(not st["ssd"]["enabled"], f"{what}: the SSD tier is on: {st['ssd']}")
                ml.check(word in err and "\n" not in err, f"{what}: ssd.error {err!r}")
                ml.check("ssd" in m.stderr.lower() or "cache" in m.stderr.lower(),
                         f"{what}: nothing logged at mount: {m.stderr!r}")
                n = ml.read_all(mp, data)
                ml.check(n == len(expected), f"{what}: read {n} files")
                ml.log(f"{what}: {err}")
    finally:
        ml.run(["umount", small])


@ml.main
def test():
    run_cases_on_dataset(case_ssd_holds_all, case_ssd_holds_half, case_unregistered_first_touch,
                         case_restart_warm, case_stage_in, case_cache_dir_unusable)
