#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How fast `clairfs order` predicts an epoch, next to torch's own randperm.

For each dataset size (default ImageNet-1k, 1,281,167 samples, and
ImageNet-22k, 14,197,122) it times, in one run on the same machine:

- `clairfs order --n N --epochs E --seed 1 --sampler random` and the same with
  `--sampler distributed --world-size 8 --rank 0`: wall time per epoch (the
  whole process, start-up included, divided by E), CPU time and peak RSS
  (from wait4 on the child), with stdout to /dev/null. A second, untimed
  run pipes the output here to check it has exactly E lines of JSON arrays
  of the right length and to count its bytes.
- torch 1.13 (/usr/bin/python3): `torch.randperm(N, generator=g)` per epoch,
  the same plus `.tolist()` (clairfs's output is a list, a tensor is not),
  and one full epoch of `list(DistributedSampler(...))` for rank 0 of 8.
- Optionally (--perf) where clairfs spends its CPU: `perf record -e
  cpu-clock` samples grouped into shuffling (randperm, mt19937) and output
  (number formatting, buffer appends, write).

Needs only the standard library (torch for the torch column).
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PYTHON = "/usr/bin/python3"

TORCH_SCRIPT = r"""
import json, sys, time, resource
import torch
from torch.utils.data import DistributedSampler
n, epochs = int(sys.argv[1]), int(sys.argv[2])
out = {"threads": torch.get_num_threads()}
g = torch.Generator().manual_seed(1)
# p = None before each timing: freeing the previous epoch's list (14M int
# objects) must not be charged to the next one.
t = []
for _ in range(epochs):
    p = None
    t0 = time.perf_counter(); p = torch.randperm(n, generator=g); t.append(time.perf_counter() - t0)
out["randperm"] = t
t = []
for _ in range(epochs):
    p = None
    t0 = time.perf_counter(); p = torch.randperm(n, generator=g).tolist(); t.append(time.perf_counter() - t0)
p = None
out["randperm_tolist"] = t
class Sized:
    def __len__(self): return n
s = DistributedSampler(Sized(), num_replicas=8, rank=0, shuffle=True, seed=1)
t = []
for e in range(epochs):
    s.set_epoch(e)
    idx = None
    t0 = time.perf_counter(); idx = list(s); t.append(time.perf_counter() - t0)
    assert len(idx) == (n + 7) // 8
out["distributed_epoch"] = t
out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""

# perf symbol -> bucket, first match wins.
BUCKETS = [
    ("shuffle (randperm, mt19937)", re.compile(
        r"randperm|mt19937|mersenne|Generator|generator|random_sampler|distributed|"
        r"epoch_orders|RandomSampler|DistributedSampler|shuffle", re.I)),
    ("output (to_chars, buffer, write)", re.compile(
        r"to_chars|LineWriter|indices|json_string|fwrite|_IO_|write|append|"
        r"memcpy|memmove|copy_user|rep_movs|fsnotify|vfs_|ksys_|__x64_sys|"
        r"entry_SYSCALL|syscall", re.I)),
    ("memory (page faults, allocation)", re.compile(
        r"page|fault|alloc|malloc|free|memset|clear_|zap|mmap|munmap|lru|folio|"
        r"_raw_spin|mem_cgroup|pte|pmd", re.I)),
]


def run_timed(argv, stdout=subprocess.DEVNULL):
    """Wall seconds, rusage (wait4 on exactly this child), exit code."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    return wall, ru, proc.returncode, err


def count_line_items(argv, epochs, per_epoch):
    """Simple and exact: stream the output, count newlines and commas.
    Each line is `[a,b,...]`, so items per line = commas + 1."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    total, lines, commas, lengths, last = 0, 0, 0, [], b""
    while True:
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        total += len(chunk)
        last = chunk[-1:]
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                commas += chunk.count(b",", start)
                break
            commas += chunk.count(b",", start, nl)
            lengths.append(commas + 1)
            commas = 0
            lines += 1
            start = nl + 1
    err = proc.stderr.read().decode(errors="replace")
    rc = proc.wait()
    problems = []
    if rc != 0:
        problems.append(f"exit {rc}: {err.strip()[:200]}")
    if last != b"\n":
        problems.append("output does not end with a newline")
    if lines != epochs:
        problems.append(f"{lines} lines, expected {epochs}")
    if any(k != per_epoch for k in lengths):
        problems.append(f"items per line {lengths}, expected {per_epoch}")
    return total, problems


def perf_breakdown(argv):
    """Share of cpu-clock samples per bucket, and the top symbols."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000",
                            "-o", data, "--"] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            return None, f"perf record failed: {r.stderr.strip()[:200]}"
        rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                              "--sort", "symbol", "--percent-limit", "0"],
                             capture_output=True, text=True)
    rows = []
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[([.k])\]\s+(.*?)(\s+-\s+-)?\s*$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    shares = {name: 0.0 for name, _ in BUCKETS}
    shares["other"] = 0.0
    for pct, _, sym in rows:
        for name, rx in BUCKETS:
            if rx.search(sym):
                shares[name] += pct
                break
        else:
            shares["other"] += pct
    top = ", ".join(f"{short_symbol(sym)} {pct:.0f}%" for pct, _, sym in rows[:5])
    return shares, top


def short_symbol(sym):
    """std::mersenne_twister_engine<unsigned long, 32ul, ...>::_M_gen_rand
    -> mersenne_twister_engine<>::_M_gen_rand"""
    while True:
        shorter = re.sub(r"<[^<>]*>", "<>", sym)
        if shorter == sym:
            break
        sym = shorter
    sym = sym.replace("(anonymous namespace)::", "").split("(")[0]
    return re.sub(r"^(?:\w+::)+?(?=\w+(?:<>)?(?:::\w+)?$)", "", sym)


