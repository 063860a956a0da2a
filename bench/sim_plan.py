#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The planning table of docs/planning.md, from `clairfs simulate`.

    bench/sim_plan.py [--base config/simulate-plan.json] [--nodes 16,64,256,1024]
                      [--datasets 1k,22k] [--clairfs BIN] [--out DIR] [--results-md]

For every node count and dataset, runs the base config (its cluster, file
system, network and job) with that many nodes and that dataset, for direct
reads, clairfs without peers and clairfs with peers; then finds the least
RAM per node at which clairfs with peers reads the shared file system once
(at most 1.01x the dataset): every home must pin its files (--mem at least
the most bytes homed on one node, as the daemon places homes), and may need
room beside them for the prefetch lead's files from other homes (lead files
x the mean file size). It simulates the first; if that reads more, the
second (25% more, twice, until it holds), then halves the gap twice: the
figure is within a quarter of the lead's bytes of the least. Prints a markdown
table: epoch 0 and the later epochs (their mean), each scenario's ratio to
direct reads and to clairfs without peers, the shared file system's bytes
over the run, and that RAM. --results-md appends it to bench/RESULTS.md
with the simulator's time and peak memory per run.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DATASETS = {
    # ImageNet-1k's training set and ImageNet-22k (fall 2011), as NoPFS
    # (SC'21) sizes them: 135 GB and 1.3 TB.
    "1k": {"name": "ImageNet-1k", "files": 1281167, "mean_bytes": 105400, "median_bytes": 90000},
    "22k": {"name": "ImageNet-22k", "files": 14197122, "mean_bytes": 92000,
            "median_bytes": 80000},
}


