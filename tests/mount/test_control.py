#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The .clairfs/ control directory: hidden from the root's listing but
reachable; a registration written to .clairfs/control is read back and
switches the mode; every invalid registration fails its write or close
with EINVAL, says why in .clairfs/status and leaves the previous
registration running; a different registration over another process's
running job of the same name fails with EBUSY; only the mount's owner may
register; nothing in the dataset can be written; `clairfs register`,
`unregister`, `status` and `mount --register` work end to end with their
exit codes."""
import errno
import json
import os
import random
import stat
import subprocess
import time

from mountlib import (AS_NOBODY, CLAIRFS, SOURCE_ROOT, check, clairfs, daemon_pids, expect_errno,
                      in_thread, is_mounted, log, main, mounted, raw_readdir, run, run_cases,
                      temp_dir, tree_checksum)

CLASSES = ["bird", "cat", "dog"]
PER_CLASS = 4
N = len(CLASSES) * PER_CLASS
REQUIRED_STATUS = ["registered", "error", "mode", "epoch", "match_rate", "backing.reads",
                   "backing.bytes", "ram.bytes", "ram.capacity", "ram.hits", "ram.misses",
                   "stall_seconds", "prefetch.lead", "ranks", "requests.open",
                   "requests.read", "requests.release", "requests.lookup"]


def make_dataset(backing):
    """An ImageFolder tree under backing/train, a manifest, a stray file."""
    rng = random.Random(5)
    paths = []
    for c in CLASSES:
        os.makedirs(os.path.join(backing, "train", c))
        for i in range(PER_CLASS):
            rel = f"{c}/{i}.jpg"
            with open(os.path.join(backing, "train", rel), "wb") as f:
                f.write(rng.randbytes(rng.randrange(100, 5000)))
            paths.append(rel)
    with open(os.path.join(backing, "train.txt"), "w") as f:
        f.write("\n".join(paths) + "\n")
    with open(os.path.join(backing, "README"), "w") as f:
        f.write("not a sample\n")
    os.chmod(backing, 0o755)


class Control:
    def __init__(self, mp):
        self.mp = mp
        self.dir = os.path.join(mp, ".clairfs")
        self.control = os.path.join(self.dir, "control")
        self.status_path = os.path.join(self.dir, "status")

    def status(self):
        with open(self.status_path) as f:
            return json.load(f)

    def registration(self):
        with open(self.control) as f:
            return json.load(f)

    def write(self, text):
        """One open, one write, one close (like echo or Python's write)."""
        with open(self.control, "w") as f:
            f.write(text)

    def write_pieces(self, *pieces):
        fd = os.open(self.control, os.O_WRONLY | os.O_TRUNC)
        try:
            for p in pieces:
                os.write(fd, p.encode())
        finally:
            os.close(fd)

    def register(self, **keys):
        self.write(json.dumps(keys))


def lookup(doc, dotted):
    for part in dotted.split("."):
        check(isinstance(doc, dict) and part in doc, f"status lacks {dotted}: {doc}")
        doc = doc[part]
    return doc


def check_data(backing, mp):
    for c in CLASSES:
        for i in range(PER_CLASS):
            rel = os.path.join("train", c, f"{i}.jpg")
            with open(os.path.join(backing, rel), "rb") as a, open(os.path.join(mp, rel), "rb") as b:
                check(a.read() == b.read(), f"{rel} differs through the mount")


# ---------------------------------------------------------------- cases

def listing_case(mp):
    names = os.listdir(mp)
    check(".clairfs" not in names, f"root listing shows .clairfs: {names}")
    check(all(n != b".clairfs" for n, _, _ in raw_readdir(mp)), "readdir(3) shows .clairfs")
    check(sorted(names) == ["README", "train", "train.txt"], f"root lists {names}")
    # torchvision's find_classes: every directory entry of the root is a class.
    classes = sorted(e.name for e in os.scandir(os.path.join(mp, "train")) if e.is_dir())
    check(classes == CLASSES, f"classes {classes}")
    for fn in (os.stat, os.lstat):
        st = fn(os.path.join(mp, ".clairfs"))
        check(stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755,
              f"{fn.__name__}(.clairfs): mode {st.st_mode:o}")
    c = Control(mp)
    check(sorted(os.listdir(c.dir)) == ["control", "status"], f".clairfs lists {os.listdir(c.dir)}")
    inner = sorted((n, t) for n, _, t in raw_readdir(c.dir))
    check(inner == [(b".", "dir"), (b"..", "dir"), (b"control", "reg"), (b"status", "reg")],
          f"readdir(.clairfs) {inner}")
    st = os.stat(c.control)
    check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == os.geteuid(),
          f"control: mode {st.st_mode:o} uid {st.st_uid}")
    st = os.stat(c.status_path)
    check(stat.S_IMODE(st.st_mode) == 0o444, f"status: mode {st.st_mode:o}")
    expect_errno(errno.ENOENT, os.stat, os.path.join(c.dir, "nothing"))
    expect_errno(errno.ENOTDIR, os.stat, os.path.join(c.control, "x"))
    log("listing: .clairfs hidden from the root, reachable, lists control and status")


