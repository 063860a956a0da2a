#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""clairfs against real torch at the sizes where torch changed algorithm.

1. randperm around UINT32_MAX / 20 = 214,748,364: from torch 2.6 on, a
   randperm of that many samples or more is an inside-out Fisher-Yates with
   64-bit draws; one sample fewer keeps the 1.13 loop. For n = 214,748,363
   and 214,748,364 (under torch 1.13, whose loop is the same on both sides,
   the threshold alone), epoch 0 of DataLoader(shuffle=True, generator=
   Generator().manual_seed(SEED)) from real torch (torch_large_n.py: the
   loader's base_seed draw, then RandomSampler's randperm) must equal
   `clairfs order` for the same job told the same torch_version: a SHA-256
   of the whole order (clairfs's --binary output, hashed as it streams;
   --binary is first shown equal to the JSON order at n = 100,003) plus
   ~70 positions compared one by one. How many draws torch's randperm took
   (n - 1 or 2n) is checked against the algorithm the torch_version implies,
   and at n = 214,748,364 clairfs at the other level must differ from torch
   (so the comparison can tell the algorithms apart).
2. RandomSampler(replacement=True, num_samples=1000) for n around 2^28 and
   up to 2^32 - 1: from torch 2.7 on, randint draws 64 bits for ranges of
   2^28 or more. Real DataLoaders (torch_orders.py), global and explicit
   generator, 2 epochs, against clairfs; at n >= 2^28 clairfs at the other
   level must differ.