def startup_seconds(exe, rounds=5):
    """Median wall time of a trivial `clairfs order --n 1` (process start)."""
    walls = sorted(run_timed([exe, "order", "--n", "1"])[0] for _ in range(rounds))
    return walls[len(walls) // 2]


def git_commit():
    def git(*a):
        return subprocess.run(["git", "-C", REPO] + list(a), capture_output=True,
                              text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "src", "include")
    return commit + (" + uncommitted src/ changes" if dirty else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--sizes", default="1281167,14197122")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed clairfs runs per row (the median is shown)")
    ap.add_argument("--perf", action="store_true", help="add a perf breakdown")
    ap.add_argument("--markdown", action="store_true",
                    help="also print the table as a RESULTS.md section")
    args = ap.parse_args()
    exe = os.path.join(args.build, "src", "clairfs")
    sizes = [int(s) for s in args.sizes.split(",")]
    E = args.epochs

    rows = []
    failures = []
    for n in sizes:
        torch_res = None
        tr = subprocess.run([TORCH_PYTHON, "-c", TORCH_SCRIPT, str(n), str(E)],
                            capture_output=True, text=True)
        if tr.returncode == 0:
            torch_res = json.loads(tr.stdout)
        else:
            print(f"torch unavailable: {tr.stderr.strip()[-300:]}", file=sys.stderr)
        for sampler in ("random", "distributed"):
            argv = [exe, "order", "--n", str(n), "--epochs", str(E), "--seed", "1",
                    "--sampler", sampler]
            per_epoch = n
            if sampler == "distributed":
                argv += ["--world-size", "8", "--rank", "0"]
                per_epoch = (n + 7) // 8
            walls, cpus, rss = [], [], 0
            for _ in range(args.rounds):
                wall, ru, rc, err = run_timed(argv)
                if rc != 0:
                    failures.append(f"{' '.join(argv)}: exit {rc}: {err.strip()[:200]}")
                    break
                walls.append(wall)
                cpus.append(ru.ru_utime + ru.ru_stime)
                rss = max(rss, ru.ru_maxrss)
            if not walls:
                continue
            nbytes, problems = count_line_items(argv, E, per_epoch)
            failures += [f"{' '.join(argv[1:])}: {p}" for p in problems]
            walls.sort()
            cpus.sort()
            row = {
                "n": n, "sampler": sampler, "epochs": E,
                "wall_per_epoch": walls[len(walls) // 2] / E,
                "wall_min_max": (walls[0] / E, walls[-1] / E),
                "cpu_per_epoch": cpus[len(cpus) // 2] / E,
                "rss_mb": rss / 1024, "bytes_per_epoch": nbytes / E,
                "output_ok": not problems,
            }
            if torch_res:
                row["torch_randperm"] = sorted(torch_res["randperm"])[E // 2]
                row["torch_tolist"] = sorted(torch_res["randperm_tolist"])[E // 2]
                row["torch_dist"] = sorted(torch_res["distributed_epoch"])[E // 2]
                row["torch_threads"] = torch_res["threads"]
                row["torch_rss_mb"] = torch_res["maxrss_kb"] / 1024
            if args.perf:
                row["perf"], row["perf_top"] = perf_breakdown(argv)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)

    header = ("| N | sampler | clairfs s/epoch (median) | min..max | clairfs CPU s/epoch | "
              "peak RSS MB | output MB/epoch | torch randperm s | torch randperm+tolist s | "
              "torch epoch s | torch peak RSS MB | clairfs / torch randperm |")
    lines = [header, "|" + "---|" * 12]
    for r in rows:
        tr = r.get("torch_randperm")
        tdist = r.get("torch_dist") if r["sampler"] == "distributed" else r.get("torch_tolist")
        lines.append(
            f"| {r['n']:,} | {r['sampler']}{'' if r['sampler'] == 'random' else ' (8, rank 0)'} | "
            f"{r['wall_per_epoch']:.3f} | {r['wall_min_max'][0]:.3f}..{r['wall_min_max'][1]:.3f} | "
            f"{r['cpu_per_epoch']:.3f} | {r['rss_mb']:.0f} | {r['bytes_per_epoch'] / 1e6:.1f} | "
            + (f"{tr:.3f} | {r['torch_tolist']:.3f} | {tdist:.3f} | {r['torch_rss_mb']:.0f} | "
               f"{r['wall_per_epoch'] / tr:.2f} |" if tr else "- | - | - | - | - |"))
    table = "\n".join(lines)
    print(table)
    if args.perf:
        print()
        print("| N | sampler | " + " | ".join(name for name, _ in BUCKETS) + " | other | top symbols |")
        print("|" + "---|" * (len(BUCKETS) + 4))
        for r in rows:
            shares = r.get("perf")
            if not shares:
                print(f"| {r['n']:,} | {r['sampler']} | {r.get('perf_top')} |")
                continue
            print(f"| {r['n']:,} | {r['sampler']} | "
                  + " | ".join(f"{shares[name]:.0f}%" for name, _ in BUCKETS)
                  + f" | {shares['other']:.0f}% | {r['perf_top']} |")
    if args.markdown:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        print()
        print(f"- Date: {now}; clairfs commit {git_commit()}; nproc {os.cpu_count()}, "
              f"kernel {platform.release()}; torch threads "
              f"{rows[0].get('torch_threads', '-') if rows else '-'}; "
              f"`clairfs order --n 1` (process start-up) takes "
              f"{startup_seconds(exe) * 1000:.1f} ms.")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
