#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Opens followed through fanotify (--opens fanotify) through a real mount.
The kernel opens and closes the files itself (the first OPEN is answered
ENOSYS, and the first FLUSH too), and the daemon learns of each open and
close from fanotify afterwards, in batches.

- unregistered: every byte equals the backing file's, twice over; the
  daemon saw one OPEN and at most one FLUSH in all, no RELEASE, and
  fanotify told it of every open, also of one made through a bind mount
  of the mount;
- the control files still work with no OPEN of ours: a registration
  written after the switch is taken, and each read of the status is fresh;
- registered (RandomSampler, read in `clairfs order`'s order for 3
  epochs, --one-copy always): every byte equals the backing file's, every
  open was predicted (match rate 1), the files due were pushed into the
  page cache ahead of their opens, and their pages left it at their close
  (close_drops);
- writes: an O_TRUNC open fails with EROFS; an O_WRONLY open is made (no
  OPEN refuses it) but every write through it fails with EROFS; a shared
  writable mapping's msync fails with EROFS, after which the file's
  cached pages are dropped, and once the writer closed it another reader
  sees the backing bytes; the
  file's size and bytes stay the backing file's;
- refusals: as nobody, --opens fanotify fails the mount in one line that
  names CAP_SYS_ADMIN, with nothing mounted; --opens auto mounts and
  follows OPENs, and status says why; --kernel-opens with --opens
  fanotify is a usage error.