def run(clairfs, cfg, path, reuse=False):
    out = path.replace(".json", ".out.json")
    text = json.dumps(cfg, indent=2)
    if reuse and os.path.exists(out) and os.path.exists(path) and open(path).read() == text:
        return json.load(open(out))
    with open(path, "w") as f:
        f.write(text)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    subprocess.run([clairfs, "simulate", "--config", path, "--json", out, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = json.load(open(out))
    res["_wall_s"] = wall
    res["_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res


def later(xs):
    return sum(xs[1:]) / max(1, len(xs) - 1)


def gb(b):
    return f"{b / 1e9:.0f} GB" if b >= 10e9 else f"{b / 1e9:.1f} GB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=os.path.join(ROOT, "config", "simulate-plan.json"))
    ap.add_argument("--nodes", default="16,64,256,1024")
    ap.add_argument("--datasets", default="1k,22k")
    ap.add_argument("--clairfs", default=os.path.join(ROOT, "build", "src", "clairfs"))
    ap.add_argument("--out", default="/tmp/clairfs-sim-plan")
    ap.add_argument("--results-md", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse a run of --out whose config is the same")
    a = ap.parse_args()
    base = json.load(open(a.base))
    os.makedirs(a.out, exist_ok=True)
    rows, runs = [], []
    for ds in a.datasets.split(","):
        for nodes in [int(x) for x in a.nodes.split(",")]:
            cfg = json.loads(json.dumps(base))
            d = DATASETS[ds]
            cfg["name"] = f"{d['name']} on {nodes} nodes"
            cfg["cluster"]["nodes"] = nodes
            cfg["dataset"] = {k: v for k, v in d.items() if k != "name"}
            cfg["dataset"]["seed"] = 0
            cfg["scenarios"] = ["direct", "clairfs", "clairfs-peers"]
            tag = f"{ds}-{nodes}"
            print(f"{tag}: simulating...", file=sys.stderr, flush=True)
            res = run(a.clairfs, cfg, os.path.join(a.out, tag + ".json"), a.reuse)
            sc = {s["scenario"]: s for s in res["scenarios"]}
            peers = sc["clairfs-peers"]
            dataset = res["dataset"]["bytes"]
            c = cfg["job"]
            lead = max(2 * c["num_workers"] * c.get("prefetch_factor", 2) * c["batch_size"]
                       * cfg["cluster"]["ranks_per_node"], 4 * cfg["node"]["fetch_threads"])
            tries = {}

            def fs_at(mem):
                """The shared FS over the run, x the dataset, with --mem MEM."""
                mem = int(mem)
                if mem not in tries:
                    cfg2 = json.loads(json.dumps(cfg))
                    cfg2["node"]["ram"] = mem
                    cfg2["scenarios"] = ["clairfs-peers"]
                    print(f"{tag}: clairfs-peers at --mem {mem}...", file=sys.stderr, flush=True)
                    r2 = run(a.clairfs, cfg2, os.path.join(a.out, f"{tag}-mem{mem}.json"), a.reuse)
                    tries[mem] = (sum(e["shared_fs_bytes"] for e in r2["scenarios"][0]["epochs"])
                                  / dataset, r2)
                return tries[mem][0]

            # Pinned homes, the least: then with the lead beside them, and
            # more until it holds; then halve the gap twice.
            lo = max(peers["max_here_bytes"], -(-dataset // nodes))
            if fs_at(lo) <= 1.01:
                hi = lo
            else:
                hi = lo + lead * dataset // res["dataset"]["files"]
                for _ in range(2):
                    if fs_at(hi) <= 1.01:
                        break
                    lo, hi = hi, hi * 1.25
                if fs_at(hi) <= 1.01:
                    for _ in range(2):
                        mid = (lo + hi) / 2
                        if fs_at(mid) <= 1.01:
                            hi = mid
                        else:
                            lo = mid
            once_ram = int(hi)
            once_fs, res2 = tries[once_ram]
            once_cell = f"{gb(once_ram)} ({once_fs:.3f}x)" if once_fs <= 1.01 else \
                f"more than {gb(once_ram)} ({once_fs:.3f}x at that)"
            runs.append((tag, res, res2))

            def t(s):
                return [e["seconds"] for e in sc[s]["epochs"]]

            def fs(s):
                return sum(e["shared_fs_bytes"] for e in sc[s]["epochs"]) / dataset

            d0, dl = t("direct")[0], later(t("direct"))
            c0, cl = t("clairfs")[0], later(t("clairfs"))
            p0, pl = t("clairfs-peers")[0], later(t("clairfs-peers"))
            rows.append(
                f"| {d['name']} | {nodes} | {gb(dataset)} | {d0:.0f} / {dl:.0f} | "
                f"{c0:.0f} / {cl:.0f} | {p0:.0f} / {pl:.0f} | "
                f"{d0 / p0:.2f} / {dl / pl:.1f} | {c0 / p0:.2f} / {cl / pl:.1f} | "
                f"{fs('direct'):.2f} / {fs('clairfs'):.2f} / {fs('clairfs-peers'):.2f} | "
                f"{once_cell} |")
    c = base
    head = (
        f"Per node: {c['cluster']['ranks_per_node']} GPUs (ranks), "
        f"{c['job']['num_workers']} loader workers each, {c['cluster']['cores']} cores, "
        f"clairfs --mem {c['node']['ram']}, no SSD. Job: DistributedSampler, batch "
        f"{c['job']['batch_size']} per GPU, a {c['compute']['step_s']} s step, "
        f"{c['compute']['sample_cpu_s'] * 1e3:.0f} ms of CPU per sample, "
        f"{c['job']['epochs']} epochs, all ranks in step. Shared file system "
        f"{c['shared_fs']['mb_s'] / 1000:.0f} GB/s and {c['shared_fs']['iops']:,} requests/s in "
        f"all, {c['shared_fs']['client_mb_s'] / 1000:.1f} GB/s per node, a job's read of a "
        f"JPEG {c['shared_fs']['direct_requests_per_file']} requests; network "
        f"{c['network']['mb_s'] / 1000:.1f} GB/s per node. Config: `{os.path.relpath(a.base, ROOT)}`.\n\n"
        "| dataset | nodes | size | direct s (epoch 0 / later) | clairfs alone s | "
        "clairfs + peers s | peers' speed-up on direct (epoch 0 / later) | "
        "on clairfs alone | shared FS over the run ÷ dataset (direct / alone / peers) | "
        "--mem per node for reading it once (shared FS then) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n")
    table = head + "\n".join(rows) + "\n"
    def cost_of(r):
        # A reused run has only its scenarios' own times.
        wall = r.get("_wall_s", sum(x["wall_s"] for x in r["scenarios"]))
        return f"{wall:.0f} s, peak {r.get('peak_rss_mb', 0):.0f} MB"

    cost = "\n".join(f"- {tag}: {cost_of(r)}; at the read-once --mem {cost_of(r2)}"
                     for tag, r, r2 in runs)
    print(table)
    print("Simulator cost per run (3 scenarios):\n" + cost)
    if a.results_md:
        cmd = "bench/sim_plan.py " + " ".join(sys.argv[1:])
        head_rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(f"\n### {time.strftime('%Y%m%d-%H%M')} planning table (git {head_rev})\n\n"
                    f"```sh\n{cmd}\n```\n\n{table}\nSimulator cost per run (3 scenarios, "
                    f"then clairfs-peers once more), on this 2-core machine:\n\n{cost}\n")


if __name__ == "__main__":
    sys.exit(main())
