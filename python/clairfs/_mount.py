# SPDX-License-Identifier: MIT
"""Finding the clairfs mount above a path, writing its control file and
reading its status (clairfs-control(5))."""
import errno
import json
import os

from ._errors import ClairfsError

FSTYPE = "fuse.clairfs"


def _unescape(field):
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    out, i = [], 0
    while i < len(field):
        octal = field[i + 1:i + 4]
        if field[i] == "\\" and len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def clairfs_mounts(mountinfo="/proc/self/mountinfo"):
    """The mount points of clairfs mounts this process sees."""
    points = []
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                if "-" not in fields:
                    continue
                sep = fields.index("-")
                if sep + 1 < len(fields) and fields[sep + 1] == FSTYPE:
                    points.append(_unescape(fields[4]))
    except OSError as e:
        raise ClairfsError(f"cannot read {mountinfo}: {e.strerror}") from e
    return points


def find_mount(path):
    """(mount point, path relative to it) of the innermost clairfs mount
    holding `path`, a file or directory."""
    real = os.path.realpath(os.fspath(path))
    best = None
    for mp in clairfs_mounts():
        if real == mp or real.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best):
                best = mp
    if best is None:
        raise ClairfsError(f"{real} is not inside a clairfs mount (mount the dataset with "
                           "`clairfs mount BACKING MOUNTPOINT` and read it from there)")
    rel = os.path.relpath(real, best)
    return best, "" if rel == "." else rel


def status(mount):
    """MOUNT/.clairfs/status as a dict."""
    path = os.path.join(mount, ".clairfs", "status")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ClairfsError(f"cannot read {path}: {e.strerror}") from e
    except ValueError as e:
        raise ClairfsError(f"{path} is not JSON: {e}") from e


def write_control(mount, body):
    """Writes one registration in one write(2); a refusal (EINVAL, or EBUSY
    for a job name another process's running job holds) raises ClairfsError
    with the mount's reason from its status."""
    path = os.path.join(mount, ".clairfs", "control")
    text = json.dumps(body) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError as e:
        raise _write_error(mount, path, e) from e
    try:
        try:
            if os.write(fd, text.encode()) != len(text.encode()):
                raise OSError(errno.EIO, "short write")
        finally:
            # A registration the daemon can judge only whole is refused at close.
            os.close(fd)
    except OSError as e:
        raise _write_error(mount, path, e) from e


def _write_error(mount, path, e):
    if e.errno in (errno.EINVAL, errno.EBUSY):
        try:
            reason = status(mount).get("error") or "(status gives no reason)"
        except ClairfsError as s:
            reason = str(s)
        return ClairfsError(f"{mount} refused the registration: {reason}")
    if e.errno in (errno.EACCES, errno.EPERM):
        return ClairfsError(f"cannot write {path}: {e.strerror} (only root, the user who mounted "
                            "it and its --control-owner may register)")
    return ClairfsError(f"cannot write {path}: {e.strerror}")
