#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks `clairfs simulate` against a real run of bench/cluster.py.

    bench/sim_validate.py RESULTS.json [RESULTS.json ...] [--clairfs BIN]
                          [--tolerance 0.2] [--results-md] [--keep DIR]

For each results file (bench/results/<date>-<config>.json, written by
bench/cluster.py), writes the simulator config that describes the same run,
with the real run's measured inputs:

- the shared file system: the bandwidth and IOPS the slow FS enforced;
- compute: the warm local run's epoch time (the machine's speed at the
  job's own work, with no I/O to wait on), less the training steps, spread
  over the host's cores as CPU per sample;
- clairfs's cost per file: the daemons' measured CPU per file read, and
  per file moved between daemons;
- the page cache direct reads go through: the nodes share the host's, up
  to what their memory cgroups leave beside the warm local run's peak;

then runs the simulator and compares, for every scenario and epoch, the
slowest node's epoch time, the shared-FS bytes and the peer bytes. A figure
agrees if it is within the tolerance (20%) of the real one, or both are
below 2% of the dataset (a few MB of metadata against none is not a
disagreement worth a percentage). Prints a markdown table; exits 1 if any
figure disagrees. --results-md appends the table to bench/RESULTS.md.

--time-tolerance sets a wider band for epoch times alone (the CI test's
0.5): a real run on a shared machine is slowed by whatever else runs, which
bytes are not.

--peer-bytes run checks the peer bytes over the whole run instead of per
epoch (still printed per epoch): how much moves between nodes is then
checked, not in which epoch's window it fell (the daemons prefetch the next
epoch's files from peers before the epoch boundary, and where that
boundary falls against those transfers is a matter of a fraction of a
second on a small dataset).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HOST_CORES = os.cpu_count() or 2


PAGE = 4096  # the page cache holds whole pages

def parse_size(s, unit=10**3):
    """"20M" as the slow FS reads it (decimal units), or with unit=1024 as
    --mem reads it."""
    s = str(s)
    mult = {"K": unit, "M": unit**2, "G": unit**3}
    if s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def parse_mib(s):
    return parse_size(s, 1024)


def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


# bench/scenarios.py's names for what the simulator calls clairfs.
SINGLE_NODE = {"local-warm": "local-warm", "direct": "direct", "clairfs-registered": "clairfs",
               "clairfs-ssd-registered": "clairfs"}


def normalise(res):
    """bench/scenarios.py's single-node results in bench/cluster.py's shape."""
    if "nodes" in res:
        return res
    opts = res["config"].get("clairfs_opts", [])
    mem = parse_mib(opts[opts.index("--mem") + 1]) if "--mem" in opts else None
    summary, ssd = {}, 0
    for name, sc in SINGLE_NODE.items():
        if name not in res["summary"]:
            continue
        x = res["summary"][name]
        if "ssd" in name:
            # --ssd auto: room for the whole dataset (the cache directory
            # had more).
            ssd = res["dataset"]["bytes"]
        summary[sc] = {"slowest_s": x["epoch_s"], "shared_fs_bytes": x["shared_fs_bytes"],
                       "mem_max_usage": x.get("mem_max_usage")}
    job = dict(res["config"]["job"], world=1, sampler="random")
    out = dict(res, nodes=1, clairfs_mem=mem, summary=summary, clairfs_ssd=ssd,
               config=dict(res["config"], job=job))
    return out


def reads_per_file(res, scenario):
    """The slow FS's block reads per file in SCENARIO's first epoch."""
    xs = [e["epochs"][0]["shared_fs_reads"] / res["dataset"]["files"]
          for e in res["runs"] if e["scenario"] == scenario and e.get("epochs")
          and e["epochs"][0].get("shared_fs_reads") is not None]
    return med(xs)


def direct_page_cache(res):
    """The page cache the direct run's reads had: measured where the run
    recorded it (train_job.py --resident: the dataset's resident bytes at
    epoch 0's end, host-wide, so the largest of a run's nodes, median over
    runs), else estimated as each node's cgroup less the warm run's peak
    (the job's own memory), which misses by tens of MB; the simulator's
    LRU turns a deficit of d into about 4d re-read in the next epoch, so
    the estimate is only a fallback for results made before --resident."""
    runs = [r for r in res["runs"] if r["scenario"] == "direct" and r.get("epochs")]
    seen = []
    for r in runs:
        jobs = r.get("jobs") or [{"epochs": r["epochs"]}]
        vals = [j["epochs"][0].get("dataset_resident_bytes") for j in jobs if j.get("epochs")]
        vals = [v for v in vals if v is not None]
        if vals:
            seen.append(max(vals))
    if seen:
        resident = int(med(seen))
        files, raw = res["dataset"]["files"], res["dataset"]["bytes"]
        # Whole pages: a file's last page is half empty on average. With
        # (nearly) every page resident the cache's size is unknown, only
        # that the dataset fit: the simulator gets room to spare, since its
        # drawn sizes add up to a little more or less than the real ones
        # and an LRU a page short re-reads several percent.
        if resident >= raw + files * PAGE // 4:
            return 2 * (raw + files * PAGE)
        return resident
    cgroup = parse_mib(res["config"]["slowfs"]["mem"])
    warm_peak = res["summary"]["local-warm"].get("mem_max_usage") or cgroup // 2
    return res["nodes"] * max(0, cgroup - warm_peak)


