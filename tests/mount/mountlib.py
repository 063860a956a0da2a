# SPDX-License-Identifier: MIT
"""Shared helpers for the clairfs mount tests (Python 3 stdlib only).

Every helper bounds its waits, and mounted() always unmounts and reaps the
daemon, so a failing test never leaves a mount or a process behind.
"""
import contextlib
import ctypes
import errno
import json
import hashlib
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("CLAIRFS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
CLAIRFS = os.environ.get("CLAIRFS") or os.path.join(SOURCE_ROOT, "build", "src", "clairfs")
MIB = 1 << 20
# setpriv prefixes that run a command as nobody, or as root without the
# capabilities that let root read any directory.
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NO_DAC_CAPS = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
               "--bounding-set=-dac_override,-dac_read_search"]


class TestFailure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def log(msg):
    print(msg, flush=True)


def main(fn):
    """Runs fn(); exit 0 on success, 1 on a failed check, 77 without FUSE."""
    skip_unless_fuse()
    run_test(fn)


def run_test(fn):
    """Runs fn(), which needs no mount; exit 0 on success, 1 on a failed check."""
    try:
        fn()
    except TestFailure as e:
        log(f"FAIL: {e}")
        sys.exit(1)
    log("PASS")
    sys.exit(0)


def run_cases(*cases):
    """Runs each (name, fn) even if an earlier one failed, so that one report
    lists every broken case; raises at the end if any failed. CLAIRFS_CASES
    (comma-separated names) runs only those, to chase one case by hand."""
    only = {n for n in os.environ.get("CLAIRFS_CASES", "").split(",") if n}
    cases = [(name, fn) for name, fn in cases if not only or name in only]
    check(cases, f"no case named {sorted(only)}")
    failed = []
    for name, fn in cases:
        try:
            fn()
        except TestFailure as e:
            log(f"FAIL [{name}]: {e}")
            failed.append(name)
        except Exception as e:  # an unexpected error is a failure of that case
            log(f"FAIL [{name}]: {type(e).__name__}: {e}")
            failed.append(name)
    check(not failed, f"{len(failed)} of {len(cases)} cases failed: {', '.join(failed)}")


def skip_unless_fuse():
    # The only reasons to skip: the machine cannot mount FUSE at all.
    if not os.path.exists("/dev/fuse"):
        log("SKIP: /dev/fuse is missing")
        sys.exit(77)
    if shutil.which("fusermount3") is None:
        log("SKIP: fusermount3 is not installed")
        sys.exit(77)
    if not os.access(CLAIRFS, os.X_OK):
        log(f"FAIL: clairfs binary not found at {CLAIRFS} (set CLAIRFS)")
        sys.exit(1)


def skip_unless_frameworks(python, *modules):
    """Exits 77 when `python` (the frameworks venv's) cannot import
    `modules`; in CI (CI=true) that is a failure instead, since CI installs
    the venv (bash scripts/install-deps.sh test)."""
    try:
        r = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True,
                           text=True, timeout=300)
        why = "" if r.returncode == 0 else (
            f"{python} cannot import {' and '.join(modules)}: " +
            (r.stderr.strip().splitlines() or ["?"])[-1])
    except OSError as e:
        why = f"cannot run {python}: {e}"
    if not why:
        return
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why} (CI needs the frameworks venv: bash scripts/install-deps.sh test)")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


def run(cmd, timeout=60, **kw):
    """subprocess.run with text capture and a mandatory timeout."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          errors="replace", **kw)


def clairfs(*args, timeout=120, prefix=(), **kw):
    return run([*prefix, CLAIRFS, *args], timeout=timeout, **kw)


# ---------------------------------------------------------------- mount table

def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts():
    """[(mountpoint, fstype, per-mount options, superblock options)] from
    /proc/self/mountinfo, options as sets."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            left, right = left.split(), right.split()
            out.append((_unescape(left[4]), right[0], set(left[5].split(",")),
                        set(right[2].split(","))))
    return out


def mount_flags(path):
    """(per-mount options, superblock options) of the mount at path."""
    path = os.path.abspath(path)
    return next(((o, s) for mp, _, o, s in mounts() if mp == path), (set(), set()))


def is_mounted(path, fstype="fuse.clairfs"):
    path = os.path.abspath(path)
    return any(mp == path and fstype in (None, t) for mp, t, _, _ in mounts())


def lazy_unmount(path):
    if is_mounted(path, None):
        run(["fusermount3", "-u", "-z", path], timeout=20)
    if is_mounted(path, None):  # not a FUSE mount, or fusermount3 refused
        run(["umount", "-l", path], timeout=20)


