#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every write-type operation on the dataset fails with EROFS, and the
backing tree is bit-for-bit unchanged afterwards.

Run twice: first as mounted (the mount is not read-only in the kernel, so
that writes to .clairfs/control reach the daemon: every request reaches the
daemon, whose own handlers must answer EROFS), then after
`mount -i -o remount,ro`, where the kernel refuses them itself."""
import errno
import os

from mountlib import (check, log, main, make_tree, mount_flags, mounted, run, run_cases,
                      temp_dir, tree_checksum)


def write_ops(mp):
    """(description, callable) for every write-type operation."""
    f = os.path.join(mp, "files", "size-4097")
    empty = os.path.join(mp, "files", "size-0")
    d = os.path.join(mp, "empty")
    full = os.path.join(mp, "odd")
    link = os.path.join(mp, "links", "rel_file")
    new = os.path.join(mp, "new-name")

    def open_close(path, flags, mode=0o644):
        os.close(os.open(path, flags, mode))

    ops = [
        ("open O_WRONLY", lambda: open_close(f, os.O_WRONLY)),
        ("open O_RDWR", lambda: open_close(f, os.O_RDWR)),
        ("open O_WRONLY|O_APPEND", lambda: open_close(f, os.O_WRONLY | os.O_APPEND)),
        ("open O_RDWR|O_APPEND", lambda: open_close(f, os.O_RDWR | os.O_APPEND)),
        ("open O_WRONLY|O_TRUNC", lambda: open_close(f, os.O_WRONLY | os.O_TRUNC)),
        # Truncating needs write access to the mount even with O_RDONLY.
        ("open O_RDONLY|O_TRUNC", lambda: open_close(f, os.O_RDONLY | os.O_TRUNC)),
        ("open O_RDONLY|O_TRUNC on 0-byte file",
         lambda: open_close(empty, os.O_RDONLY | os.O_TRUNC)),
        ("open O_WRONLY|O_CREAT existing", lambda: open_close(f, os.O_WRONLY | os.O_CREAT)),
        ("creat new file", lambda: open_close(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)),
        ("open O_CREAT|O_EXCL new", lambda: open_close(new, os.O_RDONLY | os.O_CREAT | os.O_EXCL)),
        ("mkdir", lambda: os.mkdir(new)),
        ("mkdir in subdir", lambda: os.mkdir(os.path.join(d, "x"))),
        ("rmdir empty dir", lambda: os.rmdir(d)),
        ("rmdir non-empty dir", lambda: os.rmdir(full)),
        ("unlink file", lambda: os.unlink(f)),
        ("unlink symlink", lambda: os.unlink(link)),
        ("rename file", lambda: os.rename(f, new)),
        ("rename file over file", lambda: os.rename(f, empty)),
        ("rename dir", lambda: os.rename(d, new)),
        ("link", lambda: os.link(f, new)),
        ("symlink", lambda: os.symlink("files/size-1", new)),
        ("mkfifo", lambda: os.mkfifo(new)),
        ("chmod file", lambda: os.chmod(f, 0o600)),
        ("chmod dir", lambda: os.chmod(d, 0o700)),
        ("chown file", lambda: os.chown(f, 1, 1)),
        ("lchown symlink", lambda: os.chown(link, 1, 1, follow_symlinks=False)),
        ("truncate shorter", lambda: os.truncate(f, 10)),
        ("truncate longer", lambda: os.truncate(f, 10**6)),
        ("utime explicit", lambda: os.utime(f, (1, 1))),
        ("utime now", lambda: os.utime(f)),
        ("utime dir", lambda: os.utime(d, (1, 1))),
        ("setxattr", lambda: os.setxattr(f, "user.clairfs", b"1")),
        ("setxattr dir", lambda: os.setxattr(d, "user.clairfs", b"1")),
        ("removexattr", lambda: os.removexattr(f, "user.clairfs")),
    ]
    return ops


def run_ops(mp, label):
    failures = []
    for what, op in write_ops(mp):
        try:
            op()
            failures.append(f"{what}: succeeded")
        except OSError as e:
            if e.errno != errno.EROFS:
                failures.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)} ({e}), "
                                f"expected EROFS")
    # A fd opened read-only must not become writable either.
    with open(os.path.join(mp, "files", "size-4097"), "rb", buffering=0) as fh:
        for what, op in [("write on O_RDONLY fd", lambda: os.write(fh.fileno(), b"x")),
                         ("ftruncate on O_RDONLY fd", lambda: os.ftruncate(fh.fileno(), 0))]:
            try:
                op()
                failures.append(f"{what}: succeeded")
            except OSError as e:
                if e.errno not in (errno.EBADF, errno.EINVAL, errno.EROFS):
                    failures.append(f"{what}: unexpected {e}")
    for f in failures:
        log(f"  {label}: {f}")
    check(not failures, f"{label}: {len(failures)} write operations were not refused")
    log(f"{label}: {len(write_ops(mp))} write operations refused with EROFS")


def as_mounted(mp):
    per_mount, sb = mount_flags(mp)
    check("rw" in per_mount, f"expected a kernel-rw mount (the daemon refuses): {per_mount} / {sb}")
    run_ops(mp, "as mounted")


def remounted_ro(mp):
    # -i: no /sbin/mount.fuse.clairfs helper, just the remount syscall.
    r = run(["mount", "-i", "-o", "remount,ro", mp], timeout=20)
    check(r.returncode == 0, f"remount ro failed: {r.stderr.strip()}")
    per_mount, sb = mount_flags(mp)
    check("ro" in per_mount, f"remount left {per_mount} / {sb}")
    run_ops(mp, "after remount ro")


def test():
    with temp_dir() as tmp:
        backing, mp = os.path.join(tmp, "backing"), os.path.join(tmp, "mnt")
        os.makedirs(backing)
        os.makedirs(mp)
        make_tree(backing, seed=3, big=False)
        before = tree_checksum(backing)
        with mounted(backing, mp):
            view_before = tree_checksum(mp)
            run_cases(("as mounted", lambda: as_mounted(mp)),
                      ("remounted ro", lambda: remounted_ro(mp)))
            check(tree_checksum(mp) == view_before, "the mounted view changed")
        check(tree_checksum(backing) == before, "the backing tree changed")
        log("backing tree unchanged")

if __name__ == "__main__":
    main(test)
