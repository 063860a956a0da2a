#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pushes at open (the default; --no-open-push turns them off) through a
real mount. At an OPEN of a file the RAM tier holds, clairfs copies its
bytes into the kernel's page cache before replying, unless the kernel has
lately been keeping the files it had; the job's reads then make no READ
round trip, and no GETATTR the epoch after.

- first pass (first touch: nothing held at the opens): no push; every
  file lands in the RAM tier;
- the kernel drops the pages (drop_caches 1): the next pass pushes at
  15 opens in 16 and watches the 16th, the same bytes, about one READ per
  watched file, no backing read;
- the pages stay: the watched opens show the kernel keeping the files,
  and within a few passes the pushes stop (open_kept rises);
- the pages go again: the watched opens need READs, and pushing resumes
  within the pass;
- --no-open-push: never a push, and a READ for every file the kernel
  dropped.
Those run with the default --one-copy auto, which on a machine with memory
to spare lets the page cache keep a second copy (checked), and with
--no-one-copy. With --one-copy always the last close of a file the RAM tier
holds drops its pages from the kernel's cache:
- first touch: every file's last close drops it (close_drops);
- the next pass, with no drop_caches, pushes every file at its open: no
  READ, no backing read;
- with --no-open-push the next pass needs a READ for every file: the
  kernel really had dropped them (without one copy it kept them: above);