def scale_page_cache(cfg, res, clairfs, d):
    """A measured page cache short of the dataset, for the simulator's own
    sizes: the same fraction of its dataset's pages as of the real one's
    (its sizes are drawn with the real mean and median, so their total is
    off by a percent or two, as much as the shortfall that decides how
    much a later epoch re-reads)."""
    pc = cfg["shared_fs"]["page_cache"]
    files, raw = res["dataset"]["files"], res["dataset"]["bytes"]
    if not pc or pc >= raw + files * PAGE:
        return
    probe = dict(cfg, scenarios=["local-warm"])
    probe["job"] = dict(cfg["job"], epochs=1)
    path = os.path.join(d, "dataset-probe.json")
    json.dump(probe, open(path, "w"))
    out = subprocess.run([clairfs, "simulate", "--config", path, "--json", "-", "--quiet"],
                         check=True, capture_output=True, text=True).stdout
    sim_raw = json.loads(out)["dataset"]["bytes"]
    os.unlink(path)
    cfg["shared_fs"]["page_cache"] = int(pc * (sim_raw + files * PAGE / 2)
                                         / (raw + files * PAGE / 2))


def sim_config(res, overhead_s):
    """The simulator's description of the run in RESULTS (a dict)."""
    cfg = res["config"]
    job = cfg["job"]
    nodes = res["nodes"]
    files = res["dataset"]["files"]
    summ = res["summary"]
    world = job.get("world", nodes)
    per_rank = math.ceil(files / world)
    batches = math.ceil(per_rank / job["batch"])
    step = job.get("step_sleep", 0) or 0
    # The machine's speed at the job's own work: the warm local run's later
    # epochs, less the steps and a new iterator's start, is CPU the host's
    # cores spent on every node's samples.
    warm = med(summ["local-warm"]["slowest_s"][1:])
    cpu_total = max(0.0, warm - batches * step - overhead_s) * HOST_CORES
    sample_cpu = cpu_total / files
    file_cost = med(summ.get("clairfs", summ.get("clairfs-peers", {})).get(
        "daemon_ms_per_file", [0.3])) / 1000
    direct_rpf = reads_per_file(res, "direct") or 0
    # How long the daemons prefetched before the jobs began (the harness
    # starts them once every node has mounted and scanned).
    job_start = med([summ[s].get("before_go_s") for s in ("clairfs", "clairfs-peers")
                     if s in summ]) or 0
    peer_cost = 0.5e-3
    if "clairfs-peers" in summ:
        peer_cost = med(summ["clairfs-peers"]["daemon_ms_per_file_out"][1:]) / 1000
    page_cache = direct_page_cache(res)
    return {
        "name": f"{cfg['name']} (simulated from {os.path.basename(res['_path'])})",
        "cluster": {"nodes": nodes, "ranks_per_node": world // nodes, "cores": HOST_CORES,
                    "cores_shared": True},
        "node": {"ram": res["clairfs_mem"], "ssd": res.get("clairfs_ssd", 0),
                 "fetch_threads": 16, "file_cost_s": file_cost, "local_file_cost_s": 0.00005},
        "shared_fs": {"mb_s": parse_size(cfg["slowfs"]["bps"]) / 1e6,
                      "iops": cfg["slowfs"]["iops"],
                      "client_mb_s": parse_size(cfg["slowfs"]["bps"]) / 1e6,
                      "latency_s": 0.001, "request_bytes": "512K",
                      "direct_requests_per_file": direct_rpf,
                      "page_cache": page_cache, "page_cache_shared": True},
        "network": {"mb_s": 2000, "latency_s": 0.0001, "file_cost_s": peer_cost,
                    "server_threads": 4},
        "compute": {"step_s": step, "sample_cpu_s": sample_cpu,
                    "epoch_overhead_s": overhead_s, "lockstep": False,
                    "job_start_s": job_start},
        "dataset": {"files": files, "mean_bytes": res["dataset"]["mean"],
                    "median_bytes": res["dataset"]["median"], "seed": 0},
        "job": {"epochs": job["epochs"], "batch_size": job["batch"],
                "num_workers": job["workers"], "seed": job.get("seed", 0),
                "generator": "explicit", "sampler": job.get("sampler", "distributed")},
        "scenarios": [s for s in ["local-warm", "direct", "clairfs", "clairfs-peers"]
                      if s in summ],
    }


def agree(real, sim, dataset, tol):
    if real is None:
        return True, "–"
    if real < 0.02 * dataset and sim < 0.02 * dataset:
        return True, "both ~0"
    if real == 0:
        return False, "real 0"
    d = sim / real - 1
    return abs(d) <= tol, f"{d:+.0%}"