def unregistered_case(mp):
    s = Control(mp).status()
    for key in REQUIRED_STATUS:
        lookup(s, key)
    check(s["registered"] is False and s["error"] is None and s["mode"] == "unregistered",
          f"fresh mount status: {s}")
    check(Control(mp).registration() == {}, "control of a fresh mount is not {}")
    log("status of a fresh mount has every key, mode unregistered")


def requests_case(mp):
    """status counts the kernel's requests by kind: each open of a dataset
    file is one OPEN and one RELEASE, and each status read is one more."""
    c = Control(mp)
    before = c.status()["requests"]  # rendered at its own OPEN, counted
    rels = [os.path.join("train", "cat", f"{i}.jpg") for i in range(PER_CLASS)]
    for rel in rels:
        with open(os.path.join(mp, rel), "rb") as f:
            check(len(f.read()) > 0, f"{rel} read empty")
    # RELEASE is asynchronous: the kernel sends it after close() returns.
    deadline = time.monotonic() + 10
    reads_of_status = 0
    while True:
        after = c.status()["requests"]
        reads_of_status += 1
        grew = {k: after[k] - before.get(k, 0) for k in after}
        if grew["release"] >= len(rels) + reads_of_status or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(grew["open"] == len(rels) + reads_of_status,
          f"{len(rels)} files and {reads_of_status} status reads made {grew['open']} OPENs: {grew}")
    check(grew["release"] >= len(rels) + reads_of_status - 1 and grew["read"] >= 1,
          f"requests after {len(rels)} files: {grew}")
    check(set(after) >= {"lookup", "getattr", "open", "read", "release", "forget"},
          f"requests lacks kinds: {sorted(after)}")
    log(f"requests: {len(rels)} files and {reads_of_status} status reads counted as "
        f"{grew['open']} OPEN, {grew['read']} READ, {grew['release']} RELEASE")


def register_case(mp):
    c = Control(mp)
    c.register(seed=42, batch_size=4, root="train", epochs=3, num_workers=2, n=N)
    s = c.status()
    check(s["registered"] is True and s["error"] is None, f"after registering: {s}")
    check(s["mode"] == "clairvoyant", f"mode {s['mode']} after registering")
    r = c.registration()
    check(r["seed"] == 42 and r["batch_size"] == 4 and r["root"] == "train" and r["epochs"] == 3
          and r["num_workers"] == 2 and r["n"] == N and r["ranks"] == [0], f"control reads {r}")
    check(r["sampler"] == "random" and r["shuffle"] is True and r["num_samples"] is None,
          f"defaults missing from {r}")
    # Reading the registration back and writing it again changes nothing.
    c.write(json.dumps(r))
    check(c.registration() == r, "re-writing the registration read back changed it")
    # In pieces, as `{ printf a; printf b; } > control` writes.
    c.write_pieces('{"seed": 7, "root": ', '"train", "batch_size"', ': 2}\n')
    check(c.registration()["seed"] == 7, "a registration written in pieces was not applied")
    r = run(["sh", "-c", f"echo '{{\"seed\": 8, \"root\": \"train\"}}' > '{c.control}'"])
    check(r.returncode == 0 and c.registration()["seed"] == 8, f"echo > control: {r.stderr}")
    check(os.stat(c.control).st_size == len(open(c.control).read()), "control's size is stale")
    check(c.status()["registrations"] >= 4, "registrations not counted")
    log("registering: written whole, in pieces and by echo; read back with defaults")


