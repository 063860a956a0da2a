#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every way a mount ends: SIGTERM/SIGINT to a foreground daemon with files
open and a read in flight, `clairfs umount` (refused while busy, --lazy
detaches), `fusermount3 -u`, SIGTERM to a background daemon, and `clairfs
umount` on something that is not a clairfs mount; also relative paths (the
background daemon chdirs to "/") and a mount point reached through a
symlinked directory. Each must end without hanging anyone and without
leaving a mount or a daemon behind."""
import errno
import os
import random
import signal
import subprocess
import threading

from mountlib import (make_dirs, MIB, check, clairfs, daemon_pids, in_thread, is_mounted, log, main,
                      make_files, mounted, run, run_cases, temp_dir, wait_exit, wait_until)

SIZES = [4 * MIB, 4 * MIB + 1, 6 * MIB]


def uncached_pread(fd, length, off):
    """pread that must reach the daemon: the kernel keeps file pages across
    opens (keep_cache), and a cached page would be served even when the
    daemon is gone."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return os.pread(fd, length, off)


class Reader(threading.Thread):
    """Reads one file in a loop until told to stop or a read fails."""

    def __init__(self, path, data):
        super().__init__(daemon=True)
        self.path, self.data = path, data
        self.reads, self.error, self.mismatch = 0, None, None
        self.signalled = False
        self.stop = threading.Event()

    def run(self):
        rng = random.Random(5)
        with open(self.path, "rb", buffering=0) as f:
            while not self.stop.is_set():
                off = rng.randrange(0, len(self.data))
                try:
                    got = uncached_pread(f.fileno(), MIB, off)
                except OSError as e:
                    self.error = e
                    return
                want = self.data[off:off + MIB]
                # Once the daemon is going, a read may come back short (the
                # pages before the failing request), but never wrong.
                bad = got != want[:len(got)] or (len(got) < len(want) and not self.signalled)
                if bad and not self.mismatch:
                    self.mismatch = (f"read #{self.reads} at {off}: got {len(got)} bytes, "
                                     f"expected {len(want)}, signal sent: {self.signalled}")
                self.reads += 1


def signal_foreground(backing, mp, data, sig):
    name = signal.Signals(sig).name
    with mounted(backing, mp, foreground=True) as m:
        fds = [os.open(os.path.join(mp, n), os.O_RDONLY) for n in data]
        try:
            for fd, content in zip(fds, data.values()):
                check(uncached_pread(fd, 100, 5) == content[5:105], "read before signal")
            reader = Reader(os.path.join(mp, "f-%d" % SIZES[0]), data["f-%d" % SIZES[0]])
            reader.start()
            check(wait_until(lambda: reader.reads >= 3 or reader.error, 10)
                  and reader.error is None,
                  f"the reader made no progress before the signal: {reader.error}")
            reader.signalled = True
            os.kill(m.proc.pid, sig)
            try:
                rc = m.proc.wait(10)
            except subprocess.TimeoutExpired:
                rc = None
            log(f"{name}: daemon stderr tail: {m.current_stderr().strip().splitlines()[-1:]}")
            check(rc == 0, f"{name}: foreground daemon exit status {rc}, expected 0 within 10 s")
            check(not is_mounted(mp), f"{name}: {mp} still in mountinfo after the daemon exited")
            reader.stop.set()
            reader.join(10)
            check(not reader.is_alive(), f"{name}: the in-flight reader hangs after the unmount")
            check(not reader.mismatch, f"{name}: the reader saw wrong bytes: {reader.mismatch}")
            log(f"{name}: reader did {reader.reads} reads, then: {reader.error}")
            for fd in fds:
                done, got, exc = in_thread(uncached_pread, fd, 100, 4096, timeout=10)
                check(done, f"{name}: read on a descriptor opened before the signal hangs")
                check(isinstance(exc, OSError),
                      f"{name}: read after unmount returned {got!r:.40} instead of an error")
                log(f"{name}: read on an old descriptor -> "
                    f"{errno.errorcode.get(exc.errno, exc.errno)}")
        finally:
            for fd in fds:
                in_thread(os.close, fd, timeout=5)
    log(f"{name} on foreground daemon: ok")


