#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Bad input is refused before anything is mounted, with exactly one
"clairfs: " line on stderr and exit 1 (runtime) or 2 (usage). Then the
backing store changing under a live mount: reading a deleted file is ENOENT,
a changed file ESTALE, a swapped-in symlink never leads outside, an
unreadable directory answers with its errno; the mount keeps serving the
rest after each of these. Last, hostile JSON written to a live mount's
control file (the overflowing number that used to kill the daemon, deep
nesting, bad UTF-8, a key given twice, a huge string): EINVAL, the reason
in status, and the mount serving correct bytes afterwards."""
import errno
import json
import os

from mountlib import (AS_NOBODY, CLAIRFS, NO_DAC_CAPS, check, daemon_pids,
                      expect_errno, is_mounted, log, main, make_files, mounted, run, run_cases,
                      temp_dir)


def expect_refusal(label, cmd, rc, mp, contains=None):
    """Runs cmd; checks exit rc, one 'clairfs: ' line, nothing mounted."""
    r = run(cmd, timeout=60)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == rc, f"{label}: exit {r.returncode}, expected {rc}; stderr {r.stderr!r}")
    check(len(lines) == 1, f"{label}: expected exactly one stderr line, got {lines!r}")
    check(lines[0].startswith("clairfs: "), f"{label}: line lacks 'clairfs: ': {lines[0]!r}")
    if contains:
        check(contains.lower() in lines[0].lower(), f"{label}: {lines[0]!r} lacks {contains!r}")
    check(not is_mounted(mp), f"{label}: {mp} was mounted anyway")
    check(not daemon_pids(mp), f"{label}: a daemon was left running")
    log(f"{label}: exit {rc}: {lines[0]}")


def runtime_cases(tmp):
    """(label, fn) for each pre-mount runtime error: exit 1."""
    backing, mp = os.path.join(tmp, "public"), os.path.join(tmp, "mnt")
    private = os.path.join(tmp, "private")
    afile = os.path.join(tmp, "regular-file")
    for d in (backing, mp, private):
        os.makedirs(d)
    open(os.path.join(private, "x"), "w").close()
    open(afile, "w").close()
    # nobody must be able to reach the test directories, but not private/.
    os.chmod(tmp, 0o755)
    os.chmod(backing, 0o755)
    os.chmod(private, 0o700)
    missing = os.path.join(tmp, "missing")
    mount = lambda b, m: [CLAIRFS, "mount", b, m]
    refuse = lambda label, cmd, m, text=None: (label, lambda: expect_refusal(label, cmd, 1, m,
                                                                              text))

    def already_mounted():
        check(run(["mount", "-t", "tmpfs", "none", mp]).returncode == 0, "cannot mount tmpfs")
        try:
            expect_refusal("MOUNTPOINT already a mount point", mount(backing, mp), 1, mp,
                           "already a mount point")
            check(is_mounted(mp, "tmpfs"), "the tmpfs on MOUNTPOINT disappeared")
        finally:
            run(["umount", "-l", mp])

    # A private mount namespace whose /dev is an empty tmpfs: no /dev/fuse.
    no_fuse = ["unshare", "-m", "sh", "-c",
               'mount -t tmpfs none /dev && exec "$0" mount "$1" "$2"', CLAIRFS, backing, mp]
    return [
        refuse("BACKING missing", mount(missing, mp), mp, "No such file"),
        refuse("BACKING is a regular file", mount(afile, mp), mp, "not a directory"),
        refuse("MOUNTPOINT missing", mount(backing, missing), missing, "No such file"),
        refuse("MOUNTPOINT is a regular file", mount(backing, afile), afile),
        ("MOUNTPOINT already a mount point", already_mounted),
        refuse("/dev/fuse absent", no_fuse, mp, "/dev/fuse"),
        refuse("nobody, BACKING root-only (700)", AS_NOBODY + mount(private, mp), mp,
               "Permission denied"),
        refuse("nobody, MOUNTPOINT not writable", AS_NOBODY + mount(backing, mp), mp,
               "Permission denied"),
    ] + device_permission_cases(tmp, backing, refuse)


def device_permission_cases(tmp, backing, refuse):
    """Where /dev/fuse is not open to everyone (0600 in some containers),
    an unprivileged mount must be refused up front, before the scan, with
    one line naming the device. Where it is 0666 there is nothing to refuse."""
    if os.stat("/dev/fuse").st_mode & 0o006 == 0o006:
        log("/dev/fuse is world-accessible here: no device-permission case to test")
        return []
    mp = os.path.join(tmp, "nobody-mnt")
    os.makedirs(mp)
    os.chmod(mp, 0o777)
    return [refuse("nobody, /dev/fuse not accessible",
                   AS_NOBODY + [CLAIRFS, "mount", backing, mp], mp, "/dev/fuse (mode")]


def usage_cases(tmp):
    """(label, fn) for each usage error: exit 2."""
    backing, mp = os.path.join(tmp, "public"), os.path.join(tmp, "mnt")

    def config(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    options = [
        ("unknown option", ["--bogus"]),
        ("--max-read 3000", ["--max-read", "3000"]),
        ("--max-read 2M", ["--max-read", "2M"]),
        ("--max-read without value", ["--max-read"]),
        ("--blksize 3000", ["--blksize", "3000"]),
        ("--threads 0", ["--threads", "0"]),
        ("--cache-timeout -1", ["--cache-timeout", "-1"]),
        ("--log-level loud", ["--log-level", "loud"]),
        ("--progress sometimes", ["--progress", "sometimes"]),
        ("-o max_read=3000", ["-o", "max_read=3000"]),
        ("-o bogus=1", ["-o", "bogus=1"]),
        ("--config missing file", ["--config", os.path.join(tmp, "missing.json")]),
        ("--config not JSON", ["--config", config("bad.json", "{max_read: 64K")]),
        ("--config JSON array", ["--config", config("array.json", "[1]")]),
        ("--config bad max_read", ["--config", config("v.json", json.dumps({"max_read": "3000"}))]),
        ("--config unknown key", ["--config", config("k.json", json.dumps({"bogus": 1}))]),
    ]
    commands = [(label, [CLAIRFS, "mount", backing, mp, *opts]) for label, opts in options]
    commands += [("one positional argument", [CLAIRFS, "mount", backing]),
                 ("three positional arguments", [CLAIRFS, "mount", backing, mp, mp])]
    return [(label, lambda label=label, cmd=cmd: expect_refusal(label, cmd, 2, mp))
            for label, cmd in commands]


def read_ok(mp, name, data):
    with open(os.path.join(mp, name), "rb") as f:
        check(f.read() == data[name], f"{name} no longer reads correctly")


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def backing_changes(tmp):
    """The backing file is opened by the first read that needs it, so the
    error comes from read(), not open(); bytes the kernel already caches are
    the snapshot's own and may still be served, but never different ones."""
    backing, mp = os.path.join(tmp, "changing"), os.path.join(tmp, "mnt2")
    os.makedirs(os.path.join(backing, "sub"))
    os.makedirs(mp)
    data = make_files(backing, [10, 100, 1000, 2000, 5000, 70000, 300000])
    with open(os.path.join(backing, "sub", "passwd"), "w") as f:
        f.write("not the real one\n")
    with mounted(backing, mp):
        m = lambda *p: os.path.join(mp, *p)
        b = lambda *p: os.path.join(backing, *p)
        read_ok(mp, "f-10", data)
        os.unlink(b("f-10"))
        os.unlink(b("f-2000"))
        try:
            check(read_file(m("f-10")) == data["f-10"], "a cached, deleted file changed its bytes")
        except OSError as e:
            check(e.errno == errno.ENOENT, f"cached deleted file: {errno.errorcode.get(e.errno)}")
        expect_errno(errno.ENOENT, read_file, m("f-2000"),
                     what="read of a file deleted from BACKING")
        read_ok(mp, "f-100", data)

        with open(b("f-1000"), "ab") as f:
            f.write(b"grown")
        expect_errno(errno.ESTALE, read_file, m("f-1000"), what="read of a file that grew")

        st = os.stat(b("f-5000"))
        os.utime(b("f-5000"), ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        expect_errno(errno.ESTALE, read_file, m("f-5000"), what="read after an mtime-only change")
        read_ok(mp, "f-70000", data)

        # Swapped-in symlinks must never lead the daemon outside BACKING.
        os.rename(b("f-70000"), b("f-70000.orig"))
        os.symlink("/etc/passwd", b("f-70000"))
        try:
            got = read_file(m("f-70000"))  # its pages may still be cached from read_ok
            check(got == data["f-70000"], f"a file swapped for a symlink served {got[:60]!r}")
        except OSError as e:
            log(f"file swapped for a symlink: {errno.errorcode.get(e.errno)}")
        os.rename(b("sub"), b("sub.orig"))
        os.symlink("/etc", b("sub"))
        try:
            with open(m("sub", "passwd"), "rb") as f:
                got = f.read()
                check(got == b"not the real one\n", f"served {got[:40]!r} through a swapped dir")
        except OSError as e:
            log(f"directory swapped for a symlink: {errno.errorcode.get(e.errno)}")
        read_ok(mp, "f-300000", data)
    log("backing changes after the mount: ok")


def unreadable_dir(tmp):
    """A directory the scan cannot read answers with EACCES. The daemon runs
    as root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH (so mode 000 stops
    it) while this test keeps them, so the kernel's own permission check
    lets the request through to the daemon."""
    backing, mp = os.path.join(tmp, "locked-tree"), os.path.join(tmp, "mnt3")
    os.makedirs(os.path.join(backing, "locked"))
    os.makedirs(mp)
    data = make_files(backing, [10, 20000])
    open(os.path.join(backing, "locked", "secret"), "w").close()
    os.chmod(os.path.join(backing, "locked"), 0)
    with mounted(backing, mp, prefix=NO_DAC_CAPS) as mnt:
        check("could not be read" in mnt.stderr, f"no unreadable-dir warning: {mnt.stderr!r}")
        locked = os.path.join(mp, "locked")
        check(os.lstat(locked).st_mode & 0o777 == 0, "locked/ should show mode 000")
        expect_errno(errno.EACCES, os.listdir, locked, what="listdir of an unreadable dir")
        expect_errno(errno.EACCES, os.stat, os.path.join(locked, "secret"),
                     what="lookup inside an unreadable dir")
        read_ok(mp, "f-20000", data)
    log("unreadable directory: ok")


# (label, bytes written to .clairfs/control, what status's error must say)
HOSTILE = [
    ("overflowing number", b'{"seed": 1e999, "batch_size": 4}', "number out of range: 1e999"),
    ("deep nesting", b'{"ranks": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested deeper than 64"),
    ("invalid UTF-8", b'{"root": "tr\xffin"}', "invalid UTF-8 at byte 12"),
    ("duplicate key", b'{"seed": 1, "batch_size": 4, "seed": 2}', "duplicate key 'seed'"),
    ("huge string", b'{"root": "' + b"a" * 200000 + b'"}', "string longer than 65536 bytes"),
    ("float count", b'{"batch_size": 4.5}', "invalid value for batch_size: 4.5"),
    ("negative rank", b'{"ranks": [-1]}', "ranks must be a list of integers"),
    ("newline in a key", b'{"a\\nb": 1}', "unknown key 'a\\nb'"),
]


def write_control(path, data):
    """One open, one write, one close; the refusal may come at either."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def hostile_registrations(tmp):
    backing, mp = os.path.join(tmp, "hostile"), os.path.join(tmp, "mnt4")
    os.makedirs(backing)
    os.makedirs(mp)
    data = make_files(backing, [10, 5000, 300000])
    with open(os.path.join(backing, "garbage.txt"), "wb") as f:
        f.write(b"f-10\n\x00\xff\xfe\r\x1b[2J\n" * 100)
    with open(os.path.join(backing, "huge.txt"), "wb") as f:
        f.truncate((1 << 30) + 1)  # sparse: costs no disk
    manifests = [
        ("garbage manifest", b'{"layout": "list", "manifest": "garbage.txt"}',
         "manifest line 2 '\\x00\\xff\\xfe\\r\\x1b[2J'"),
        ("huge manifest", b'{"layout": "list", "manifest": "huge.txt"}',
         "manifest 'huge.txt' is larger than 1 GiB"),
    ]
    with mounted(backing, mp):
        control = os.path.join(mp, ".clairfs", "control")
        for label, text, reason in HOSTILE + manifests:
            expect_errno(errno.EINVAL, write_control, control, text, what=label)
            check(daemon_pids(mp) and is_mounted(mp), f"{label}: the daemon died")
            with open(os.path.join(mp, ".clairfs", "status")) as f:
                error = json.load(f)["error"]
            check(isinstance(error, str) and reason in error and "\n" not in error,
                  f"{label}: status error {error!r} lacks {reason!r}")
            for name in data:
                read_ok(mp, name, data)
            log(f"{label}: EINVAL, status says {error[:70]!r}")
        write_control(control, b'{"seed": 1, "batch_size": 2, "layout": "sorted"}')
        with open(os.path.join(mp, ".clairfs", "status")) as f:
            check(json.load(f)["registered"], "a good registration after the bad ones failed")
    log("hostile registrations: all refused, the mount kept serving")


def hostile_files(tmp):
    """The same JSON from files: mount --register (exit 1) and --config (exit 2)."""
    backing, mp = os.path.join(tmp, "public"), os.path.join(tmp, "mnt5")
    os.makedirs(mp)
    reg = os.path.join(tmp, "overflow.json")
    with open(reg, "wb") as f:
        f.write(HOSTILE[0][1])
    r = run([CLAIRFS, "mount", backing, mp, "--register", reg], timeout=60)
    lines = [l for l in r.stderr.splitlines() if l.strip() and "indexed" not in l]
    check(r.returncode == 1 and len(lines) == 1 and "number out of range: 1e999" in lines[0],
          f"mount --register 1e999: exit {r.returncode}, stderr {r.stderr!r}")
    check(not is_mounted(mp) and not daemon_pids(mp), "mount --register 1e999 left a mount")
    cfg = os.path.join(tmp, "dup.json")
    with open(cfg, "w") as f:
        f.write('{"threads": 4, "threads": 8}')
    expect_refusal("--config duplicate key", [CLAIRFS, "mount", backing, mp, "--config", cfg], 2,
                   mp, "duplicate key 'threads'")


def test():
    with temp_dir() as tmp:
        run_cases(*runtime_cases(tmp), *usage_cases(tmp),
                  ("files changed after the mount", lambda: backing_changes(tmp)),
                  ("unreadable directory", lambda: unreadable_dir(tmp)),
                  ("hostile JSON in the control file", lambda: hostile_registrations(tmp)),
                  ("hostile JSON in --register and --config", lambda: hostile_files(tmp)))


if __name__ == "__main__":
    main(test)