def same_again_case(mp):
    """The same registration written again (every rank of a node writing
    it) keeps the running job and its counts; a different one replaces it."""
    c = Control(mp)
    keys = dict(seed=11, batch_size=2, root="train", num_workers=0, n=N)
    c.register(**keys)
    with open(os.path.join(mp, "train", "bird", "0.jpg"), "rb") as f:
        f.read()
    opens = lambda: c.status()["jobs"][0]["loaders"][0]["run_opens"]  # noqa: E731
    check(opens() == 1, f"one open after registering, status says {opens()}")
    count = c.status()["registrations"]
    c.register(**keys)
    check(opens() == 1, f"the same registration again reset the job: run_opens {opens()}")
    c.write(json.dumps(c.registration()))  # read back, defaults filled in: still the same
    check(opens() == 1, f"the registration read back and written reset the job: {opens()}")
    check(c.status()["registrations"] == count + 2, "a repeated registration was not counted")
    c.register(**dict(keys, seed=12))
    check(opens() == 0, f"a different seed did not replace the job: run_opens {opens()}")
    log("the same registration again: job kept (run_opens 1); another seed: replaced")


# A training script's process: registers argv[2] without a job name, holds
# the job's first three files open (sequential, batch 1: the first three
# it predicts) and runs until its stdin closes.
HOLDER_SCRIPT = r"""
import os, sys
mp = sys.argv[1]
with open(mp + "/.clairfs/control", "w") as f:
    f.write(sys.argv[2])
held = [open(os.path.join(mp, "train", "bird", f"{i}.jpg"), "rb") for i in range(3)]
for f in held:
    f.read()
print("ready", flush=True)
sys.stdin.read()
"""

# The Python helper's write (what clairfs.register() ends in) of argv[3] to
# mount argv[2]; exit 3 with the message of the ClairfsError it raised.
HELPER_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from clairfs import ClairfsError
from clairfs._mount import write_control
try:
    write_control(sys.argv[2], json.loads(sys.argv[3]))
except ClairfsError as e:
    print(e)
    sys.exit(3)
