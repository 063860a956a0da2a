#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stage-in through real mounts: the whole dataset copied into RAM in the
background, then an unmodified PyTorch job (Debian's torch: ImageFolder +
DataLoader, 2 workers) that reads nothing more from the backing store.

- mount --stage: status reaches stage.state "done" with done_bytes equal to
  the dataset's bytes, `clairfs status` shows 100%, every file was read from
  the backing store exactly once, and a registered job then reads none;
- clairfs stage MOUNT --wait on a registered mount: exit 0 and a 100%
  progress line, the same counts;
- --mem smaller than the dataset: stage ends "full" with RAM at most at its
  budget, `clairfs stage --wait` exits 1, and every byte is still right;
- `{"stage": "yes"}` is refused with EINVAL and a reason in status;
- staging leaves none of the backing files' pages in the page cache (the
  tiers hold the bytes; a second copy would be charged to the same memory
  budget), checked with fincore on a dataset in /var/tmp (disk-backed:
  tmpfs pages cannot be dropped).

Needs root, /dev/fuse and /usr/bin/python3 with torch (exit 77 otherwise)."""
import errno
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

from torchlib import (JOB_KEYS, check_bytes, digests, finish,  # noqa: E402
                      make_dataset, register, run_cases_on_dataset, start_job, status)


def check_staged_then_job(mp, what, expected, size):
    st = status(mp)
    ml.check(st["stage"]["state"] == "done", f"{what}: stage {st['stage']}")
    ml.check(st["stage"]["done_bytes"] == st["stage"]["total_bytes"] == size,
             f"{what}: stage {st['stage']} for {size} bytes")
    human = ml.clairfs("status", mp).stdout
    ml.check("100%" in human, f"{what}: clairfs status shows no 100%: {human}")
    staged = st["backing"]["files"]
    ml.check(staged == len(expected), f"{what}: staging read {staged} files")
    register(mp, **JOB_KEYS, epochs=2)
    check_bytes(finish(start_job(mp, epochs=2), what), expected, what)
    st = status(mp)
    ml.check(st["backing"]["files"] == staged,
             f"{what}: the job read {st['backing']['files'] - staged} files after staging")
    # Two epochs of opens that a direct read would each have paid for, less
    # the one staging read per file.
    ml.check(st["backing"]["saved_reads"] == len(expected),
             f"{what}: saved_reads {st['backing']['saved_reads']}")
    ml.log(f"{what}: staged {size} bytes, then 2 epochs with no backing read")


def case_mount_stage(tmp, data, expected, size):
    mp = os.path.join(tmp, "mnt-s1")
    os.makedirs(mp)
    with ml.mounted(data, mp, "--mem", str(2 * size), "--stage"):
        ok = ml.wait_until(lambda: status(mp)["stage"]["state"] == "done", 120)
        ml.check(ok, f"mount --stage: stage {status(mp)['stage']}")
        check_staged_then_job(mp, "mount --stage", expected, size)


def case_stage_command(tmp, data, expected, size):
    mp = os.path.join(tmp, "mnt-s2")
    os.makedirs(mp)
    with ml.mounted(data, mp, "--mem", str(2 * size)):
        ml.check(status(mp)["stage"]["state"] == "idle", "stage ran without being asked")
        register(mp, **JOB_KEYS, epochs=2)
        r = ml.clairfs("stage", mp, "--wait", timeout=300)
        ml.check(r.returncode == 0, f"clairfs stage --wait: exit {r.returncode}: {r.stderr}")
        ml.check("100%" in r.stderr and "done" in r.stderr,
                 f"clairfs stage --wait: no final 100% line: {r.stderr!r}")
        check_staged_then_job(mp, "clairfs stage", expected, size)


def case_ram_too_small(tmp, data, expected, size):
    mp = os.path.join(tmp, "mnt-s3")
    os.makedirs(mp)
    budget = size // 3
    with ml.mounted(data, mp, "--mem", str(budget)):
        r = ml.clairfs("stage", mp, "--wait", timeout=300)
        st = status(mp)
        ml.check(r.returncode == 1, f"stage into a small RAM: exit {r.returncode}: {r.stderr}")
        ml.check(st["stage"]["state"] == "full", f"stage into a small RAM: {st['stage']}")
        ml.check(st["ram"]["bytes"] <= budget, f"RAM over budget: {st['ram']}")
        ml.check(st["stage"]["done_bytes"] >= budget * 0.8,
                 f"stage stopped early: {st['stage']} for a budget of {budget}")
        ml.check(ml.read_all(mp, data) == len(expected), "not every file was read")
        ml.log(f"ram too small: {st['stage']}")


def case_bad_stage_value(tmp, data, expected, size):
    mp = os.path.join(tmp, "mnt-s4")
    os.makedirs(mp)
    with ml.mounted(data, mp, "--mem", str(2 * size)):
        ctl = os.path.join(mp, ".clairfs", "control")

        def write_bad():
            with open(ctl, "w") as f:
                f.write('{"stage": "yes"}')
        ml.expect_errno(errno.EINVAL, write_bad, what='{"stage": "yes"}')
        st = status(mp)
        ml.check(st["error"] and "stage" in st["error"], f"status error {st['error']!r}")
        ml.check(st["stage"]["state"] == "idle", f"a refused write started a stage: {st['stage']}")
        ml.check(ml.read_all(mp, data) == len(expected), "the mount stopped serving")


def cached_bytes(root):
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES"] + files,
                       capture_output=True, text=True, timeout=60)
    ml.check(r.returncode == 0, f"fincore: {r.stderr}")
    return sum(int(x) for x in r.stdout.split())


def case_no_backing_pages(tmp, data, expected, size):
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="clairfs-test-") as vt:
        d = os.path.join(vt, "data")
        make_dataset(d)
        digests(d)  # reads every file: its pages are now cached
        os.sync()  # and clean, so they can be dropped
        before = cached_bytes(d)
        ml.check(before >= size // 2, f"only {before} of {size} bytes cached before staging")
        mp = os.path.join(vt, "mnt")
        os.makedirs(mp)
        with ml.mounted(d, mp, "--mem", str(2 * size), "--stage"):
            ok = ml.wait_until(lambda: status(mp)["stage"]["state"] == "done", 120)
            ml.check(ok, f"stage: {status(mp)['stage']}")
            after = cached_bytes(d)
            ml.check(after <= before // 100,
                     f"{after} bytes of the backing files still cached after staging "
                     f"(before: {before})")
        ml.log(f"backing pages cached: {before} bytes before staging, {after} after")


@ml.main
def test():
    run_cases_on_dataset(case_mount_stage, case_stage_command, case_ram_too_small,
                         case_bad_stage_value, case_no_backing_pages)
