#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The SSD tier's files served by passthrough (issue 44): each entry is a
file of its own, and once the daemon has read it back intact in this
mount, the kernel reads it itself at its next open.

With --mem 2M (so the RAM tier holds a few of the 120 files) and the SSD
tier, where passthrough is on (status passthrough.state "on"):
- a first pass stores every file in the SSD tier; a second (the kernel's
  pages dropped) reads them back through the daemon, which verifies them
  through the page cache; a third, the pages still resident, is passed
  through from the entries (ssd.kernel.opens, no READ for them), every
  byte the backing file's, also at random offsets;
- once the kernel's pages are dropped, an entry is no longer handed over
  (its checked bytes are gone): the next open is the daemon's
  (ssd.kernel.uncached_opens), which reads and checks it again, and the
  open after that is passed through;
- a file with a live open the daemon serves (its entry unverified) opens
  again without EIO, served the same way, since the kernel refuses to mix
  the two modes on one inode; once both close, it is passed through;
- two concurrent passthrough opens share one backing id, kept after the
  last close (tier_ids_kept);
- a remount reuses the entries and verifies each before handing it over.
--ssd-check once: entries written in this mount are the kernel's without
a read-back, and stay its own after drop_caches (no uncached opens); an
entry file written to by hand is not handed over again: the daemon reads
it, finds the checksum wrong, drops it and serves the backing file's bytes.
--no-passthrough (and a build without it): the same bytes through READs,
ssd.kernel.on false. Exit 77 only without FUSE."""
import os
import random

import mountlib as ml

FILES = 120


def reads(st):
    return st["requests"]["read"]


def stored_all(mp):
    st = ml.status(mp)["ssd"]
    return st["files"] >= FILES and st["pending_bytes"] == 0


def read_ranges(mp, expected, rng):
    for rel in rng.sample(sorted(expected), 10):
        data = expected[rel]
        with open(os.path.join(mp, rel), "rb", buffering=0) as f:
            for _ in range(20):
                off = rng.choice([0, 4095, 4096, len(data) - 1, len(data), len(data) + 7,
                                  rng.randrange(max(1, len(data)))])
                size = rng.choice([1, 100, 4096, 70_000])
                ml.check(os.pread(f.fileno(), size, off) == data[off:off + size],
                         f"{rel}: pread({size}, {off}) differs")


def three_passes(mp, expected):
    """Stored, verified, passed through; returns the third pass's status delta."""
    ml.read_expected(mp, expected, "first pass")
    ml.check(ml.wait_until(lambda: stored_all(mp), 60), f"not stored: {ml.status(mp)['ssd']}")
    ml.drop_caches("3")
    ml.read_expected(mp, expected, "second pass")
    # No drop here: the kernel hands over only entries whose checked
    # pages are all still in the page cache.
    before = ml.status(mp)
    ml.read_expected(mp, expected, "third pass")
    after = ml.status(mp)
    return before, after


