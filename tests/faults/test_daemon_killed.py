#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The daemon killed (kill -9) under a running job:

- a reader with files open gets ENOTCONN (or ECONNABORTED) from then on,
  never wrong bytes: whatever a read still returns (the kernel's own page
  cache) is the backing file's;
- `clairfs mount` of the same backing directory over the dead mount point
  detaches the dead mount itself, says so in one line, and serves the
  right bytes; the job's old descriptors keep failing, not hanging; the
  same when the mount point is the backing directory itself;
- `clairfs mount` of another directory over a dead clairfs mount refuses
  (exit 1) with one line that says what happened and names the command
  that recovers, leaves the dead mount as it was, and after that command
  the mount succeeds."""
import errno
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

CUT = (errno.ENOTCONN, errno.ECONNABORTED)


def connection_gone(mp):
    try:
        os.statvfs(mp)
    except OSError as e:
        return e.errno == errno.ENOTCONN
    return False


def kill_daemon(m):
    ml.check(m.pids, "no daemon found for the mount")
    for pid in m.pids:
        os.kill(pid, signal.SIGKILL)
    ml.check(ml.wait_exit(m.pids, 10), "the daemon survived kill -9")
    # The leader is a zombie before its other threads have gone and closed
    # /dev/fuse; until then the mount is not dead yet.
    ml.check(ml.wait_until(lambda: connection_gone(m.mp), 10),
             "the mount still answers after kill -9 of its daemon")


def read_rest(fd, data, offset, what):
    """Reads fd from offset to the end: every byte returned must be right;
    returns the errno that cut it off (None if it read to the end)."""
    while offset < len(data):
        try:
            chunk = os.pread(fd, 65536, offset)
        except OSError as e:
            return e.errno
        ml.check(chunk == data[offset:offset + len(chunk)], f"{what}: wrong bytes at {offset}")
        if not chunk:
            break
        offset += len(chunk)
    return None


def files_of(expected, n):
    return sorted(expected)[:n]


def case_job_gets_errors(tmp, src, expected):
    mp = os.path.join(tmp, "mnt-job")
    os.makedirs(mp)
    with ml.mounted(src, mp, "--mem", "64M") as m:
        names = files_of(expected, 10)
        data = {rel: open(os.path.join(src, rel), "rb").read() for rel in names}
        fds = {rel: os.open(os.path.join(mp, rel), os.O_RDONLY) for rel in names}
        try:
            for rel in names[:5]:  # half read before the kill, half not at all
                os.pread(fds[rel], len(data[rel]) // 2 or 1, 0)
            kill_daemon(m)
            cut = {rel: read_rest(fds[rel], data[rel], 0, rel) for rel in names}
            unread = [cut[rel] for rel in names[5:]]
            ml.log(f"after kill -9: {cut}")
            ml.check(all(e in CUT for e in unread),
                     f"files not read before the kill: {unread}, expected ENOTCONN")
            ml.check(all(e is None or e in CUT for e in cut.values()), f"errnos {cut}")
            ml.expect_errno(errno.ENOTCONN, os.statvfs, mp)
        finally:
            for fd in fds.values():
                os.close(fd)


def case_mount_over_dead(tmp, src, expected):
    mp = os.path.join(tmp, "mnt-dead")
    os.makedirs(mp)
    with ml.mounted(src, mp, "--mem", "64M") as m:
        rel = files_of(expected, 1)[0]
        fd = os.open(os.path.join(mp, rel), os.O_RDONLY)
        try:
            kill_daemon(m)
            r = ml.clairfs("mount", src, mp, "--mem", "64M", timeout=120)
            m.pids = ml.daemon_pids(mp)  # the new daemon, for cleanup
            lines = [l for l in r.stderr.splitlines() if "dead clairfs mount" in l]
            ml.log(f"mount over a dead mount of the same directory: rc {r.returncode}, {lines}")
            ml.check(r.returncode == 0, f"mount over the dead mount failed: {r.stderr.strip()}")
            ml.check(len(lines) == 1 and "detached" in lines[0],
                     f"expected one line saying the dead mount was detached: {r.stderr!r}")
            failed, wrong = fl.read_and_compare(mp, expected)
            ml.check(not failed and not wrong, f"new mount: failed {failed}, wrong {wrong[:5]}")
            done, _, exc = ml.in_thread(os.pread, fd, 100, 0, timeout=10)
            ml.check(done, "a descriptor of the dead mount hangs")
            ml.check(isinstance(exc, OSError) and exc.errno in CUT,
                     f"a descriptor of the dead mount gave {exc!r}, expected ENOTCONN")
        finally:
            os.close(fd)


def case_over_itself(tmp, expected):
    """MOUNTPOINT = BACKING (the job keeps its paths): the dead mount hides
    the dataset itself, and must still be recognised and replaced."""
    data = os.path.join(tmp, "in-place")
    os.makedirs(data)
    mine = fl.make_dataset(data, classes=1, per_class=10, seed=5)
    with ml.mounted(data, data) as m:
        kill_daemon(m)
        r = ml.clairfs("mount", data, data, timeout=120)
        m.pids = ml.daemon_pids(data)
        ml.check(r.returncode == 0, f"mount over itself after a kill: {r.stderr.strip()}")
        ml.check("detached the dead clairfs mount" in r.stderr, f"no detach line: {r.stderr!r}")
        failed, wrong = fl.read_and_compare(data, mine)
        ml.check(not failed and not wrong, f"over itself: failed {failed}, wrong {wrong[:5]}")


def case_other_backing(tmp, src, expected):
    mp = os.path.join(tmp, "mnt-other")
    other = os.path.join(tmp, "other")
    os.makedirs(mp)
    os.makedirs(other)
    with open(os.path.join(other, "x"), "w") as f:
        f.write("x")
    with ml.mounted(src, mp, "--mem", "64M") as m:
        kill_daemon(m)
        r = ml.clairfs("mount", other, mp, timeout=120)
        err = r.stderr.strip()
        ml.log(f"mount of another directory over a dead mount: rc {r.returncode}: {err}")
        ml.check(r.returncode == 1, f"expected exit 1, got {r.returncode}: {err}")
        ml.check(len(err.splitlines()) == 1, f"expected one line: {err!r}")
        ml.check("dead clairfs mount" in err and "clairfs umount --lazy" in err,
                 f"the line does not say what happened and how to recover: {err!r}")
        ml.check(ml.is_mounted(mp), "the dead mount was detached although it was not ours")
        r = ml.clairfs("umount", "--lazy", mp, timeout=60)
        ml.check(r.returncode == 0, f"clairfs umount --lazy of the dead mount: {r.stderr.strip()}")
        with ml.mounted(other, mp):
            with open(os.path.join(mp, "x")) as f:
                ml.check(f.read() == "x", "the recovered mount serves wrong bytes")


def test():
    with ml.temp_dir() as tmp:
        src = ml.make_dirs(tmp, "source")[0]
        expected = fl.make_dataset(src, classes=2, per_class=20)
        ml.run_cases(("job gets errors", lambda: case_job_gets_errors(tmp, src, expected)),
                     ("mount over dead", lambda: case_mount_over_dead(tmp, src, expected)),
                     ("over itself", lambda: case_over_itself(tmp, expected)),
                     ("other backing", lambda: case_other_backing(tmp, src, expected)))


if __name__ == "__main__":
    ml.main(test)