Under Debian's torch 1.13 (/usr/bin/python3), or with CLAIRFS_ORDER_TORCH=2.x
the torch 2.x venv (meson's order_large_n_2x; tests/order/torch_python.py).
Takes 1-2 minutes on 2 cores and a few GiB of memory (torch's int64
permutation, clairfs's, and the parsing). Exit 0 pass, 1 fail, 77 only when
the torch python cannot import torch (in CI: 1).

usage: test_large_n.py [--part randperm|replacement]..."""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import torch_python

HERE = os.path.dirname(os.path.abspath(__file__))
CLAIRFS = os.environ.get("CLAIRFS") or os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                    "build", "src", "clairfs")
RANDPERM_THRESHOLD = (2**32 - 1) // 20   # 214,748,364
RANDINT_THRESHOLD = 2**28
SEED = 20260101
READ = 1 << 25


def log(msg):
    print(msg, flush=True)


def level(version):
    """The sampling level a torch version has, as docs/pytorch.md ("Torch versions") documents it:
    1.13 (1.x to 2.5), 2.6, 2.7 (2.7 and later)."""
    major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    if major == 1 or minor <= 5:
        return "1.13"
    return "2.6" if minor == 6 else "2.7"


def other_randperm_level(version):
    """A torch_version on the other side of 2.6's randperm change."""
    return "2.7" if level(version) == "1.13" else "1.13"


def other_randint_level(version):
    """A torch_version on the other side of 2.7's randint change."""
    return "2.6" if level(version) == "2.7" else "2.7"


# ------------------------------------------------------------------ randperm

def clairfs_order_args(n, torch_version):
    return [CLAIRFS, "order", "--n", str(n), "--seed", str(SEED), "--generator", "explicit",
            "--epochs", "1", "--torch-version", torch_version]


def clairfs_order_digest(n, torch_version, positions, stop_if_differs=None):
    """Runs clairfs --binary for epoch 0 of the explicit-generator loader and
    digests its output as it streams: (sha256 of the order as little-endian
    int32, {position: index}, count, seconds). --binary (a uint64 count, then
    uint32 indices) is hashed as it comes, where 2 GB of JSON took parsing
    for a minute per order; check_binary_is_json proves it is the same order.
    With stop_if_differs ({position: index}), it stops at the first of those
    positions whose index differs and returns digest None: that alone proves
    the orders differ."""
    t0 = time.monotonic()
    proc = subprocess.Popen(clairfs_order_args(n, torch_version) + ["--binary"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = proc.stdout.read(8)
    if len(head) != 8:
        proc.kill()
        raise AssertionError(f"clairfs --binary wrote {len(head)} bytes, no count: "
                             f"{proc.stderr.read().decode(errors='replace')[:300]}")
    announced = int.from_bytes(head, "little")
    h = hashlib.sha256()
    want = sorted(positions)
    got = {}
    count = 0
    carry = b""
    while True:
        data = proc.stdout.read(READ)
        if not data:
            break
        data = carry + data
        whole = len(data) - len(data) % 4
        body, carry = data[:whole], data[whole:]
        # Indices are < 2^31 here, so uint32 and torch's int32 bytes agree.
        h.update(body)
        values = np.frombuffer(body, dtype="<u4")
        while want and want[0] < count + len(values):
            p = want.pop(0)
            got[p] = int(values[p - count])
            if stop_if_differs is not None and got[p] != stop_if_differs[p]:
                proc.kill()
                proc.wait()
                return None, got, count + len(values), time.monotonic() - t0
        count += len(values)
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise AssertionError(f"clairfs exited {proc.returncode}: {err.strip()[:300]}")
    if carry or count != announced:
        raise AssertionError(f"clairfs --binary announced {announced} indices and wrote "
                             f"{count} and {len(carry)} bytes more")
    return h.hexdigest(), got, count, time.monotonic() - t0


def check_binary_is_json(failures):
    """The --binary output the large orders are digested from is the JSON
    order `clairfs order` prints, for each algorithm (forward and
    inside-out randperm), at a size JSON still affords."""
    n = 100_003
    for tv in ("1.13", "2.7"):
        j = subprocess.run(clairfs_order_args(n, tv), capture_output=True, timeout=120)
        b = subprocess.run(clairfs_order_args(n, tv) + ["--binary"], capture_output=True,
                           timeout=120)
        if j.returncode or b.returncode:
            failures.append(f"binary vs json: clairfs exited {j.returncode}/{b.returncode}: "
                            f"{(j.stderr or b.stderr).decode(errors='replace')[:300]}")
            continue
        as_json = json.loads(j.stdout)
        count = int.from_bytes(b.stdout[:8], "little")
        as_binary = np.frombuffer(b.stdout[8:], dtype="<u4").tolist()
        if count != n or as_binary != as_json or len(as_json) != n:
            failures.append(f"binary vs json at torch_version {tv}: count {count}, "
                            f"{len(as_binary)} binary and {len(as_json)} JSON indices, equal "
                            f"{as_binary == as_json}")
    log(f"--binary equals the JSON order at n={n:,} for torch_version 1.13 and 2.7")


def torch_order(n):
    py, _ = torch_python.python()
    t0 = time.monotonic()
    r = subprocess.run([py, os.path.join(HERE, "torch_large_n.py"), str(n), str(SEED)],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise AssertionError(f"torch_large_n.py {n} exited {r.returncode}: "
                             f"{r.stderr.strip()[-500:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["seconds"] = time.monotonic() - t0
    return out


def check_randperm(version, failures):
    # At level 1.13 both sizes run the same forward loop, so the size below
    # the threshold shows nothing the threshold itself does not (and the
    # 2.x run checks that loop at n - 1): 40 s of torch and clairfs saved.
    sizes = (RANDPERM_THRESHOLD,) if level(version) == "1.13" else (
        RANDPERM_THRESHOLD - 1, RANDPERM_THRESHOLD)
    for n in sizes:
        t = torch_order(n)
        positions = [int(p) for p in t["samples"]]
        want_draws = 2 * n if level(version) != "1.13" and n >= RANDPERM_THRESHOLD else n - 1
        label = f"randperm n={n:,}"
        log(f"{label}: torch {t['torch']} took {t['draws']} draws "
            f"({'inside-out, 64-bit' if t['draws'] == 2 * n else 'forward, 32-bit'}) "
            f"in {t['seconds']:.0f} s")
        if t["draws"] != want_draws:
            failures.append(f"{label}: torch {version} took {t['draws']} draws; torch_version "
                            f"{version} (level {level(version)}) means {want_draws}")
        digest, got, count, secs = clairfs_order_digest(n, version, positions)
        log(f"{label}: clairfs (torch_version {version}) {count:,} indices in {secs:.0f} s, "
            f"sha256 {digest[:16]}..., torch's {t['sha256'][:16]}...")
        if count != n:
            failures.append(f"{label}: clairfs gave {count} indices")
        wrong = [f"[{p}] clairfs {got.get(p)} torch {t['samples'][str(p)]}"
                 for p in positions if got.get(p) != t["samples"][str(p)]]
        if wrong:
            failures.append(f"{label}: {len(wrong)} of {len(positions)} sampled positions "
                            f"differ: {'; '.join(wrong[:6])}")
        if digest != t["sha256"]:
            failures.append(f"{label}: the whole order differs from torch's (sha256 "
                            f"{digest} vs {t['sha256']})")
        if n >= RANDPERM_THRESHOLD:
            other = other_randperm_level(version)
            want = {p: t["samples"][str(p)] for p in positions}
            other_digest, got, _, secs = clairfs_order_digest(n, other, positions, want)
            at = next((p for p in positions if p in got and got[p] != want[p]), None)
            log(f"{label}: clairfs at torch_version {other} (the other algorithm) in {secs:.0f} s: "
                + ("SAME" if other_digest == t["sha256"] else
                   f"differs (first at position {at:,})" if at is not None else
                   "differs (whole order)"))
            if other_digest == t["sha256"]:
                failures.append(f"{label}: clairfs at torch_version {other} gives torch "
                                f"{version}'s order too: the test cannot tell the algorithms apart")


# --------------------------------------------------------------- replacement

def check_replacement(version, failures, tmp):
    ns = [RANDINT_THRESHOLD - 1, RANDINT_THRESHOLD, RANDINT_THRESHOLD + 12345,
          3_000_000_000, 2**32 - 1]
    jobs = []
    for n in ns:
        for generator in ("global", "explicit"):
            jobs.append({"n": n, "seed": SEED + len(jobs), "generator": generator,
                         "sampler": "random", "replacement": True, "num_samples": 1000,
                         "batch_size": 7, "epochs": 2, "pre_draws": 110 if generator == "global" else 0})
    params = os.path.join(tmp, "replacement.json")
    with open(params, "w") as f:
        json.dump(jobs, f)
    py, _ = torch_python.python()
    r = subprocess.run([py, os.path.join(HERE, "torch_orders.py"), params], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        failures.append(f"torch_orders.py exited {r.returncode}: {r.stderr.strip()[-500:]}")
        return
    expected = json.loads(r.stdout)
    differ = 0
    for job, want in zip(jobs, expected):
        label = f"replacement n={job['n']:,} {job['generator']}"
        if "error" in want:
            failures.append(f"{label}: torch refused: {want['error']}")
            continue

        def run(tv):
            cfg = os.path.join(tmp, "job.json")
            with open(cfg, "w") as f:
                json.dump(dict(job, torch_version=tv), f)
            c = subprocess.run([CLAIRFS, "order", "--config", cfg], capture_output=True,
                               text=True, timeout=120)
            if c.returncode != 0:
                return None, c.stderr.strip()
            return [json.loads(line) for line in c.stdout.splitlines()], ""

        got, err = run(version)
        if got != want["orders"]:
            failures.append(f"{label}: clairfs (torch_version {version}) differs from torch"
                            f"{': ' + err if err else ''}; first torch {want['orders'][0][:5]}, "
                            f"clairfs {got[0][:5] if got else None}")
        other, _ = run(other_randint_level(version))
        wide = job["n"] >= RANDINT_THRESHOLD
        if (other != want["orders"]) != wide:
            failures.append(f"{label}: clairfs at torch_version {other_randint_level(version)} "
                            f"{'equals' if wide else 'differs from'} torch {version}; "
                            f"expected the levels to {'differ' if wide else 'agree'} here")
        differ += other != want["orders"]
    log(f"replacement: {len(jobs)} DataLoaders (n from 2^28-1 to 2^32-1, 1000 samples, "
        f"2 epochs) match clairfs at torch_version {version}; clairfs at "
        f"{other_randint_level(version)} differs on {differ} (those with n >= 2^28)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", action="append", choices=["randperm", "replacement"])
    args = ap.parse_args()
    parts = args.part or ["replacement", "randperm"]
    version = torch_python.torch_version()  # exits 77 (CI: 1) without torch
    py, what = torch_python.python()
    log(f"torch {version} from {py} ({what}), level {level(version)}; clairfs {CLAIRFS}")
    failures = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="clairfs-large-n-") as tmp:
        if "replacement" in parts:
            check_replacement(version, failures, tmp)
        if "randperm" in parts:
            check_binary_is_json(failures)
            check_randperm(version, failures)
    log(f"time: {time.monotonic() - t0:.0f} s")
    for f in failures:
        log(f"FAIL {f}")
    if failures:
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