def umount_command(backing, mp, data):
    name = next(iter(data))
    path = os.path.join(mp, name)
    with mounted(backing, mp) as m:
        check(m.pids, "no daemon process found for the mount")
        r = clairfs("umount", mp, timeout=30)
        check(r.returncode == 0, f"clairfs umount (idle) exit {r.returncode}: {r.stderr}")
        check(not is_mounted(mp), "still mounted after clairfs umount")
        check(wait_exit(m.pids, 10), "daemon still running 10 s after clairfs umount")
    log("clairfs umount (idle): ok")

    with mounted(backing, mp) as m:
        with open(path, "rb", buffering=0) as f:
            r = clairfs("umount", mp, timeout=30)
            check(r.returncode == 1, f"clairfs umount (busy) exit {r.returncode}, expected 1")
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            check(len(lines) == 1 and lines[0].startswith("clairfs: "),
                  f"clairfs umount (busy) should print one 'clairfs: ' line, got {r.stderr!r}")
            check(is_mounted(mp), "busy clairfs umount unmounted anyway")
            check(uncached_pread(f.fileno(), 64, 0) == data[name][:64], "read after busy umount")
            log(f"clairfs umount (busy): refused: {lines[0]}")

            r = clairfs("umount", "--lazy", mp, timeout=30)
            check(r.returncode == 0, f"clairfs umount --lazy exit {r.returncode}: {r.stderr}")
            check(not is_mounted(mp), "still in mountinfo after clairfs umount --lazy")
            # Detached, but the open file is still served until it is closed.
            got = uncached_pread(f.fileno(), 4096, MIB)
            check(got == data[name][MIB:MIB + 4096], "open file unreadable after --lazy")
        check(wait_exit(m.pids, 10), "daemon still running 10 s after the last file closed")
    log("clairfs umount --lazy: ok")

    # A foreground daemon whose mount is taken away also exits 0.
    with mounted(backing, mp, foreground=True) as m:
        r = clairfs("umount", mp, timeout=30)
        check(r.returncode == 0, f"clairfs umount of a -f mount exit {r.returncode}: {r.stderr}")
        try:
            rc = m.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, f"foreground daemon exit status {rc} after clairfs umount, expected 0")
    log("clairfs umount of a foreground mount: daemon exit 0: ok")

    # A relative MOUNTPOINT is resolved against the caller's cwd.
    with mounted(backing, mp) as m:
        r = clairfs("umount", os.path.basename(mp), cwd=os.path.dirname(mp), timeout=30)
        check(r.returncode == 0, f"clairfs umount RELATIVE exit {r.returncode}: {r.stderr}")
        check(not is_mounted(mp), "still mounted after clairfs umount with a relative path")
        check(wait_exit(m.pids, 10), "daemon still running after relative clairfs umount")
    log("clairfs umount with a relative path: ok")


def other_ways(backing, mp, tmp):
    with mounted(backing, mp) as m:
        r = run(["fusermount3", "-u", mp], timeout=30)
        check(r.returncode == 0, f"fusermount3 -u exit {r.returncode}: {r.stderr}")
        check(not is_mounted(mp), "still mounted after fusermount3 -u")
        check(wait_exit(m.pids, 10), "daemon still running 10 s after fusermount3 -u")
    log("fusermount3 -u: ok")

    # The background daemon also handles SIGTERM by unmounting.
    with mounted(backing, mp) as m:
        check(len(m.pids) == 1, f"expected one daemon process, found {m.pids}")
        os.kill(m.pids[0], signal.SIGTERM)
        check(wait_exit(m.pids, 10), "background daemon ignored SIGTERM")
        check(not is_mounted(mp), "background daemon exited on SIGTERM but left the mount")
    log("SIGTERM to background daemon: ok")

    for target in ("/tmp", os.path.join(tmp, "plain-dir")):
        os.makedirs(target, exist_ok=True)
        r = clairfs("umount", target, timeout=30)
        check(r.returncode == 1, f"clairfs umount {target} exit {r.returncode}, expected 1")
        check(r.stderr.startswith("clairfs: "), f"clairfs umount {target}: {r.stderr!r}")
    tmpfs = os.path.join(tmp, "tmpfs")
    os.makedirs(tmpfs)
    check(run(["mount", "-t", "tmpfs", "none", tmpfs]).returncode == 0, "cannot mount tmpfs")
    try:
        r = clairfs("umount", tmpfs, timeout=30)
        check(r.returncode == 1, f"clairfs umount on tmpfs exit {r.returncode}, expected 1")
        check(is_mounted(tmpfs, "tmpfs"), "clairfs umount unmounted a tmpfs")
    finally:
        run(["umount", "-l", tmpfs])
    log("clairfs umount on non-clairfs paths: refused with exit 1: ok")