# ---------------------------------------------------------------- processes

def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            # A zombie has exited; whoever adopted it may reap it later. But
            # a thread group leader turns zombie before its other threads have
            # exited and closed the files they share (the SSD cache's lock).
            if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                return True
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def daemon_pids(mountpoint):
    """clairfs processes whose command line contains mountpoint, exactly as
    it was passed to clairfs mount (so relative names must be unique).

    pgrep -f also matches wrappers such as timeout or sh -c, so keep only
    processes whose executable is the clairfs binary."""
    r = run(["pgrep", "-f", re.escape(mountpoint) + "( |$)"], timeout=10)
    exe = os.path.realpath(CLAIRFS)
    pids = []
    for p in r.stdout.split():
        try:
            if os.path.realpath(f"/proc/{p}/exe") == exe and _alive(int(p)):
                pids.append(int(p))
        except OSError:
            pass
    return pids


def wait_exit(pids, timeout=10.0):
    """True once every pid has exited (they need not be our children)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def wait_until(cond, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def in_thread(fn, *args, timeout=10.0):
    """Runs fn(*args) in a daemon thread: (finished, result, exception).
    For calls that might block forever on a broken mount."""
    box = {}

    def body():
        try:
            box["result"] = fn(*args)
        except BaseException as e:  # reported to the caller
            box["exc"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout)
    return not t.is_alive(), box.get("result"), box.get("exc")


class Mount:
    def __init__(self, backing, mp):
        self.backing, self.mp = backing, mp
        self.stderr = ""
        self.proc = None      # foreground mounts only
        self.errpath = None   # foreground mounts: file receiving the daemon's stderr
        self.pids = []
        self.given_mp = mp    # as passed to clairfs mount: what pgrep can match

    def current_stderr(self):
        if self.errpath is None:
            return self.stderr
        with open(self.errpath, errors="replace") as f:
            return f.read()


class MountError(TestFailure):
    pass


@contextlib.contextmanager
def mounted(backing, mp, *options, foreground=False, timeout=300, prefix=(), cwd=None):
    """Mounts backing on mp, yields a Mount, always unmounts and reaps.

    With cwd, clairfs runs there and gets backing and mp exactly as given
    (relative paths stay relative); otherwise they are made absolute."""
    if cwd is None:
        backing, mp = os.path.abspath(backing), os.path.abspath(mp)
    # Tracked by real path: that is what mountinfo shows.
    m = Mount(os.path.realpath(os.path.join(cwd or "/", backing)),
              os.path.realpath(os.path.join(cwd or "/", mp)))
    m.given_mp = mp
    try:
        if foreground:
            # Its own O_APPEND descriptor, so our reads never move its offset.
            fd, m.errpath = tempfile.mkstemp(prefix="clairfs-stderr-")
            os.close(fd)
            with open(m.errpath, "ab") as err:
                m.proc = subprocess.Popen([*prefix, CLAIRFS, "mount", backing, mp, "-f",
                                           *options], stdout=subprocess.DEVNULL, stderr=err,
                                          cwd=cwd)
            ok = wait_until(lambda: m.proc.poll() is not None or is_mounted(m.mp), timeout)
            m.stderr = m.current_stderr()
            if not ok or m.proc.poll() is not None:
                raise MountError(f"foreground mount did not come up (rc={m.proc.poll()}): "
                                 f"{m.stderr}")
            # statfs blocks until the INIT handshake is over.
            done, _, exc = in_thread(os.statvfs, m.mp, timeout=30)
            check(done and exc is None, f"foreground mount does not answer statfs: {exc}")
        else:
            r = clairfs("mount", backing, mp, *options, timeout=timeout, prefix=prefix, cwd=cwd)
            m.stderr = r.stderr
            if r.returncode != 0:
                raise MountError(f"mount failed rc={r.returncode}: {r.stderr.strip()}")
            check(is_mounted(m.mp), f"mount returned 0 but {m.mp} is not in mountinfo")
        m.pids = daemon_pids(mp)
        yield m
    finally:
        cleanup(m)
        if m.errpath:
            os.unlink(m.errpath)


@contextlib.contextmanager
def mounted_logged(backing, mp, logfile, *options, lines=60, also=None):
    """mounted() with the daemon's log in `logfile`, at the level of
    CLAIRFS_TEST_LOG_LEVEL (default info). A TestFailure inside shows the
    log's last `lines` lines, and also() if given, before it propagates:
    for failures that depend on timing, the daemon's account is the only
    one."""
    level = os.environ.get("CLAIRFS_TEST_LOG_LEVEL", "info")
    with mounted(backing, mp, "--log-file", logfile, "--log-level", level, *options) as m:
        try:
            yield m
        except TestFailure:
            with open(logfile, errors="replace") as f:
                log(f"the daemon's log ({os.path.basename(logfile)}):\n" +
                    "".join(f.readlines()[-lines:]))
            if also is not None:
                with contextlib.suppress(Exception):
                    log(also())
            raise


def cleanup(m):
    """Best-effort teardown: lazy unmount, wait for the daemon, then kill."""
    lazy_unmount(m.mp)
    pids = set(m.pids) | set(daemon_pids(m.given_mp))
    if m.proc is not None:
        pids.add(m.proc.pid)
    if not wait_exit(pids, 10):
        # Said, because it costs the test 10-15 s and usually means a daemon
        # thread is stuck in a backing read the test never released.
        print(f"teardown: daemon {sorted(pids)} of {m.given_mp} still running 10 s after "
              "the unmount; killed", file=sys.stderr, flush=True)
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        wait_exit(pids, 5)
    if m.proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            m.proc.wait(5)
    lazy_unmount(m.mp)  # a killed daemon leaves a dead mount behind


def indexed_line(stderr):
    return next((l for l in stderr.splitlines() if "indexed " in l), "")


# ---------------------------------------------------------------- temp dirs


def make_dirs(parent, *names):
    """Creates parent/NAME for each name and returns their paths, e.g. the
    usual backing, mp = make_dirs(tmp, "backing", "mnt")."""
    paths = [os.path.join(parent, n) for n in names]
    for p in paths:
        os.makedirs(p)
    return paths


@contextlib.contextmanager
def temp_dir(prefix="clairfs-test-"):
    """A fresh directory; on exit anything mounted beneath it is unmounted
    and modes are restored so that rmtree can remove everything."""
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        for mp, *_ in reversed(mounts()):
            if mp == d or mp.startswith(d + "/"):
                cleanup(Mount("", mp))
        for root, dirs, _ in os.walk(d):
            for name in dirs:
                with contextlib.suppress(OSError):
                    p = os.path.join(root, name)
                    if not os.path.islink(p):
                        os.chmod(p, 0o755)
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- trees

ODD_NAMES = ["with space", "é", "日本", ".hidden", "-dash", "a=b", "#hash", "back\\slash",
             "new\nline", "trailing ", os.fsdecode(b"latin1-\xe9\xff"), "Zupper", "~tilde"]
EDGE_SIZES = [0, 1, 4095, 4096, 4097, 131072 + 1, MIB + 3, 3 * MIB]


def write_file(path, size, rng, mode=0o644):
    with open(path, "wb") as f:
        f.write(rng.randbytes(size))
    os.chmod(path, mode)


def set_time(path, rng):
    # Whole seconds plus odd nanoseconds, so that mtime_ns parity is tested.
    t = rng.randrange(10**9, 2 * 10**9) * 10**9 + rng.randrange(1, 10**9)
    os.utime(path, ns=(t, t), follow_symlinks=False)


def make_tree(root, seed=1, big=True):
    """Builds the parity tree under root (an existing directory).

    Returns the relative paths clairfs must hide (escaping symlinks and
    special files). Deterministic for a given seed, except for the absolute
    symlinks, whose text contains root."""
    rng = random.Random(seed)
    hidden = []
    p = lambda *parts: os.path.join(root, *parts)
    os.makedirs(p("files"))
    for size in EDGE_SIZES:
        write_file(p("files", f"size-{size}"), size if big or size <= MIB else 5000, rng)
    os.makedirs(p("odd"))
    for i, name in enumerate(ODD_NAMES):
        write_file(p("odd", name), rng.randrange(0, 300), rng, [0o644, 0o600, 0o755, 0o444][i % 4])
    os.makedirs(p("odd", "dir é 日本"))
    write_file(p("odd", "dir é 日本", ".hidden"), 10, rng)
    os.makedirs(p("modes", "sticky"))
    os.chmod(p("modes", "sticky"), 0o1777)
    for mode in (0o600, 0o640, 0o4755, 0o2755, 0o000, 0o777):
        write_file(p("modes", f"m{mode:o}"), 17, rng, mode)
    for uid, gid in ((65534, 65534), (1000, 100), (4242, 0)):
        write_file(p("modes", f"owner-{uid}"), 5, rng)
        os.chown(p("modes", f"owner-{uid}"), uid, gid)
    os.link(p("modes", "m600"), p("modes", "hardlink-to-m600"))
    deep = p("deep")
    for level in range(40 if big else 5):
        deep = os.path.join(deep, f"level-{level:02d}")
    os.makedirs(deep)
    write_file(os.path.join(deep, "bottom"), 123, rng)
    os.makedirs(p("wide"))
    for i in range(3000 if big else 50):
        write_file(p("wide", f"f{rng.randrange(10**9):09d}-{i}"), rng.randrange(0, 64), rng)
    os.makedirs(p("times"))
    for name, ns in (("before-1970", -1_500_000_000), ("epoch", 0),
                     ("after-2038", 4_200_000_000_123_456_789)):
        write_file(p("times", name), 1, rng)
        os.utime(p("times", name), ns=(ns, ns))
    os.makedirs(p("empty"))
    os.makedirs(p("links"))
    os.symlink("../files/size-4097", p("links", "rel_file"))
    os.symlink("../deep", p("links", "rel_dir"))
    os.symlink(p("files", "size-1"), p("links", "abs_inside"))
    os.symlink(p("odd"), p("links", "abs_inside_dir"))
    os.symlink("no-such-file", p("links", "dangling_inside"))
    os.symlink(p("links", "no-such-abs"), p("links", "dangling_abs_inside"))
    os.symlink("/etc/passwd", p("links", "escape_abs"))
    os.symlink("../../..", p("links", "escape_rel"))
    os.symlink("../../../../../../../../nowhere", p("links", "escape_dangling"))
    hidden += ["links/escape_abs", "links/escape_rel", "links/escape_dangling"]
    os.makedirs(p("special"))
    os.mkfifo(p("special", "fifo"))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(p("special", "sock"))
    os.mknod(p("special", "null-dev"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    write_file(p("special", "regular"), 3, rng)
    hidden += ["special/fifo", "special/sock", "special/null-dev"]
    # Times last, bottom-up, since creating entries moves the parent's mtime.
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for name in dirs + files:
            if os.path.basename(dirpath) != "times":
                set_time(os.path.join(dirpath, name), rng)
    set_time(root, rng)
    return hidden


def make_files(root, sizes, seed=2):
    """Files named by size with random content; returns {name: bytes}."""
    rng = random.Random(seed)
    data = {}
    for size in sizes:
        name = f"f-{size}"
        data[name] = rng.randbytes(size)
        with open(os.path.join(root, name), "wb") as f:
            f.write(data[name])
    return data


def write_random_files(root, sizes, rng):
    """Files of random bytes at the relative paths of `sizes` ({path:
    size}), drawn from `rng` in order; returns {path: bytes}."""
    out = {}
    for rel, size in sizes.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
        out[rel] = rng.randbytes(size)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(out[rel])
    return out


def chunk_options(cache, chunk, *more):
    """A mount holding files above 1 MiB (a sixteenth of --mem 16M) by
    chunks of `chunk` bytes, with a 64 MiB SSD tier in `cache`."""
    return ("--mem", "16M", "--chunk-size", str(chunk), "--no-detect", "--cache-dir", cache,
            "--ssd", "64M", *more)


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(MIB):
            h.update(chunk)
    return h.hexdigest()


def tree_checksum(root):
    """One digest over names, types, modes, owners, sizes, mtimes, link
    texts and file bytes: equal digests mean an untouched tree."""
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files) + ["."]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            h.update(repr((os.path.relpath(path, root), st.st_mode, st.st_uid, st.st_gid,
                           st.st_size, st.st_mtime_ns)).encode("utf-8", "surrogateescape"))
            if stat.S_ISLNK(st.st_mode):
                h.update(os.fsencode(os.readlink(path)))
            elif stat.S_ISREG(st.st_mode):
                h.update(file_digest(path).encode())
    return h.hexdigest()


# ---------------------------------------------------------------- raw readdir

class _Dirent64(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.opendir.restype = ctypes.c_void_p
_libc.opendir.argtypes = [ctypes.c_char_p]
_libc.readdir64.restype = ctypes.POINTER(_Dirent64)
_libc.readdir64.argtypes = [ctypes.c_void_p]
_libc.closedir.argtypes = [ctypes.c_void_p]
DT = {1: "fifo", 2: "chr", 4: "dir", 6: "blk", 8: "reg", 10: "lnk", 12: "sock", 0: "unknown"}


def raw_readdir(path):
    """[(name bytes, d_ino, d_type name)] in the order readdir(3) returns
    them, "." and ".." included; os.scandir hides both the dot entries and
    whether d_type was really filled in."""
    d = _libc.opendir(os.fsencode(path))
    if not d:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    out = []
    try:
        while True:
            ctypes.set_errno(0)
            ent = _libc.readdir64(d)
            if not ent:
                e = ctypes.get_errno()
                if e:
                    raise OSError(e, os.strerror(e), path)
                return out
            out.append((ent.contents.d_name, ent.contents.d_ino, DT.get(ent.contents.d_type, "?")))
    finally:
        _libc.closedir(d)


def expect_errno(expected, fn, *args, what=None, **kw):
    """Checks that fn(*args) raises OSError with errno expected."""
    what = what or f"{getattr(fn, '__name__', fn)}{args}"
    try:
        fn(*args, **kw)
    except OSError as e:
        check(e.errno == expected, f"{what}: expected {errno.errorcode[expected]}, got "
              f"{errno.errorcode.get(e.errno, e.errno)} ({e})")
        return
    raise TestFailure(f"{what}: expected {errno.errorcode[expected]}, but it succeeded")


def status(mp):
    """The mount's .clairfs/status document."""
    with open(os.path.join(mp, ".clairfs", "status")) as f:
        return json.load(f)