"""


def busy_case(mp):
    """Two training scripts on one mount register without a job name: while
    the first one's job runs, the second's different registration fails
    with EBUSY, and the reason names the job and the way out; the first job
    goes on. Under a name of its own it is added beside the first; with
    replace it replaces it."""
    c = Control(mp)
    first = {"root": "train", "sampler": "sequential", "batch_size": 1}
    other = {"root": "train", "sampler": "sequential", "batch_size": 2}
    other_flags = ["--root", "train", "--sampler", "sequential", "--batch-size", "2"]

    def default_job(s):
        return next((j for j in s.get("jobs") or [] if j.get("id") == "default"), {})

    holder = subprocess.Popen(["/usr/bin/python3", "-c", HOLDER_SCRIPT, mp, json.dumps(first)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(holder.stdout.readline().strip() == "ready", "the first job's process did not start")
        s = c.status()
        check(holder.pid in default_job(s).get("pids", []),
              f"the first job's process {holder.pid} is not its: {s.get('jobs')}")
        # This test's process writes next: not the first job's.
        try:
            c.write(json.dumps(other))
            check(False, "a different registration over another process's running job was accepted")
        except OSError as e:
            check(e.errno == errno.EBUSY, f"{errno.errorcode.get(e.errno)} instead of EBUSY")
        s = c.status()
        err = s["error"] or ""
        check("job 'default' is active" in err and '"job"' in err and f"pid {holder.pid}" in err
              and "\n" not in err, f"status error {err!r}")
        check(c.registration()["batch_size"] == 1 and holder.pid in default_job(s).get("pids", []),
              f"the first job did not go on: {c.registration()}, {s.get('jobs')}")
        r = run(["/usr/bin/python3", "-c", HELPER_SCRIPT, os.path.join(SOURCE_ROOT, "python"), mp,
                 json.dumps(other)])
        check(r.returncode == 3 and "refused the registration: job 'default' is active" in r.stdout,
              f"the Python helper: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
        r = clairfs("register", mp, *other_flags)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and
              lines[0].startswith("clairfs: registration refused: job 'default' is active"),
              f"clairfs register: exit {r.returncode}, {r.stderr!r}")

        c.register(job="b", **other)
        s = c.status()
        active = sorted(j["id"] for j in s["jobs"] if j["state"] == "active")
        check(active == ["b", "default"] and s["error"] is None,
              f"with a job name of its own: active jobs {active}, error {s['error']!r}")
        check(clairfs("unregister", mp, "--job", "b").returncode == 0, "unregister --job b failed")

        r = clairfs("register", mp, "--replace", *other_flags)
        check(r.returncode == 0, f"clairfs register --replace: exit {r.returncode}, {r.stderr!r}")
        check(c.registration()["batch_size"] == 2, f"--replace did not replace: {c.registration()}")
    finally:
        holder.stdin.close()
        holder.kill()
        holder.wait()
        c.write("{}")
    log("busy: another process's running job 'default' kept (EBUSY, Python helper and CLI "
        "refused), a named job added beside it, --replace replaced it")


INVALID = [
    # (label, text, words the reason must contain)
    ("not JSON", "seed=42", "not valid JSON"),
    ("truncated JSON", '{"seed": 4', "not valid JSON"),
    ("JSON array", "[1, 2]", "JSON object"),
    ("unknown key", '{"seed": 1, "frobnicate": 1}', "frobnicate"),
    ("string for batch_size", '{"batch_size": "256"}', "batch_size must be a number"),
    ("batch_size 0", '{"batch_size": 0}', "batch_size"),
    ("seed below -2^63", '{"seed": -9223372036854775809}', "seed"),
    ("seed as float", '{"seed": 4.5}', "seed"),
    ("rank not below world_size",
     '{"sampler": "distributed", "world_size": 2, "ranks": [2]}', "world_size 2"),
    ("rank instead of ranks", '{"rank": 0}', "ranks"),
    ("missing root", '{"root": "val"}', "val"),
    ("n mismatch", json.dumps({"root": "train", "n": N + 1}), str(N + 1)),
    ("list with a missing manifest",
     '{"root": "train", "layout": "list", "manifest": "missing.txt"}', "missing.txt"),
    ("list without manifest", '{"root": "train", "layout": "list"}', "manifest"),
]


def invalid_case(backing, mp, how):
    """Every invalid registration fails (write or close) with EINVAL, status
    names the problem, the previous registration keeps running."""
    c = Control(mp)
    c.register(seed=1234, root="train", batch_size=3)
    before, mode = c.registration(), c.status()["mode"]
    failures = []
    for label, text, words in INVALID:
        try:
            if how == "whole":
                c.write(text)
            else:  # byte by byte: the error may only come at close
                c.write_pieces(*text)
            failures.append(f"{label}: accepted")
            continue
        except OSError as e:
            if e.errno != errno.EINVAL:
                failures.append(f"{label}: {errno.errorcode.get(e.errno)} instead of EINVAL")
        s = c.status()
        if not isinstance(s["error"], str) or words.lower() not in s["error"].lower():
            failures.append(f"{label}: status error {s['error']!r} lacks {words!r}")
        if "\n" in (s["error"] or ""):
            failures.append(f"{label}: error is not one line")
        if c.registration() != before or s["mode"] != mode or not s["registered"]:
            failures.append(f"{label}: the previous registration was not kept")
    for f in failures:
        log(f"  {f}")
    check(not failures, f"{len(failures)} invalid registrations were not refused properly")
    check_data(backing, mp)
    c.register(seed=1234, root="train", batch_size=3)
    check(c.status()["error"] is None, "a good registration did not clear the error")
    log(f"invalid ({how}): {len(INVALID)} registrations refused with EINVAL, previous one kept")


def unregister_case(mp):
    c = Control(mp)
    for text in ("{}", '{"unregister": true}'):
        c.register(seed=3, root="train")
        c.write(text)
        s = c.status()
        check(s["registered"] is False and s["mode"] == "unregistered", f"{text}: status {s}")
        check(c.registration() == {}, f"{text}: control reads {c.registration()}")
    log("unregistering with {} and {\"unregister\": true}")


def readonly_case(backing, mp, before):
    c = Control(mp)
    f = os.path.join(mp, "train", "cat", "0.jpg")
    new = os.path.join(mp, "new")
    ops = [
        ("open data O_WRONLY", lambda: os.close(os.open(f, os.O_WRONLY))),
        ("open data O_RDWR", lambda: os.close(os.open(f, os.O_RDWR))),
        ("open data O_TRUNC", lambda: os.close(os.open(f, os.O_RDONLY | os.O_TRUNC))),
        ("truncate data", lambda: os.truncate(f, 0)),
        ("create", lambda: os.close(os.open(new, os.O_WRONLY | os.O_CREAT, 0o644))),
        ("create in .clairfs", lambda: os.close(os.open(os.path.join(c.dir, "x"),
                                                        os.O_WRONLY | os.O_CREAT, 0o644))),
        ("mkdir", lambda: os.mkdir(new)),
        ("rmdir", lambda: os.rmdir(os.path.join(mp, "train", "cat"))),
        ("unlink data", lambda: os.unlink(f)),
        ("unlink control", lambda: os.unlink(c.control)),
        ("rmdir .clairfs", lambda: os.rmdir(c.dir)),
        ("rename", lambda: os.rename(f, new)),
        ("chmod data", lambda: os.chmod(f, 0o600)),
        ("chmod control", lambda: os.chmod(c.control, 0o666)),
        ("utime data", lambda: os.utime(f, (1, 1))),
        ("symlink", lambda: os.symlink("train", new)),
    ]
    failures = []
    for what, op in ops:
        try:
            op()
            failures.append(f"{what}: succeeded")
        except OSError as e:
            if e.errno != errno.EROFS:
                failures.append(f"{what}: {errno.errorcode.get(e.errno)} instead of EROFS")
    # The status is read-only even for root.
    try:
        with open(c.status_path, "w") as fh:
            fh.write("{}")
        failures.append("writing status succeeded")
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EROFS):
            failures.append(f"writing status: {e}")
    for f_ in failures:
        log(f"  {f_}")
    check(not failures, f"{len(failures)} writes were not refused")
    check(tree_checksum(backing) == before, "the backing tree changed")
    check_data(backing, mp)
    log(f"read-only: {len(ops)} writes to the dataset refused with EROFS, dataset unchanged")


NOBODY_SCRIPT = r"""
import errno, json, sys
mp = sys.argv[1]
json.load(open(mp + "/.clairfs/status"))
try:
    with open(mp + "/.clairfs/control", "w") as f:
        f.write('{"seed": 99}')