def relative_mountpoint_sigterm(tmp):
    """A background daemon chdirs to "/", so a MOUNTPOINT given relative to
    the caller's cwd must still be unmounted when the daemon gets SIGTERM."""
    rel = "rel-mnt-" + os.path.basename(tmp)  # unique: daemon_pids greps for it
    os.makedirs(os.path.join(tmp, rel))
    with mounted("backing", rel, cwd=tmp) as m:
        check(len(m.pids) == 1, f"expected one daemon process, found {m.pids}")
        os.kill(m.pids[0], signal.SIGTERM)
        check(wait_exit(m.pids, 10), "background daemon ignored SIGTERM")
        check(not is_mounted(m.mp),
              f"daemon started with relative MOUNTPOINT {rel!r} exited on SIGTERM but left "
              f"{m.mp} mounted (dead: {describe_dead_mount(m.mp)})")
    log("SIGTERM to a daemon mounted with a relative MOUNTPOINT: ok")


def describe_dead_mount(path):
    try:
        os.listdir(path)
        return "still answers"
    except OSError as e:
        return e.strerror


def relative_log_file(tmp):
    """--log-file is a path from the caller's cwd, like BACKING and MOUNTPOINT."""
    name = os.path.basename(tmp) + ".log"
    stray = os.path.join("/", name)
    try:
        with mounted("backing", os.path.join(tmp, "mnt"), "--log-file", name, cwd=tmp) as m:
            check(clairfs("umount", m.mp).returncode == 0, "clairfs umount failed")
            check(wait_exit(m.pids, 10), "daemon still running after clairfs umount")
        where = os.path.join(tmp, name)
        check(os.path.exists(where),
              f"relative --log-file {name!r} (cwd {tmp}) was not created there"
              + (f"; it went to {stray}" if os.path.exists(stray) else ""))
        with open(where) as f:
            check("unmounted" in f.read(), f"{where} lacks the daemon's 'unmounted' line")
    finally:
        if os.path.exists(stray):
            os.unlink(stray)
    log("relative --log-file: ok")


def symlinked_parent(tmp, backing):
    """`clairfs umount` takes the same MOUNTPOINT path that `clairfs mount`
    took, even when a directory on that path is a symlink (mountinfo shows
    the resolved path); fusermount3 -u accepts it too."""
    os.makedirs(os.path.join(tmp, "real", "mnt"))
    os.symlink(os.path.join(tmp, "real"), os.path.join(tmp, "alias"))
    via_alias = os.path.join(tmp, "alias", "mnt")
    with mounted(backing, via_alias) as m:
        r = clairfs("umount", via_alias, timeout=30)
        check(r.returncode == 0 and not is_mounted(m.mp),
              f"clairfs umount {via_alias} (parent is a symlink; mounted as that path) "
              f"exit {r.returncode}: {r.stderr.strip()}")
    log("clairfs umount through a symlinked parent: ok")


def test():
    with temp_dir() as tmp:
        backing, mp = make_dirs(tmp, "backing", "mnt")
        data = make_files(backing, SIZES)
        run_cases(
            ("SIGTERM foreground", lambda: signal_foreground(backing, mp, data, signal.SIGTERM)),
            ("SIGINT foreground", lambda: signal_foreground(backing, mp, data, signal.SIGINT)),
            ("clairfs umount", lambda: umount_command(backing, mp, data)),
            ("fusermount3, SIGTERM, non-clairfs", lambda: other_ways(backing, mp, tmp)),
            ("relative MOUNTPOINT + SIGTERM", lambda: relative_mountpoint_sigterm(tmp)),
            ("relative --log-file", lambda: relative_log_file(tmp)),
            ("umount through symlinked parent", lambda: symlinked_parent(tmp, backing)),
        )
        check(not daemon_pids(mp), f"daemons left behind: {daemon_pids(mp)}")


if __name__ == "__main__":
    main(test)