def random_dataset(root, files, seed, max_size, empty=()):
    """FILES files of random bytes and sizes below max_size in 8 class
    directories (those numbered in `empty` empty); returns {relative
    path: bytes}."""
    rng = random.Random(seed)
    expected = {}
    for i in range(files):
        rel = os.path.join(f"c{i % 8}", f"{i:04d}.jpg")
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        data = b"" if i in empty else rng.randbytes(rng.randrange(1, max_size))
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        expected[rel] = data
    return expected


def read_expected(mp, expected, what):
    """Reads every file of `expected` through the mount, checking its bytes."""
    for rel, data in sorted(expected.items()):
        with open(os.path.join(mp, rel), "rb") as f:
            got = f.read()
        check(got == data, f"{what}: {rel} differs through the mount ({len(got)} bytes, "
                           f"{len(data)} expected)")


def read_all(mp, backing):
    """Every file of `backing` through the mount at the same path, checked
    against the backing file; returns how many files were read."""
    n = 0
    for d, _, files in os.walk(backing):
        for name in files:
            rel = os.path.relpath(os.path.join(d, name), backing)
            with open(os.path.join(backing, rel), "rb") as f:
                want = hashlib.sha1(f.read()).hexdigest()
            with open(os.path.join(mp, rel), "rb") as f:
                got = hashlib.sha1(f.read()).hexdigest()
            check(got == want, f"{rel}: bytes through the mount differ from the backing file")
            n += 1
    return n