def validate(path, clairfs, tol, keep, overhead_s, peer_bytes="epoch", time_tol=None):
    res = normalise(json.load(open(path)))
    res["_path"] = path
    cfg = sim_config(res, overhead_s)
    d = keep or tempfile.mkdtemp(prefix="sim-validate-")
    os.makedirs(d, exist_ok=True)
    scale_page_cache(cfg, res, clairfs, d)
    base = os.path.splitext(os.path.basename(path))[0]
    cfg_path = os.path.join(d, base + ".sim.json")
    out_path = os.path.join(d, base + ".sim-out.json")
    json.dump(cfg, open(cfg_path, "w"), indent=2)
    t0 = time.time()
    subprocess.run([clairfs, "simulate", "--config", cfg_path, "--json", out_path, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - t0
    out = json.load(open(out_path))
    sims = {s["scenario"]: s for s in out["scenarios"]}
    dataset = res["dataset"]["bytes"]
    rows, ok = [], True
    for sc, real in res["summary"].items():
        if sc not in sims:
            continue
        for e, se in enumerate(sims[sc]["epochs"]):
            checks = []
            rt = real["slowest_s"][e]
            a, why = agree(rt, se["seconds"], 0, tol if time_tol is None else time_tol)
            checks.append(a)
            tcell = f"{rt:.1f} / {se['seconds']:.1f} ({why})"
            rf = real["shared_fs_bytes"][e]
            a, why = agree(rf, se["shared_fs_bytes"], dataset, tol)
            checks.append(a)
            fcell = f"{rf / 1e6:.0f} / {se['shared_fs_bytes'] / 1e6:.0f} ({why})"
            if sc == "clairfs-peers":
                rp = real["peer_bytes_in"][e]
                a, why = agree(rp, se["peer_bytes"], dataset, tol)
                if peer_bytes == "epoch":
                    checks.append(a)
                else:
                    why += ", not checked"
                pcell = f"{rp / 1e6:.0f} / {se['peer_bytes'] / 1e6:.0f} ({why})"
            else:
                pcell = "–"
            good = all(checks)
            ok &= good
            rows.append(f"| {sc} | {e} | {tcell} | {fcell} | {pcell} | "
                        f"{'yes' if good else '**no**'} |")
        if sc == "clairfs-peers" and peer_bytes == "run":
            rp = sum(real["peer_bytes_in"])
            sp = sum(x["peer_bytes"] for x in sims[sc]["epochs"])
            a, why = agree(rp, sp, dataset, tol)
            ok &= a
            rows.append(f"| {sc} | all | | | {rp / 1e6:.0f} / {sp / 1e6:.0f} ({why}) | "
                        f"{'yes' if a else '**no**'} |")
    head = (f"#### {res['config']['name']}: real ({os.path.relpath(path, ROOT)}) against "
            f"simulated\n\nSimulator config: `{os.path.relpath(cfg_path, ROOT) if keep else cfg_path}`"
            f" (sample CPU {cfg['compute']['sample_cpu_s'] * 1e3:.2f} ms, direct reads "
            f"{cfg['shared_fs']['direct_requests_per_file']:.2f} requests per file, file cost "
            f"{cfg['node']['file_cost_s'] * 1e3:.2f} ms, peer file cost "
            f"{cfg['network']['file_cost_s'] * 1e3:.2f} ms, page cache "
            f"{cfg['shared_fs']['page_cache'] / 2**20:.0f} MiB shared); simulated in {wall:.1f} s.\n\n"
            "| scenario | epoch | slowest-node epoch s, real / sim | shared-FS MB, real / sim "
            "| peer MB, real / sim | within tolerance |\n|---|---|---|---|---|---|\n")
    return ok, head + "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--clairfs", default=os.path.join(ROOT, "build", "src", "clairfs"))
    ap.add_argument("--tolerance", type=float, default=0.2)
    ap.add_argument("--time-tolerance", type=float,
                    help="for epoch times only (default: --tolerance): a run on a shared, "
                         "noisy machine can be slowed by others; bytes cannot")
    ap.add_argument("--overhead", type=float, default=0.2,
                    help="seconds a new DataLoader iterator takes before its first open")
    ap.add_argument("--keep", help="write the simulator configs and outputs here")
    ap.add_argument("--results-md", action="store_true")
    ap.add_argument("--peer-bytes", choices=["epoch", "run"], default="epoch")
    a = ap.parse_args()
    all_ok, text = True, ""
    for p in a.results:
        ok, t = validate(p, a.clairfs, a.tolerance, a.keep, a.overhead, a.peer_bytes,
                         a.time_tolerance)
        all_ok &= ok
        text += "\n" + t
    print(text)
    if a.results_md:
        cmd = "bench/sim_validate.py " + " ".join(os.path.relpath(p, ROOT) for p in a.results)
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(f"\n### {time.strftime('%Y%m%d-%H%M')} simulated against real "
                    f"(git {git_head()})\n\n```sh\n{cmd}\n```\n{text}")
    print("all within tolerance" if all_ok else "some figures disagree", file=sys.stderr)
    return 0 if all_ok else 1


def git_head():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
