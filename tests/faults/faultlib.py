# SPDX-License-Identifier: MIT
"""What the fault tests share: faultfs (the fault-injecting passthrough file
system built next to clairfs) started and stopped around a test, its rules
and counters, a small dataset with the digest of every file, and the
status and control files of a clairfs mount."""
import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

FAULTFS = os.environ.get("FAULTFS") or os.path.join(
    os.path.dirname(ml.CLAIRFS), "..", "tests", "faultfs", "faultfs")
CONTROL = ".faultfs"


class FaultFs:
    def __init__(self, source, mp, proc):
        self.source, self.mp, self.proc = source, mp, proc

    def rule(self, *lines):
        """Writes rule lines to the control file (e.g. "eio /class01/img0003")."""
        with open(os.path.join(self.mp, CONTROL), "w") as f:
            f.write("".join(line + "\n" for line in lines))

    def counters(self):
        """{"eio": n, "short": n, "delay": n, "hang": n, "corrupt": n,
        "enospc": n, "hung_now": n}"""
        with open(os.path.join(self.mp, CONTROL)) as f:
            first = f.readline().split()
        return {k: int(v) for k, v in (w.split("=") for w in first)}


@contextlib.contextmanager
def faultfs(source, mp):
    """faultfs serving source on mp in the foreground; on exit it is told to
    stop (which releases hung reads), killed if it does not, and detached."""
    ml.check(os.access(FAULTFS, os.X_OK), f"faultfs not built at {FAULTFS} (set FAULTFS)")
    proc = subprocess.Popen([FAULTFS, source, mp, "-f"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        up = ml.wait_until(lambda: proc.poll() is not None or ml.is_mounted(mp, None), 20)
        ml.check(up and proc.poll() is None, f"faultfs did not come up on {mp}: "
                 f"{proc.stderr.read() if proc.poll() is not None else 'timeout'}")
        yield FaultFs(source, mp, proc)
    finally:
        stop(proc, mp)


def stop(proc, mp):
    with contextlib.suppress(OSError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    ml.lazy_unmount(mp)


# ---------------------------------------------------------------- dataset

def make_dataset(root, classes=4, per_class=40, max_size=120_000, seed=11):
    """An ImageFolder tree of random bytes; returns {relative path: sha1}."""
    rng = random.Random(seed)
    out = {}
    for c in range(classes):
        d = os.path.join(root, f"class{c:02d}")
        os.makedirs(d)
        for i in range(per_class):
            rel = f"class{c:02d}/img{i:04d}.jpg"
            data = rng.randbytes(rng.randint(1, max_size))
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
            out[rel] = hashlib.sha1(data).hexdigest()
    return out


def sha1_of(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def read_and_compare(mp, expected, names=None):
    """Reads each file through the mount; returns ({rel: errno} of failed
    reads, [rel] of files whose bytes differ from the backing file's)."""
    failed, wrong = {}, []
    for rel in names if names is not None else sorted(expected):
        try:
            got = sha1_of(os.path.join(mp, rel))
        except OSError as e:
            failed[rel] = e.errno
            continue
        if got != expected[rel]:
            wrong.append(rel)
    return failed, wrong


def drop_caches():
    """The kernel keeps pages read through the mount (keep_cache); without
    dropping them a second read never reaches the daemon."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


# ---------------------------------------------------------------- clairfs

# The control directory's two documents, shared with every suite.
status = ml.status
register = ml.register


# A plain shuffle=True job read by the main process (num_workers 0), so a
# single reader that opens the files in job_order() follows it exactly.
JOB_KEYS = dict(sampler="random", generator="explicit", seed=7, batch_size=4, num_workers=0)


def job_order(backing, **keys):
    """The job's epoch-0 order as relative paths, from `clairfs order` (the
    same emulation the daemon plans with)."""
    args = ["order", "--root", backing, "--paths"]
    for k, v in {**JOB_KEYS, **keys}.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    r = ml.clairfs(*args, timeout=60)
    ml.check(r.returncode == 0, f"clairfs order failed: {r.stderr.strip()}")
    return json.loads(r.stdout.splitlines()[0])


def timed(fn, *args):
    t = time.monotonic()
    out = fn(*args)
    return out, time.monotonic() - t


# clairfs keeps in its tiers only files up to --mem / 16 (larger ones are
# read from the backing store each time); make_dataset's default sizes fit
# under this RAM budget, which is small enough that most files go to SSD.
SMALL_MEM = str(2 << 20)
