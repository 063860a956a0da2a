# SPDX-License-Identifier: MIT
"""The load test's side load (tests/stress/loadlib.py): threads in the test
process that rewrite the registration (valid documents must be accepted,
invalid ones refused with EINVAL), read the status (the file, `clairfs
status` and `--json`), start stage passes and sample the daemon's RSS,
each failure one line. Python 3 stdlib only."""
import contextlib
import errno
import json
import os
import random
import threading

import mountlib as ml

def control_path(mp):
    return os.path.join(mp, ".clairfs", "control")


def valid_registration(rng):
    return {"seed": rng.randrange(2**32), "sampler": rng.choice(["random", "sequential"]),
            "generator": rng.choice(["global", "explicit"]),
            "batch_size": rng.choice([1, 4, 16, 64]), "num_workers": rng.choice([0, 2, 4]),
            "epochs": rng.choice([None, 1, 3])}


# Documents the mount must refuse with EINVAL (each for a different reason).
INVALID_REGISTRATIONS = [
    "not json", "[1, 2]", '{"seed": "7"}', '{"batch_size": 0}', '{"bogus": 1}',
    '{"world_size": 2, "ranks": [0]}', '{"root": "no-such-dir"}', '{"n": 12345}',
    '{"sampler": "distributed", "world_size": 2, "ranks": [0, 0]}', '{"seed": 1',
    # What once killed the daemon, and its kin the strict parser refuses.
    '{"seed": 1e999, "batch_size": 4}', '{"seed": 1, "seed": 2}', "[" * 5000,
    '{"batch_size": 4.5}', '{"ranks": [-1]}',
]


def write_control(mp, text):
    """None if the write was accepted, else the errno."""
    try:
        with open(control_path(mp), "w") as f:
            f.write(text)
    except OSError as e:
        return e.errno
    return None


class SideLoad:
    """Threads in the test process: registrations, status reads, stages,
    each recording its counts and its failures (one line each)."""

    def __init__(self, cfg, m, unmounting):
        self.cfg, self.mp, self.pid, self.unmounting = cfg, m.mp, m.pids[0], unmounting
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.failures = []
        self.counts = {"valid_registrations": 0, "invalid_registrations": 0, "status_reads": 0,
                       "status_commands": 0, "stages": 0}
        self.modes, self.stage_states = set(), set()
        self.prefetched = 0
        self.last_status = {}
        self.rss_max = 0
        self.threads = [threading.Thread(target=self.guard, args=(fn,), daemon=True)
                        for fn in (self.register_loop, self.status_loop, self.rss_loop)]

    def fail(self, line):
        if self.unmounting.is_set():  # the mount is going away: expected
            return
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(line)

    def count(self, key):
        with self.lock:
            self.counts[key] += 1

    def guard(self, fn):
        try:
            fn()
        except Exception as e:  # a side-load thread that dies is a failure
            self.fail(f"{fn.__name__}: {type(e).__name__}: {e}")

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
            if t.is_alive():
                self.fail(f"side-load thread {t.name} did not stop within 60 s")

    # The registrations written: this share valid (each must be accepted),
    # the rest from the invalid list (each must fail with EINVAL), drawn
    # from a generator of its own (seed * 1000 + rng_offset).
    valid_share = 0.6
    invalid_documents = INVALID_REGISTRATIONS
    rng_offset = 999

    def valid_document(self, rng):
        return json.dumps(valid_registration(rng))

    def register_loop(self):
        rng = random.Random(self.cfg.seed * 1000 + self.rng_offset)
        while not self.stop.wait(self.cfg.register_every):
            if rng.random() < self.valid_share:
                doc = self.valid_document(rng)
                err = write_control(self.mp, doc)
                self.count("valid_registrations")
                if err is not None:
                    self.fail(f"valid registration {doc} refused: {errno.errorcode.get(err, err)}")
            else:
                doc = rng.choice(self.invalid_documents)
                err = write_control(self.mp, doc)
                self.count("invalid_registrations")
                if err != errno.EINVAL:
                    self.fail(f"invalid registration {doc!r}: expected EINVAL, got "
                              f"{'success' if err is None else errno.errorcode.get(err, err)}")

    def status_loop(self):
        n = 0
        while not self.stop.wait(self.cfg.status_every):
            self.read_status_file()
            n += 1
            if n % 10 == 0:
                self.status_commands()

    def read_status_file(self):
        with open(os.path.join(self.mp, ".clairfs", "status")) as f:
            text = f.read()
        try:
            st = json.loads(text)
        except ValueError as e:
            return self.fail(f"status is not JSON ({e}): {text[:200]!r}")
        self.count("status_reads")
        with self.lock:
            self.modes.add(st.get("mode"))
            self.stage_states.add(st.get("stage", {}).get("state"))
            self.prefetched = max(self.prefetched, st.get("prefetch", {}).get("prefetched", 0))
            self.last_status = st

    def status_commands(self):
        for args in (("status", self.mp), ("status", "--json", self.mp)):
            r = ml.clairfs(*args, timeout=60)
            self.count("status_commands")
            if r.returncode != 0:
                self.fail(f"clairfs {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
            elif "--json" in args:
                try:
                    json.loads(r.stdout)
                except ValueError as e:
                    self.fail(f"clairfs status --json is not JSON ({e}): {r.stdout[:200]!r}")

    def stage(self):
        r = ml.clairfs("stage", self.mp, timeout=60)
        self.count("stages")
        if r.returncode != 0:
            self.fail(f"clairfs stage: exit {r.returncode}: {r.stderr.strip()}")

    def rss_loop(self):
        while not self.stop.wait(0.2):
            rss = proc_status_kib(self.pid, "VmRSS")
            if rss is not None:
                self.rss_max = max(self.rss_max, rss * 1024)


def proc_status_kib(pid, key):
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    return None



# What the last status read before the unmount said, for the figures.
STATUS_FIGURES = [("backing", "files"), ("backing", "bytes"), ("ram", "hits"), ("ram", "misses"),
                  ("ram", "evictions"), ("ram", "bytes"), ("ram", "capacity"),
                  ("prefetch", "prefetched"), ("prefetch", "demand_fetches"), ("registrations",)]


def status_figures(st):
    out = {}
    for path in STATUS_FIGURES:
        v = st
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        out[".".join(path)] = v
    out["ram.arena.overflows"] = st.get("ram", {}).get("arena", {}).get("overflows")
    return out