# ---------------------------------------------------------------- as a user


@contextlib.contextmanager
def fuse_open_to_users():
    """/dev/fuse at 0666 for a user's mount, as Debian's udev rule makes it
    (this machine's may be 0600); put back as it was after."""
    mode = os.stat("/dev/fuse").st_mode & 0o777
    os.chmod("/dev/fuse", 0o666)
    try:
        yield
    finally:
        os.chmod("/dev/fuse", mode)


_DIGEST_FILES = """
import hashlib, os, sys
h = hashlib.sha256()
for rel in sys.argv[2:]:
    with open(os.path.join(sys.argv[1], rel), "rb") as f:
        h.update(f.read())
print(h.hexdigest())
"""


def check_read_as(prefix, mp, expected, what):
    """Reads every file of `expected` ({relative path: bytes}) through the
    mount in a python3 run under `prefix` (AS_NOBODY), checking the bytes."""
    rels = sorted(expected)
    r = run([*prefix, "/usr/bin/python3", "-c", _DIGEST_FILES, mp, *rels])
    want = hashlib.sha256(b"".join(expected[k] for k in rels)).hexdigest()
    check(r.returncode == 0 and r.stdout.strip() == want,
          f"{what}: the bytes differ ({r.stderr.strip()})")


def unmount_as(prefix, mp):
    """fusermount3 -u under `prefix`, and waits for the mount to go."""
    run([*prefix, "fusermount3", "-u", mp])
    wait_until(lambda: not is_mounted(mp), 10)


def drop_caches(what):
    """echo WHAT > /proc/sys/vm/drop_caches (root): 1 the page cache, 2
    dentries and inodes, 3 both."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write(what)


def register(mp, **keys):
    """Writes keys as one registration to the mount's .clairfs/control."""
    with open(os.path.join(mp, ".clairfs", "control"), "w") as f:
        f.write(json.dumps(keys))
