#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mount must show the backing tree as it was at mount time: the same
names, types, modes, owners, sizes, block sizes and counts, mtimes, bytes and
symlink targets, minus
the entries clairfs hides on purpose (escaping symlinks, FIFOs, sockets,
device nodes). Absolute symlinks into BACKING are shown rewritten as
relative ones, so for them st_size is the new target's length and the check
is that they resolve to the same place inside the mount.

Checked twice: BACKING and MOUNTPOINT apart, then BACKING == MOUNTPOINT
(clairfs opens the directory before mounting over it)."""
import os
import stat

from mountlib import (make_dirs, check, file_digest, log, main, make_tree, mounted, raw_readdir,
                      run_cases, temp_dir)


def kind(mode):
    return "dir" if stat.S_ISDIR(mode) else "lnk" if stat.S_ISLNK(mode) else "reg"


def resolved_rel(path, root):
    """Where a symlink leads, relative to root (realpath is lexical past a
    dangling component, so dangling links resolve too)."""
    return os.path.relpath(os.path.realpath(path), os.path.realpath(root))


def snapshot(root, hidden):
    """{relative path: record} for everything clairfs should show, taken from
    the backing tree before it is mounted (it may be mounted over)."""
    hidden = {os.path.join(root, h) for h in hidden}
    snap = {}
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        names = [n for n in dirs + files if os.path.join(dirpath, n) not in hidden]
        for h in hidden:
            if os.path.dirname(h) == dirpath:
                check(os.path.lexists(h), f"generator did not create {h}")
        for name in names + ["."]:
            path = os.path.normpath(os.path.join(dirpath, name))
            st = os.lstat(path)
            rec = {"kind": kind(st.st_mode), "mode": st.st_mode, "uid": st.st_uid,
                   "gid": st.st_gid, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                   "blksize": st.st_blksize, "blocks": st.st_blocks}
            if stat.S_ISREG(st.st_mode):
                rec["sha256"] = file_digest(path)
            elif stat.S_ISLNK(st.st_mode):
                rec["target"] = os.readlink(path)
                rec["resolves_to"] = resolved_rel(path, root)
            elif stat.S_ISDIR(st.st_mode) and name == ".":
                rec["names"] = sorted(os.fsencode(n) for n in names)
                rec["subdirs"] = sum(1 for n in names if n in dirs and
                                     not os.path.islink(os.path.join(dirpath, n)))
            # A directory's own "." record (with its listing) replaces the
            # one its parent stored.
            snap[os.path.normpath(os.path.join(rel_dir, name))] = rec
    return snap


def compare(snap, hidden, mp):
    failures = []
    fail = failures.append
    inodes = {}
    for rel, want in sorted(snap.items()):
        path = os.path.normpath(os.path.join(mp, rel))
        try:
            st = os.lstat(path)
        except OSError as e:
            fail(f"{rel!r}: lstat on the mount failed: {e}")
            continue
        # st_blksize and st_blocks too: a buffered reader's peek() and first
        # read() take st_blksize bytes, and du reads st_blocks.
        got = {"kind": kind(st.st_mode), "mode": st.st_mode, "uid": st.st_uid,
               "gid": st.st_gid, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
               "blksize": st.st_blksize, "blocks": st.st_blocks}
        if want["kind"] == "lnk" and want["target"].startswith("/"):
            # A rewritten target has its own length; st_size must match it.
            want = dict(want, size=len(os.fsencode(os.readlink(path))))
        for key in got:
            if got[key] != want[key]:
                fail(f"{rel!r}: {key} is {got[key]!r} on the mount, {want[key]!r} on backing")
        if st.st_atime_ns != st.st_mtime_ns or st.st_ctime_ns != st.st_mtime_ns:
            fail(f"{rel!r}: atime/ctime {st.st_atime_ns}/{st.st_ctime_ns} != mtime")
        if st.st_ino in inodes:
            fail(f"{rel!r}: st_ino {st.st_ino} also used by {inodes[st.st_ino]!r}")
        inodes[st.st_ino] = rel
        if want["kind"] == "reg":
            if st.st_nlink != 1:
                fail(f"{rel!r}: file nlink {st.st_nlink}, expected 1")
            try:
                if file_digest(path) != want["sha256"]:
                    fail(f"{rel!r}: file bytes differ from the backing file")
            except OSError as e:
                fail(f"{rel!r}: read failed: {e}")
        elif want["kind"] == "lnk":
            target = os.readlink(path)
            if not want["target"].startswith("/"):
                if target != want["target"]:
                    fail(f"{rel!r}: readlink {target!r}, backing has {want['target']!r}")
            elif target.startswith("/"):
                fail(f"{rel!r}: absolute target {target!r} was not made relative")
            if resolved_rel(path, mp) != want["resolves_to"]:
                fail(f"{rel!r}: resolves to {resolved_rel(path, mp)!r} inside the mount, "
                     f"expected {want['resolves_to']!r}")
        if want["kind"] == "dir" and "names" in want:
            failures += compare_listing(rel, path, want, snap)
    for h in hidden:
        if os.path.lexists(os.path.join(mp, h)):
            fail(f"{h!r} should be hidden but lstat finds it on the mount")
    return failures


def compare_listing(rel, path, want, snap):
    """readdir: ".", "..", then byte-sorted names with the right d_type;
    nlink 2 + subdirectories."""
    failures = []
    fail = failures.append
    st = os.lstat(path)
    if st.st_nlink != 2 + want["subdirs"]:
        fail(f"{rel!r}: dir nlink {st.st_nlink}, expected {2 + want['subdirs']}")
    entries = raw_readdir(path)
    names = [e[0] for e in entries]
    if names[:2] != [b".", b".."]:
        fail(f"{rel!r}: listing starts with {names[:2]}, expected '.' and '..'")
    rest = names[2:]
    if rest != sorted(rest):
        fail(f"{rel!r}: readdir order is not byte-sorted: {rest[:10]}...")
    if sorted(rest) != want["names"]:
        missing = set(want["names"]) - set(rest)
        extra = set(rest) - set(want["names"])
        fail(f"{rel!r}: names differ; missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}")
    if os.listdir(os.fsencode(path)) != sorted(os.listdir(os.fsencode(path))):
        fail(f"{rel!r}: os.listdir order is not byte-sorted")
    for name, d_ino, d_type in entries[2:]:
        child = os.path.normpath(os.path.join(rel, os.fsdecode(name)))
        if child in snap and d_type != snap[child]["kind"]:
            fail(f"{child!r}: d_type {d_type}, expected {snap[child]['kind']}")
    for entry in os.scandir(path):
        child = os.path.normpath(os.path.join(rel, entry.name))
        k = snap.get(child, {}).get("kind")
        got = ("dir" if entry.is_dir(follow_symlinks=False) else
               "lnk" if entry.is_symlink() else "reg" if entry.is_file(follow_symlinks=False)
               else "other")
        if k and got != k:
            fail(f"{child!r}: scandir says {got}, expected {k}")
        if k and entry.inode() != os.lstat(entry.path).st_ino:
            fail(f"{child!r}: d_ino {entry.inode()} != st_ino {os.lstat(entry.path).st_ino}")
    return failures


def check_warnings(stderr):
    check("hid 3 symlinks that lead outside" in stderr,
          f"expected a 'hid 3 symlinks that lead outside' warning, stderr was:\n{stderr}")
    check("hid 3 fifos" in stderr, f"expected a 'hid 3 fifos...' warning, stderr:\n{stderr}")


def report(failures, label):
    for f in failures[:40]:
        log(f"  {label}: {f}")
    check(not failures, f"{label}: {len(failures)} mismatches")


def metadata_from_memory(tmp):
    """After the scan, names, attributes and listings come from clairfs's
    index: moving everything out of BACKING and adding a file there must
    change nothing that lookup, stat or readdir show through the mount."""
    backing, mp = os.path.join(tmp, "frozen"), os.path.join(tmp, "frozen-mnt")
    away = os.path.join(tmp, "moved-away")
    os.makedirs(os.path.join(backing, "cls", "sub"))
    os.makedirs(mp)
    for rel, size in (("cls/a.jpg", 10), ("cls/sub/b.jpg", 5000), ("top.txt", 3)):
        with open(os.path.join(backing, rel), "wb") as f:
            f.write(b"x" * size)

    def view(root):
        out = {}
        for d, dirs, files in os.walk(root):
            for name in sorted(dirs + files):
                st = os.lstat(os.path.join(d, name))
                out[os.path.relpath(os.path.join(d, name), root)] = (
                    st.st_mode, st.st_size, st.st_mtime_ns)
        return out

    before = view(backing)
    with mounted(backing, mp):
        check(view(mp) == before, "the mount does not match BACKING at mount time")
        os.rename(os.path.join(backing, "cls"), away)
        os.remove(os.path.join(backing, "top.txt"))
        with open(os.path.join(backing, "new.jpg"), "wb") as f:
            f.write(b"new")
        try:
            check(view(mp) == before, "stat/readdir through the mount changed with BACKING")
            check(not os.path.exists(os.path.join(mp, "new.jpg")), "a file added later appeared")
        finally:
            os.rename(away, os.path.join(backing, "cls"))
    log("metadata served from memory after the scan: ok")


def peek_decides_the_same(tmp):
    """A whole-tree filter of the keras-io example's kind (delete a "JPEG"
    whose first peek(10) lacks b"JFIF") keeps the same files through the
    mount as on BACKING: Python's buffered peek() returns st_blksize bytes
    at most, so the marker at byte 6,448 is seen only if the block size
    is over that on both."""
    backing, mp = os.path.join(tmp, "peek"), os.path.join(tmp, "peek-mnt")
    os.makedirs(os.path.join(backing, "Cat"))
    os.makedirs(mp)
    for i, at in enumerate((6, 600, 4090, 6448, 70000, 300000)):
        body = bytearray(b"\xff\xd8" + bytes(at + 400000))
        body[at:at + 4] = b"JFIF"
        with open(os.path.join(backing, "Cat", f"{i}.jpg"), "wb") as f:
            f.write(body)

    def kept(root):
        out = {}
        for name in sorted(os.listdir(os.path.join(root, "Cat"))):
            with open(os.path.join(root, "Cat", name), "rb") as f:
                head = f.peek(10)
                out[name] = (len(head), b"JFIF" in head)
        return out

    want = kept(backing)
    with mounted(backing, mp):
        got = kept(mp)
    check(got == want, f"peek() through the mount {got}, on BACKING {want}")
    log(f"peek(10) and the filter's decisions equal BACKING's ({want})")


def test():
    with temp_dir() as tmp:
        backing, mp = make_dirs(tmp, "backing", "mnt")
        hidden = make_tree(backing, seed=7)
        snap = snapshot(backing, hidden)
        log(f"backing tree: {len(snap)} visible entries, {len(hidden)} hidden")

        def one_view(mp, label):
            with mounted(backing, mp) as m:
                check_warnings(m.stderr)
                report(compare(snap, hidden, mp), label)
            log(f"{label}: ok")

        # Overlay: the mount hides the backing path itself, so that view must
        # come from the descriptor clairfs opened before mounting.
        run_cases(("separate mountpoint", lambda: one_view(mp, "separate mountpoint")),
                  ("BACKING == MOUNTPOINT", lambda: one_view(backing, "BACKING == MOUNTPOINT")),
                  ("metadata from memory", lambda: metadata_from_memory(tmp)),
                  ("peek", lambda: peek_decides_the_same(tmp)))


if __name__ == "__main__":
    main(test)