except OSError as e:
    sys.exit(0 if e.errno == errno.EACCES else 3)
sys.exit(4)
"""


def nobody_case(mp):
    c = Control(mp)
    c.register(seed=5, root="train")
    r = run([*AS_NOBODY, "/usr/bin/python3", "-c", NOBODY_SCRIPT, mp])
    check(r.returncode == 0, f"nobody: exit {r.returncode} (3: not EACCES, 4: write accepted); "
          f"{r.stderr.strip()}")
    check(c.registration()["seed"] == 5, "nobody changed the registration")
    r = clairfs("register", mp, "--seed", "6", "--root", "train", prefix=AS_NOBODY)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and "Permission denied" in lines[0],
          f"clairfs register as nobody: exit {r.returncode}, {r.stderr!r}")
    r = clairfs("status", mp, prefix=AS_NOBODY)
    check(r.returncode == 0 and "mode:" in r.stdout, f"clairfs status as nobody: {r.stderr!r}")
    log("nobody: reads status, cannot write control (EACCES), register exits 1")


def cli_case(tmp, mp):
    c = Control(mp)

    def expect(args, rc, prefix_line=None, **kw):
        r = clairfs(*args, **kw)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == rc, f"clairfs {' '.join(args)}: exit {r.returncode}, expected {rc}; "
              f"{r.stderr!r}")
        if rc != 0:
            check(len(lines) == 1 and lines[0].startswith("clairfs: "),
                  f"clairfs {' '.join(args)}: stderr {r.stderr!r}")
            if prefix_line:
                check(lines[0].startswith(prefix_line), f"{lines[0]!r} lacks {prefix_line!r}")
        return r

    expect(["register", mp, "--seed", "-42", "--batch-size", "4", "--root",
            os.path.join(mp, "train"), "--num_workers", "2", "--drop-last", "--no-shuffle",
            "--epochs", "2"], 0)
    r = c.registration()
    check(r["seed"] == -42 and r["batch_size"] == 4 and r["root"] == "train"
          and r["num_workers"] == 2 and r["drop_last"] is True and r["shuffle"] is False
          and r["epochs"] == 2, f"clairfs register wrote {r}")
    expect(["register", mp, "--sampler", "distributed", "--world-size", "4", "--ranks", "1,3",
            "--root", "train", "--layout", "list", "--manifest", os.path.join(mp, "train.txt")], 0)
    r = c.registration()
    check(r["ranks"] == [1, 3] and r["manifest"] == "train.txt" and r["layout"] == "list",
          f"clairfs register wrote {r}")
    cfg = os.path.join(tmp, "job.json")
    with open(cfg, "w") as f:
        json.dump({"seed": 11, "root": "train", "batch_size": 8}, f)
    expect(["register", mp, "--config", cfg, "--batch-size", "16"], 0)
    r = c.registration()
    check(r["seed"] == 11 and r["batch_size"] == 16, f"--config then a flag wrote {r}")
    check(c.status()["registered"], "not registered after clairfs register")

    expect(["register", mp, "--batch-size", "0", "--root", "train"], 1,
           "clairfs: registration refused: invalid value for batch_size")
    expect(["register", mp, "--root", "nowhere"], 1, "clairfs: registration refused:")
    check(c.registration()["seed"] == 11, "a refused register changed the registration")
    expect(["register", mp, "--bogus", "1"], 2)
    expect(["register", mp, "--batch-size", "many"], 2)
    expect(["register", mp, "--rank", "0"], 2)
    expect(["register"], 2)
    expect(["register", mp, "--config", os.path.join(tmp, "missing.json")], 2)
    expect(["register", tmp, "--seed", "1"], 1, "clairfs: ")

    r = expect(["status", mp, "--json"], 0)
    s = json.loads(r.stdout)
    check(s["registered"] is True and s["mode"] == "clairvoyant", f"status --json: {s}")
    r = expect(["status", mp], 0)
    for word in ("mode:", "clairvoyant", "ram:", "backing:", "rank 0"):
        check(word in r.stdout, f"clairfs status lacks {word!r}: {r.stdout}")
    expect(["status"], 2)
    expect(["status", mp, "--bogus"], 2)
    expect(["status", tmp], 1)

    expect(["unregister", mp], 0)
    s = json.loads(expect(["status", mp, "--json"], 0).stdout)
    check(s["registered"] is False and s["mode"] == "unregistered", f"after unregister: {s}")
    expect(["unregister"], 2)
    expect(["unregister", tmp], 1)
    log("CLI: register (flags, --config), unregister, status (--json) with exit codes 0/1/2")


def mount_register_case(tmp, backing):
    good = os.path.join(tmp, "good.json")
    with open(good, "w") as f:
        json.dump({"seed": 77, "root": "train", "batch_size": 2, "sampler": "sequential"}, f)
    mp = os.path.join(tmp, "mnt-register")
    os.makedirs(mp)
    with mounted(backing, mp, "--register", good):
        s = Control(mp).status()
        check(s["registered"] is True and s["mode"] == "clairvoyant",
              f"mount --register: status {s}")
        check(Control(mp).registration()["seed"] == 77, "mount --register: wrong registration")
        # This process reads the job's files in its order, from a thread of
        # its own, as a training script would: the job's only process may
        # register it anew, though the mount wrote it.
        done, _, exc = in_thread(check_data, backing, mp)
        check(done and exc is None, f"mount --register: reading the job's files: {exc}")
        pids = Control(mp).status()["jobs"][0]["pids"]
        check(os.getpid() in pids, f"mount --register: the reader {os.getpid()} is not the "
              f"job's: its pids {pids}")
        # The job registered at mount was built before the daemon forked; a
        # new registration replaces (and destroys) it in the daemon. A thread
        # started before the fork once made this write hang for ever. Written
        # from another thread than the reads: both are this one process.
        done, _, exc = in_thread(Control(mp).write,
                                 json.dumps({"seed": 78, "root": "train", "batch_size": 2}))
        check(done and exc is None, f"mount --register: re-registering: {exc}")
        check(Control(mp).registration()["seed"] == 78, "mount --register: re-registration lost")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"seed": 77, "root": "nowhere"}, f)
    for label, path in (("invalid file", bad), ("missing file", os.path.join(tmp, "none.json"))):
        r = clairfs("mount", backing, mp, "--register", path)
        lines = [l for l in r.stderr.splitlines() if l.strip() and "indexed" not in l]
        check(r.returncode == 1, f"mount --register {label}: exit {r.returncode}: {r.stderr!r}")
        check(len(lines) == 1 and lines[0].startswith("clairfs: ") and path in lines[0],
              f"mount --register {label}: stderr {r.stderr!r}")
        check(not is_mounted(mp) and not daemon_pids(mp),
              f"mount --register {label}: left a mount or a daemon")
    log("mount --register: a valid file starts registered, an invalid one mounts nothing")


def test():
    with temp_dir() as tmp:
        os.chmod(tmp, 0o755)  # nobody must reach the mount point
        backing, mp = os.path.join(tmp, "backing"), os.path.join(tmp, "mnt")
        os.makedirs(backing)
        os.makedirs(mp)
        make_dataset(backing)
        before = tree_checksum(backing)
        with mounted(backing, mp, "--allow-other", "--mem", "64M"):
            run_cases(("listing", lambda: listing_case(mp)),
                      ("unregistered status", lambda: unregistered_case(mp)),
                      ("requests", lambda: requests_case(mp)),
                      ("register", lambda: register_case(mp)),
                      ("same again", lambda: same_again_case(mp)),
                      ("busy", lambda: busy_case(mp)),
                      ("invalid, whole writes", lambda: invalid_case(backing, mp, "whole")),
                      ("invalid, byte by byte", lambda: invalid_case(backing, mp, "pieces")),
                      ("unregister", lambda: unregister_case(mp)),
                      ("read-only", lambda: readonly_case(backing, mp, before)),
                      ("nobody", lambda: nobody_case(mp)),
                      ("cli", lambda: cli_case(tmp, mp)))
        run_cases(("mount --register", lambda: mount_register_case(tmp, backing)))
        check(tree_checksum(backing) == before, "the backing tree changed")


if __name__ == "__main__":
    main(test)