- a file still open elsewhere keeps its pages until its last close.
Every byte read equals the backing file's. Needs root (drop_caches) and
/dev/fuse (exit 77 without FUSE)."""
import os
import tempfile

import mountlib as ml

FILES = 160


def make_dataset(root):
    # An empty file among them: nothing to push.
    return ml.random_dataset(root, FILES, 20, 300_000, empty=(7,))


status, read_all = ml.status, ml.read_expected


def drop_pages():
    ml.drop_caches("1")


def counts(st):
    p = st["prefetch"]
    return {"pushes": p["open_pushes"], "watched": p["open_watched"], "kept": p["open_kept"],
            "reads": st["requests"]["read"], "backing": st["backing"]["files"],
            "close_drops": p["close_drops"]}


def delta(a, b):
    return {k: b[k] - a[k] for k in a}


def a_pass(mp, expected, what):
    """Reads every file; what the pass did, once its RELEASEs are in (they
    are asynchronous, and the watched opens learn at RELEASE)."""
    before = counts(status(mp))
    opens = status(mp)["requests"]["open"]
    read_all(mp, expected, what)
    ml.check(ml.wait_until(lambda: status(mp)["requests"]["release"] >= opens + FILES, 20),
             f"{what}: the RELEASEs did not arrive")
    d = delta(before, counts(status(mp)))
    ml.log(f"{what}: {d}")
    return d


def case_open_push(data, mp, expected):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect"):
        d = a_pass(mp, expected, "first touch")
        ml.check(d["pushes"] == 0, f"first touch pushed {d['pushes']} files nothing held")
        # The empty file needs no read.
        ml.check(d["backing"] == FILES - 1, f"first touch: {d['backing']} backing reads")
        st = status(mp)
        ml.check(st["ram"]["files"] == FILES - 1, f"first touch: RAM tier {st['ram']}")

        drop_pages()
        d = a_pass(mp, expected, "pages dropped")
        pushable = FILES - 1  # not the empty file
        ml.check(d["pushes"] >= pushable - pushable // 16 - 2,
                 f"pages dropped: {d['pushes']} pushes of {pushable} files")
        ml.check(1 <= d["watched"] <= FILES // 16 + 2, f"pages dropped: {d['watched']} watched")
        # READs for the watched files only (two for one past 128 KiB, the
        # kernel's first readahead), and the status documents' own.
        ml.check(d["reads"] <= 2 * d["watched"] + 10,
                 f"pages dropped: {d['reads']} READs with {d['watched']} files watched")
        ml.check(d["backing"] == 0, f"pages dropped: {d['backing']} backing reads")

        # The kernel keeps every page now: the pushes stop.
        for n in range(12):
            d = a_pass(mp, expected, f"pages kept, pass {n + 1}")
            if d["pushes"] == 0:
                break
        ml.check(d["pushes"] == 0, f"still pushing after 12 passes the kernel kept: {d}")
        # The empty file's open is nobody's evidence.
        ml.check(d["watched"] == FILES - 1 and d["kept"] == d["watched"], f"pages kept: {d}")
        ml.check(d["reads"] <= 10, f"pages kept: {d['reads']} READs")

        # Dropped again: the watched opens need READs, and pushing resumes.
        drop_pages()
        d = a_pass(mp, expected, "pages dropped again")
        ml.check(d["pushes"] >= FILES // 2, f"pages dropped again: only {d['pushes']} pushes")
        ml.check(d["backing"] == 0, f"pages dropped again: {d['backing']} backing reads")
        # 24 MB in the tier, with the machine's memory as room: no drops.
        oc = status(mp)["prefetch"]["one_copy"]
        ml.check(oc["mode"] == "auto" and oc["dropping"] is False and oc["room_bytes"],
                 f"one copy by default: {oc}")
        ml.check(status(mp)["prefetch"]["close_drops"] == 0, "auto one copy dropped pages")


def case_no_open_push(data, mp, expected):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--no-open-push", "--no-one-copy"):
        a_pass(mp, expected, "first touch")
        drop_pages()
        d = a_pass(mp, expected, "--no-open-push, pages dropped")
        ml.check(d["pushes"] == 0 and d["watched"] == 0, f"--no-open-push: {d}")
        ml.check(d["reads"] >= FILES - 1, f"--no-open-push: {d['reads']} READs for {FILES} files")
        ml.check(d["backing"] == 0, f"--no-open-push: {d['backing']} backing reads")


def open_now(st):
    return st["requests"]["open"] - st["requests"]["release"]


def case_one_copy(data, mp, expected):
    pushable = FILES - 1  # not the empty file
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--one-copy", "always"):
        oc = status(mp)["prefetch"]["one_copy"]
        ml.check(oc["mode"] == "always" and oc["dropping"] is True, f"--one-copy always: {oc}")
        d = a_pass(mp, expected, "one copy, first touch")
        ml.check(d["pushes"] == 0 and d["backing"] == pushable, f"one copy, first touch: {d}")
        # Each file's last close, once the RAM tier held it; the empty file
        # has no pages (the tier holds it too: ENOENT or 0 both count).
        ml.check(d["close_drops"] >= pushable, f"one copy, first touch: {d['close_drops']} drops")
        d = a_pass(mp, expected, "one copy, second pass")
        ml.check(d["pushes"] == pushable, f"one copy: {d['pushes']} pushes of {pushable} files")
        ml.check(d["reads"] <= 10, f"one copy: {d['reads']} READs though every file was pushed")
        ml.check(d["backing"] == 0 and d["close_drops"] >= pushable, f"one copy, second pass: {d}")
        st = status(mp)["prefetch"]
        ml.check(st["close_drop_errors"] == 0, f"one copy: {st['close_drop_errors']} failed drops")

        # Open elsewhere: a close that is not the last keeps the pages.
        name = next(n for n in sorted(expected) if len(expected[n]) > 0)
        path = os.path.join(mp, name)
        held = os.open(path, os.O_RDONLY)
        try:
            before = counts(status(mp))
            with open(path, "rb") as f:
                ml.check(f.read() == expected[name], f"{name}: bytes differ")
            # Its RELEASE is in when only `held` and the status document
            # being read are open.
            ml.check(ml.wait_until(lambda: open_now(status(mp)) <= 2, 20), "no RELEASE")
            d = delta(before, counts(status(mp)))
            ml.check(d["close_drops"] == 0, f"a close while {name} is open elsewhere dropped it")
        finally:
            os.close(held)
        ml.check(ml.wait_until(lambda: delta(before, counts(status(mp)))["close_drops"] == 1, 20),
                 f"the last close of {name} did not drop it: {delta(before, counts(status(mp)))}")


def case_one_copy_no_push(data, mp, expected):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--no-open-push", "--one-copy",
                    "always"):
        a_pass(mp, expected, "one copy, no push, first touch")
        d = a_pass(mp, expected, "one copy, no push, second pass")
        # No drop_caches here: the READs show the kernel dropped the pages.
        ml.check(d["reads"] >= FILES - 1, f"one copy, no push: {d['reads']} READs for {FILES} "
                 "files the kernel should not have kept")
        ml.check(d["backing"] == 0, f"one copy, no push: {d['backing']} backing reads")


def test():
    # On disk, not tmpfs: the backing files' own pages must be droppable too.
    with tempfile.TemporaryDirectory(prefix="clairfs-open-push.", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        expected = make_dataset(data)
        mps = [os.path.join(tmp, m) for m in ("mnt-p", "mnt-n", "mnt-c", "mnt-cn")]
        for mp in mps:
            os.makedirs(mp)
        ml.run_cases(("open push", lambda: case_open_push(data, mps[0], expected)),
                     ("no open push", lambda: case_no_open_push(data, mps[1], expected)),
                     ("one copy", lambda: case_one_copy(data, mps[2], expected)),
                     ("one copy no push", lambda: case_one_copy_no_push(data, mps[3], expected)))


if __name__ == "__main__":
    ml.main(test)