def case_on(data, cache, mp, expected):
    with ml.mounted(data, mp, "--mem", "2M", "--no-detect", "--cache-dir", cache):
        st = ml.status(mp)
        pt, kernel = st["passthrough"], st["ssd"]["kernel"]
        ml.log(f"passthrough {pt}, ssd.kernel {kernel}")
        if pt["state"] != "on":
            ml.check(not kernel["on"], f"passthrough off, yet ssd.kernel on: {kernel}")
            ml.read_expected(mp, expected, "passthrough off")
            return
        ml.check(kernel["on"], f"passthrough on, ssd.kernel off: {kernel}")
        before, after = three_passes(mp, expected)
        k0, k1 = before["ssd"]["kernel"], after["ssd"]["kernel"]
        handed = k1["opens"] - k0["opens"]
        made = reads(after) - reads(before)
        ml.log(f"third pass: {handed} opens passed through, {made} READs; ssd {after['ssd']}; "
               f"passthrough {after['passthrough']}")
        # Every file verified by the second pass (the others the RAM tier
        # served from its own copy, pushed at the open).
        ml.check(handed >= max(before["ssd"]["verified"] - 2, FILES // 4),
                 f"only {handed} of {FILES} opens passed through: {k1}, ssd {before['ssd']}")
        # Status reads make a READ or two each; the files none.
        ml.check(made <= FILES - handed + 6, f"{made} READs with {handed} passed through")
        ml.check(after["ssd"]["verified"] >= handed, f"handed more than verified: {after['ssd']}")
        read_ranges(mp, expected, random.Random(3))
        ml.check(after["passthrough"]["tier_ids_kept"] >= handed // 2,
                 f"backing ids not kept: {after['passthrough']}")

        evicted(mp, expected)

        # Two opens at once of a passed-through file share its id.
        rel = sorted(expected)[7]
        a, b = (open(os.path.join(mp, rel), "rb") for _ in range(2))
        try:
            ml.check(a.read() == expected[rel] and b.read() == expected[rel], f"{rel}: differs")
        finally:
            a.close()
            b.close()


def evicted(mp, expected):
    """Pages dropped: each entry's open finds its checked pages gone, checks
    the entry again there (through the page cache) and hands it to the
    kernel all the same; the next open finds them in place. Over every
    file: the RAM tier holds some itself (never handed over), so only the
    verified ones count."""
    verified = ml.status(mp)["ssd"]["verified"]
    ml.drop_caches("3")
    k0 = ml.status(mp)["ssd"]["kernel"]
    ml.read_expected(mp, expected, "after drop_caches")
    k1 = ml.status(mp)["ssd"]["kernel"]
    ml.read_expected(mp, expected, "after the re-check at open")
    k2 = ml.status(mp)["ssd"]["kernel"]
    uncached = k1["uncached_opens"] - k0["uncached_opens"]
    checked = k1["warmed_at_open"] - k0["warmed_at_open"]
    handed_evicted, handed_again = k1["opens"] - k0["opens"], k2["opens"] - k1["opens"]
    ml.log(f"evicted: {verified} verified; {uncached} opens found the pages gone, "
           f"{checked} checked at the open, {handed_evicted} passed through; "
           f"then {handed_again} passed through, {k2['uncached_opens'] - k1['uncached_opens']} "
           f"without pages")
    ml.check(uncached >= verified - 2, f"evicted entries handed over unchecked: {k0} -> {k1}")
    ml.check(checked >= uncached, f"{uncached} opens without pages, {checked} checked: {k1}")
    ml.check(handed_evicted >= uncached - 2, f"re-checked entries not handed over: {k0} -> {k1}")
    ml.check(handed_again >= uncached - 2, f"entries not handed over again: {k1} -> {k2}")
    ml.check(k2["uncached_opens"] - k1["uncached_opens"] <= 2,
             f"the re-checked pages did not stay: {k1} -> {k2}")


def case_mixed(data, cache, mp, expected):
    """A fresh mount over the stored entries: none verified yet, so the
    first open of a file is the daemon's; a second open while it is live
    must not be refused by the kernel (EIO) for mixing modes."""
    with ml.mounted(data, mp, "--mem", "2M", "--no-detect", "--cache-dir", cache):
        st = ml.status(mp)
        if st["passthrough"]["state"] != "on":
            return
        ml.check(st["ssd"]["reused"] >= FILES - 5, f"entries not reused: {st['ssd']}")
        ml.check(st["ssd"]["verified"] == 0, f"verified before any read: {st['ssd']}")
        rels = sorted(expected)[:20]
        for rel in rels:
            with open(os.path.join(mp, rel), "rb") as first:
                got = first.read()  # READs: the daemon reads the entry, verifying it
                with open(os.path.join(mp, rel), "rb") as second:
                    ml.check(second.read() == expected[rel], f"{rel}: second open differs")
            ml.check(got == expected[rel], f"{rel}: first open differs")
        mid = ml.status(mp)
        ml.read_expected(mp, {r: expected[r] for r in rels}, "after both closed")
        after = ml.status(mp)
        handed = after["ssd"]["kernel"]["opens"] - mid["ssd"]["kernel"]["opens"]
        ml.log(f"mixed: {handed} of {len(rels)} passed through once closed; {after['ssd']['kernel']}")
        ml.check(handed >= len(rels) - 4, f"verified files not passed through: {after['ssd']}")


def entry_files(cache):
    out = []
    for d in os.listdir(cache):
        if d.endswith(".cache.d"):
            out += [os.path.join(cache, d, n) for n in os.listdir(os.path.join(cache, d))]
    return out


def case_once(data, cache, mp, expected):
    with ml.mounted(data, mp, "--mem", "2M", "--no-detect", "--cache-dir", cache,
                    "--ssd-check", "once"):
        st = ml.status(mp)
        if st["passthrough"]["state"] != "on":
            ml.read_expected(mp, expected, "passthrough off")
            return
        ml.check(st["ssd"]["kernel"]["check"] == "once", f"ssd.kernel {st['ssd']['kernel']}")
        ml.read_expected(mp, expected, "first pass")
        ml.check(ml.wait_until(lambda: stored_all(mp), 60), f"not stored: {ml.status(mp)['ssd']}")
        verified = ml.status(mp)["ssd"]["verified"]
        # Written here: checked as they went to the disk, no read-back.
        ml.check(verified >= FILES // 4, f"only {verified} written entries verified")
        for what in ("after the writes", "after drop_caches again"):
            ml.drop_caches("3")
            k0 = ml.status(mp)["ssd"]["kernel"]
            ml.read_expected(mp, expected, what)
            k1 = ml.status(mp)["ssd"]["kernel"]
            handed = k1["opens"] - k0["opens"]
            uncached = k1["uncached_opens"] - k0["uncached_opens"]
            ml.log(f"once, {what}: {handed} passed through, {uncached} uncached, {k1}")
            ml.check(handed >= verified - 2, f"{what}: {handed} of {verified} passed through")
            ml.check(uncached == 0, f"{what}: {uncached} opens refused for lack of pages")
        # Entry files written to by hand, their size kept: never served.
        tampered = [p for p in entry_files(cache) if os.path.getsize(p) >= 8192][:20]
        ml.check(len(tampered) >= 10, f"entry files: {tampered}")
        for p in tampered:
            fd = os.open(p, os.O_WRONLY)
            try:
                os.pwrite(fd, b"x" * 4096, 4096)
            finally:
                os.close(fd)
        ml.drop_caches("3")
        before = ml.status(mp)
        ml.read_expected(mp, expected, "entries written to by hand")
        after = ml.status(mp)
        errors = after["ssd"]["errors"] - before["ssd"]["errors"]
        ml.log(f"once, tampered: {len(tampered)} files, {errors} ssd errors, ssd {after['ssd']}")
        ml.check(errors >= 1, f"no tampered entry was caught: {after['ssd']}")
        ml.check(after["ssd"]["enabled"], f"the tier turned off: {after['ssd']}")


def case_off(data, cache, mp, expected):
    with ml.mounted(data, mp, "--mem", "2M", "--no-detect", "--cache-dir", cache,
                    "--no-passthrough"):
        st = ml.status(mp)
        ml.check(not st["ssd"]["kernel"]["on"], f"--no-passthrough: {st['ssd']['kernel']}")
        before = reads(st)
        ml.drop_caches("3")
        ml.read_expected(mp, expected, "--no-passthrough")
        after = ml.status(mp)
        ml.check(reads(after) - before >= FILES // 2, "--no-passthrough: no READs")
        ml.check(after["ssd"]["kernel"]["opens"] == 0, "--no-passthrough: passed through")


def test():
    with ml.temp_dir() as tmp:
        data, cache, mp, _ = ml.make_dirs(tmp, "data", "cache", "mnt", "cache-once")
        expected = ml.random_dataset(data, FILES, 44, 60_000)
        ml.run_cases(("on", lambda: case_on(data, cache, mp, expected)),
                     ("mixed", lambda: case_mixed(data, cache, mp, expected)),
                     ("off", lambda: case_off(data, cache, mp, expected)),
                     ("once", lambda: case_once(data, os.path.join(tmp, "cache-once"), mp,
                                                expected)))


if __name__ == "__main__":
    ml.main(test)