Needs root (fanotify, mount --bind) and /dev/fuse (exit 77 without FUSE)."""
import errno
import json
import mmap
import os
import tempfile

import mountlib as ml

FILES = 160
JOB = {"sampler": "random", "generator": "explicit", "seed": 3, "batch_size": 16,
       "num_workers": 0, "epochs": 3, "layout": "imagefolder"}

status = ml.status


def make_dataset(root):
    # An empty file among them: nothing to push, nothing to read.
    return ml.random_dataset(root, FILES, 23, 200_000, empty=(5,))


def job_order(data):
    r = ml.clairfs("order", "--root", data, "--layout", "imagefolder", "--paths",
                   "--sampler", "random", "--generator", "explicit",
                   "--seed", str(JOB["seed"]), "--batch-size", str(JOB["batch_size"]),
                   "--epochs", str(JOB["epochs"]))
    ml.check(r.returncode == 0, f"clairfs order: {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def read_in(mp, rels, expected, what):
    for rel in rels:
        with open(os.path.join(mp, rel), "rb") as f:
            got = f.read()
        ml.check(got == expected[rel], f"{what}: {rel} differs through the mount "
                                       f"({len(got)} bytes, {len(expected[rel])} expected)")


def seen(mp, opens, what):
    """Events come in batches, a few milliseconds after the fact."""
    ok = ml.wait_until(lambda: status(mp)["opens"]["opens"] >= opens, 20)
    st = status(mp)
    ml.check(ok, f"{what}: fanotify told of {st['opens']['opens']} opens, {opens} made")
    return st


def case_unregistered(data, mp, expected):
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--opens", "fanotify"):
        ml.check(ml.wait_until(lambda: status(mp)["opens"]["source"] == "fanotify", 20),
                 f"not watching: {status(mp)['opens']}")
        # The status reads so far were OPENs of the status file.
        before = status(mp)["requests"]
        ml.read_expected(mp, expected, "first pass")
        ml.read_expected(mp, expected, "second pass")
        st = seen(mp, 2 * FILES, "two passes")
        req = {k: st["requests"][k] - before[k] for k in ("open", "release", "flush")}
        # The first OPEN, answered ENOSYS, the first FLUSH likewise, and the
        # RELEASE of the last status read before them.
        ml.check(req["open"] <= 1 and req["release"] <= 1 and req["flush"] <= 1,
                 f"requests per open remain: {req} over {2 * FILES} opens")
        ml.check(st["opens"]["overflows"] == 0 and st["opens"]["errors"] == 0,
                 f"opens: {st['opens']}")
        # A bind mount of the mount opens the same files.
        other = tempfile.mkdtemp(prefix="clairfs-bind-")
        try:
            r = ml.run(["mount", "--bind", mp, other])
            ml.check(r.returncode == 0, f"mount --bind: {r.stderr}")
            try:
                before = st["opens"]["opens"]
                rel = sorted(expected)[0]
                with open(os.path.join(other, rel), "rb") as f:
                    ml.check(f.read() == expected[rel], "through the bind mount: bytes differ")
                seen(mp, before + 1, "through a bind mount")
            finally:
                # The watcher may still be closing the event's descriptor.
                ml.check(ml.wait_until(lambda: ml.run(["umount", other]).returncode == 0, 10),
                         "cannot unmount the bind mount")
        finally:
            os.rmdir(other)
        # Control files with no OPEN of ours: writes are taken whole, and
        # each open of the status reads it afresh.
        ml.register(mp, **JOB)
        with open(os.path.join(mp, ".clairfs", "control")) as f:
            got = json.load(f)
        ml.check(got.get("seed") == JOB["seed"], f"the registration was not taken: {got}")
        a = status(mp)["requests"]["lookup"]
        b = status(mp)["requests"]["lookup"]
        ml.check(b > a, f"the status did not change between two reads ({a}, {b} lookups)")
        r = ml.clairfs("status", mp)
        ml.check(r.returncode == 0 and "fanotify, " in r.stdout,
                 f"clairfs status does not say fanotify:\n{r.stdout}")
        ml.log(f"unregistered: {FILES} files twice, requests {req}, opens {st['opens']}")


def case_registered(data, mp, expected):
    epochs = job_order(data)
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--opens", "fanotify",
                    "--one-copy", "always"):
        ml.check(ml.wait_until(lambda: status(mp)["opens"]["source"] == "fanotify", 20),
                 f"not watching: {status(mp)['opens']}")
        ml.register(mp, **JOB)
        made = 0
        for e, rels in enumerate(epochs):
            read_in(mp, rels, expected, f"epoch {e}")
            made += len(rels)
            st = seen(mp, made, f"epoch {e}")
            ml.log(f"epoch {e}: mode {st['mode']}, match {st['match_rate']}, "
                   f"pushed {st['prefetch']['pushed']}, close drops "
                   f"{st['prefetch']['close_drops']}, reads {st['requests']['read']}")
        # Closes come with (or just after) the opens.
        ml.check(ml.wait_until(lambda: status(mp)["opens"]["closes"] >= made, 20),
                 f"closes: {status(mp)['opens']}")
        st = status(mp)
        ml.check(st["mode"] == "clairvoyant" and st["match_rate"] == 1.0,
                 f"mode {st['mode']}, match rate {st['match_rate']}")
        p = st["prefetch"]
        ml.check(p["pushed"] > 0, f"nothing pushed ahead: {p}")
        ml.check(p["close_drops"] > 0 and p["close_drop_errors"] == 0,
                 f"one copy dropped nothing at the closes: {p}")
        ml.check(st["backing"]["files"] <= FILES, f"backing reads: {st['backing']}")


def case_writes(data, mp, expected):
    """No OPEN of ours refuses a write open: the kernel lets it be made, and
    the daemon refuses every write and truncation (EROFS); no byte
    changes, also not in the page cache."""
    rel = sorted(k for k in expected if expected[k])[0]
    path = os.path.join(mp, rel)
    with ml.mounted(data, mp, "--mem", "64M", "--no-detect", "--opens", "fanotify"):
        ml.check(ml.wait_until(lambda: status(mp)["opens"]["source"] == "fanotify", 20),
                 f"not watching: {status(mp)['opens']}")
        ml.read_expected(mp, expected, "before the writes")
        for flags in (os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_TRUNC):
            ml.expect_errno(errno.EROFS, os.open, path, flags, what=f"open flags {flags:#o}")
        fd = os.open(path, os.O_WRONLY)
        try:
            ml.expect_errno(errno.EROFS, os.write, fd, b"x" * 4096, what="write()")
            ml.expect_errno(errno.EROFS, os.pwrite, fd, b"y" * 10, 100, what="pwrite()")
        finally:
            os.close(fd)
        # A shared writable mapping stores into the cached pages; its
        # writeback is refused, and the watcher then drops the pages.
        drops = status(mp)["opens"]["write_drops"]
        fd = os.open(path, os.O_RDWR)
        try:
            m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                m[0:8] = b"CLOBBER!"
                ml.expect_errno(errno.EROFS, m.flush, what="msync() of a shared mapping")
                ml.check(ml.wait_until(lambda: status(mp)["opens"]["write_drops"] > drops, 10),
                         f"the refused writeback dropped no pages: {status(mp)['opens']}")
            finally:
                m.close()
        finally:
            os.close(fd)
        # Once the writer is gone (its close drops the pages again: a drop
        # racing the refused writeback may find a page still held by it),
        # every reader sees the backing bytes.
        def backing_bytes():
            with open(path, "rb") as f:
                return f.read(8) == expected[rel][:8]
        ml.check(ml.wait_until(backing_bytes, 10),
                 f"another reader still sees the mapping's stores: {status(mp)['opens']}")
        ml.check(os.stat(path).st_size == len(expected[rel]),
                 f"{rel}: size {os.stat(path).st_size} after the refused writes")
        ml.read_expected(mp, expected, "after the refused writes")
        ml.log(f"writes: O_TRUNC opens and writes refused with EROFS, {rel} unchanged")


def case_refusals(data, mp, expected):
    r = ml.clairfs("mount", data, mp, "--kernel-opens", "--opens", "fanotify")
    ml.check(r.returncode == 2 and "--kernel-opens" in r.stderr,
             f"--kernel-opens with --opens fanotify: exit {r.returncode}, {r.stderr!r}")
    with ml.fuse_open_to_users():
        as_nobody(data, mp, expected)


def as_nobody(data, mp, expected):
    """A mount without allow_other is its user's alone: read as nobody."""
    r = ml.clairfs("mount", data, mp, "--opens", "fanotify", prefix=ml.AS_NOBODY)
    lines = r.stderr.strip().splitlines()
    ml.check(r.returncode == 1 and len(lines) == 1 and "CAP_SYS_ADMIN" in lines[0],
             f"--opens fanotify as nobody: exit {r.returncode}, {r.stderr!r}")
    ml.check(not ml.is_mounted(mp), "--opens fanotify as nobody left a mount")
    r = ml.clairfs("mount", data, mp, "--opens", "auto", "--no-detect", prefix=ml.AS_NOBODY)
    ml.check(r.returncode == 0, f"--opens auto as nobody: exit {r.returncode}, {r.stderr!r}")
    try:
        ml.check_read_as(ml.AS_NOBODY, mp, expected, "--opens auto as nobody")
        r = ml.clairfs("status", mp, "--json", prefix=ml.AS_NOBODY)
        ml.check(r.returncode == 0, f"status as nobody: {r.stderr!r}")
        st = json.loads(r.stdout)
        ml.check(st["opens"]["source"] == "fuse" and "CAP_SYS_ADMIN" in st["opens"]["why_not"],
                 f"--opens auto as nobody: {st['opens']}")
        ml.check(st["requests"]["open"] >= FILES, f"OPENs were not followed: {st['requests']}")
        r = ml.clairfs("status", mp, prefix=ml.AS_NOBODY)
        ml.check("an OPEN round trip each (fanotify needs CAP_SYS_ADMIN" in r.stdout,
                 f"clairfs status as nobody does not say why not fanotify:\n{r.stdout}")
    finally:
        ml.unmount_as(ml.AS_NOBODY, mp)


def main():
    ml.skip_unless_fuse()
    with tempfile.TemporaryDirectory(prefix="clairfs-open-watch-") as tmp:
        os.chmod(tmp, 0o755)  # nobody must reach the data and the mount point
        data, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt")
        os.makedirs(data)
        os.makedirs(mp)
        expected = make_dataset(data)
        for root, dirs, files in os.walk(data):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        os.chown(mp, 65534, 65534)
        ml.run_cases(("unregistered", lambda: case_unregistered(data, mp, expected)),
                     ("registered", lambda: case_registered(data, mp, expected)),
                     ("writes", lambda: case_writes(data, mp, expected)),
                     ("refusals", lambda: case_refusals(data, mp, expected)))


if __name__ == "__main__":
    ml.main(main)
