#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""FUSE passthrough (--passthrough, the default where libfuse >= 3.17, a
kernel with CONFIG_FUSE_PASSTHROUGH and root): a file the tiers do not take
(here, larger than a sixteenth of --mem 16M, with --chunk-size 0 so that
the tiers do not hold it by chunk either) is read by the kernel straight
from its backing file.

Where this build and kernel have it (status passthrough.state "on"):
- whole reads, reads at random offsets across page and file ends, and EOF
  return the backing file's bytes, with no READ request to the daemon;
- two concurrent opens of one file share one backing file (files_open 1),
  and the last close gives it back (files_open 0);
- small files still come from the RAM tier (READs as ever), and with
  --mem 0 files of one READ or less (1 MiB) are not passed through;
- a file that changed on the backing store since the scan fails its open
  with ESTALE, as its first READ would have.
Where it does not (a build against Debian 12's own libfuse 3.14, without
subprojects/libfuse; with it, that is a failure), status says why, and the
same reads return the same bytes through READs. --no-passthrough: off, with
that reason, and READs. Exit 77 only without FUSE."""
import errno
import os
import random
import tempfile

import mountlib as ml

BIG = 3 * ml.MIB + 1234  # above 16M / 16, and not a whole number of pages


def make_dataset(root):
    expected = ml.random_dataset(root, 24, 31, 50_000)
    rng = random.Random(5)
    for i in range(3):
        rel = os.path.join("big", f"shard{i}.bin")
        os.makedirs(os.path.join(root, "big"), exist_ok=True)
        data = rng.randbytes(BIG + i)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        expected[rel] = data
    return expected


def reads(st):
    return st["requests"]["read"]


def read_ranges(mp, rel, data, rng):
    with open(os.path.join(mp, rel), "rb", buffering=0) as f:
        for _ in range(40):
            off = rng.choice([0, 4095, 4096, len(data) - 1, len(data), len(data) + 10,
                              rng.randrange(len(data))])
            size = rng.choice([1, 100, 4096, 70_000, 1 << 20])
            got = os.pread(f.fileno(), size, off)
            ml.check(got == data[off:off + size], f"{rel}: pread({size}, {off}) differs")


def case_default(data, mp, expected):
    rng = random.Random(9)
    big = sorted(r for r in expected if r.startswith("big/"))
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect", "--chunk-size", "0"):
        pt = ml.status(mp)["passthrough"]
        ml.log(f"passthrough: {pt}")
        on = pt["state"] == "on"
        if not on:
            ml.check(pt["reason"], f"passthrough off without a reason: {pt}")
            # With subprojects/libfuse (3.18) every build has it: only a
            # build against Debian 12's own 3.14 may lack it.
            subproject = os.path.join(ml.SOURCE_ROOT, "subprojects", "libfuse", "meson.build")
            ml.check("this build's libfuse" not in pt["reason"] or not os.path.exists(subproject),
                     f"subprojects/libfuse is there, yet this build has no passthrough: {pt}")
        before = reads(ml.status(mp))
        for rel in big:
            with open(os.path.join(mp, rel), "rb") as f:
                ml.check(f.read() == expected[rel], f"{rel}: bytes differ")
            read_ranges(mp, rel, expected[rel], rng)
        # Each status read makes a READ or two of its own.
        made = reads(ml.status(mp)) - before
        if on:
            ml.check(made <= 4, f"passthrough on, yet {made} READs for the large files")
            st = ml.status(mp)["passthrough"]
            ml.check(st["opens"] >= 2 * len(big), f"passthrough opens: {st}")
        else:
            ml.check(made >= len(big), f"passthrough off, and only {made} READs")

        # Two opens of one file at once: one backing file, shared.
        rel = big[0]
        a = open(os.path.join(mp, rel), "rb")
        b = open(os.path.join(mp, rel), "rb")
        try:
            ml.check(a.read(5000) == expected[rel][:5000], f"{rel}: first open differs")
            ml.check(b.read() == expected[rel], f"{rel}: second open differs")
            if on:
                ml.check(ml.status(mp)["passthrough"]["files_open"] == 1,
                         f"two opens: {ml.status(mp)['passthrough']}")
        finally:
            a.close()
            b.close()
        if on:
            ml.check(ml.wait_until(lambda: ml.status(mp)["passthrough"]["files_open"] == 0, 20),
                     f"backing file kept after the last close: {ml.status(mp)['passthrough']}")

        # The small files: the RAM tier, through READs, whatever the mode.
        before = reads(ml.status(mp))
        ml.read_expected(mp, {r: d for r, d in expected.items() if not r.startswith("big/")},
                         "small files")
        ml.check(reads(ml.status(mp)) - before >= 20, "small files made no READs")

        if on:
            stale(data, mp, expected, big[1], pt)


def stale(data, mp, expected, rel, pt):
    """Changed behind the mount's back: the OPEN opens the backing file,
    so it is refused (off, the kernel may still hold the scanned bytes in
    the mount's page cache and a READ checks; other tests cover that)."""
    path = os.path.join(data, rel)
    with open(path, "r+b") as f:
        f.truncate(BIG // 2)
    ml.expect_errno(errno.ESTALE, lambda: open(os.path.join(mp, rel), "rb").read(),
                    what=f"{rel} truncated on the backing store")
    with open(path, "wb") as f:
        f.write(expected[rel])
    ml.check(ml.status(mp)["passthrough"]["state"] == pt["state"],
             "a stale file changed the passthrough state")


def case_off(data, mp, expected):
    big = sorted(r for r in expected if r.startswith("big/"))
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect", "--chunk-size", "0",
                    "--no-passthrough"):
        pt = ml.status(mp)["passthrough"]
        ml.check(pt["state"] == "off" and "--no-passthrough" in (pt["reason"] or ""),
                 f"--no-passthrough: {pt}")
        before = reads(ml.status(mp))
        for rel in big:
            with open(os.path.join(mp, rel), "rb") as f:
                ml.check(f.read() == expected[rel], f"{rel}: bytes differ")
        ml.check(reads(ml.status(mp)) - before >= len(big), "--no-passthrough: no READs")
        ml.check(ml.status(mp)["passthrough"]["opens"] == 0, "--no-passthrough: passed through")


def case_small(data, mp, expected):
    """--mem 0: no file is tiered, but only those larger than one READ
    (1 MiB) are passed through; a smaller one costs one READ, less than
    the backing open a passthrough open makes."""
    small = {r: d for r, d in expected.items() if not r.startswith("big/")}
    with ml.mounted(data, mp, "--mem", "0", "--no-detect"):
        before = ml.status(mp)
        ml.read_expected(mp, small, "--mem 0, small files")
        after = ml.status(mp)
        ml.check(after["passthrough"]["opens"] == before["passthrough"]["opens"],
                 f"small files passed through: {after['passthrough']}")
        ml.check(reads(after) - reads(before) >= len(small) - 1, "--mem 0: small files, no READs")
        rel = sorted(r for r in expected if r.startswith("big/"))[2]
        with open(os.path.join(mp, rel), "rb") as f:
            ml.check(f.read() == expected[rel], f"--mem 0: {rel} differs")
        if after["passthrough"]["state"] == "on":
            ml.check(ml.status(mp)["passthrough"]["opens"] == after["passthrough"]["opens"] + 1,
                     "--mem 0: the large file was not passed through")


def test():
    with tempfile.TemporaryDirectory(prefix="clairfs-passthrough.", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        expected = make_dataset(data)
        mps = [os.path.join(tmp, m) for m in ("mnt-d", "mnt-o", "mnt-s")]
        for mp in mps:
            os.makedirs(mp)
        ml.run_cases(("default", lambda: case_default(data, mps[0], expected)),
                     ("off", lambda: case_off(data, mps[1], expected)),
                     ("small", lambda: case_small(data, mps[2], expected)))


if __name__ == "__main__":
    ml.main(test)
