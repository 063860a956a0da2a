#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs simulate` from the command line: a small cluster's prediction
as a table, JSON and an SVG plot; --scenarios instead of the config's;
a real dataset directory's sizes as the dataset; bad configs refused with
one line naming the key, exit status 2 (1 for a directory that cannot be
read), and no output file written."""
import json
import os
import subprocess
import tempfile
import xml.dom.minidom

from mountlib import check, clairfs, log, run_test

CONFIG = {
    "name": "three small nodes",
    "cluster": {"nodes": 3, "ranks_per_node": 2, "cores": 4},
    "node": {"ram": "40M", "fetch_threads": 8},
    "shared_fs": {"mb_s": 20, "iops": 250, "client_mb_s": 20},
    "network": {"mb_s": 1000},
    "compute": {"step_s": 0.05, "sample_cpu_s": 0.001},
    "dataset": {"files": 900, "mean_bytes": 100000, "median_bytes": 90000},
    "job": {"batch_size": 16, "num_workers": 2, "epochs": 2, "seed": 3},
    "scenarios": ["local-warm", "direct", "clairfs", "clairfs-peers"],
}


def write(d, name, obj):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test():
    with tempfile.TemporaryDirectory() as d:
        cfg = write(d, "c.json", CONFIG)
        out, svg = os.path.join(d, "o.json"), os.path.join(d, "o.svg")
        r = clairfs("simulate", "--config", cfg, "--json", out, "--plot", svg, timeout=120)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        for name in ("local-warm", "direct", "clairfs", "clairfs-peers"):
            check(name in r.stdout, f"{name} missing from the table:\n{r.stdout}")
        check("simulating clairfs-peers" in r.stderr, f"no progress on stderr: {r.stderr!r}")
        res = json.load(open(out))
        check([s["scenario"] for s in res["scenarios"]] ==
              ["local-warm", "direct", "clairfs", "clairfs-peers"], f"scenarios {res}")
        direct = res["scenarios"][1]["epochs"]
        check(len(direct) == 2 and all(e["opens"] == 900 for e in direct), f"direct {direct}")
        check(direct[0]["shared_fs_bytes"] == res["dataset"]["bytes"],
              f"direct epoch 0 read {direct[0]['shared_fs_bytes']} of {res['dataset']['bytes']}")
        lines = xml.dom.minidom.parse(svg).getElementsByTagName("polyline")
        check(len(lines) == 8, f"{len(lines)} lines in the plot, want 2 panels x 4 scenarios")
        log(f"table, JSON and plot written; direct epoch 0 {direct[0]['seconds']:.1f} s")

        r = clairfs("simulate", "--config", cfg, "--scenarios", "clairfs", "--json", "-",
                    "--quiet", timeout=120)
        check(r.returncode == 0 and r.stderr == "", f"exit {r.returncode}: {r.stderr!r}")
        check([s["scenario"] for s in json.loads(r.stdout)["scenarios"]] == ["clairfs"],
              f"--scenarios clairfs gave {r.stdout[:200]}")

        # A real directory: an ImageFolder tree's sizes, in torchvision's order.
        root = os.path.join(d, "data")
        total = 0
        for c in ("cat", "dog"):
            os.makedirs(os.path.join(root, c))
            for i in range(30):
                with open(os.path.join(root, c, f"{i:03}.jpg"), "wb") as f:
                    f.write(b"x" * (1000 + 37 * i))
                total += 1000 + 37 * i
        rcfg = write(d, "root.json", {**CONFIG, "dataset": {"root": root},
                                      "scenarios": ["direct"]})
        r = clairfs("simulate", "--config", rcfg, "--json", "-", "--quiet", timeout=60)
        check(r.returncode == 0, f"dataset.root: exit {r.returncode}: {r.stderr}")
        res = json.loads(r.stdout)
        check(res["dataset"] == {"files": 60, "bytes": total}, f"dataset.root: {res['dataset']}")
        check(res["scenarios"][0]["epochs"][0]["shared_fs_bytes"] == total,
              f"direct read {res['scenarios'][0]['epochs'][0]['shared_fs_bytes']} of {total}")
        log(f"dataset.root: 60 files, {total} bytes, as scanned")

        bad = [
            ({**CONFIG, "cluster": {"nodes": 3, "rank_per_node": 2}},
             "cluster: unknown key 'rank_per_node'"),
            ({**CONFIG, "node": {"ram": "lots"}}, "node.ram: must be a size"),
            ({**CONFIG, "job": {"batch_size": 0}}, "batch_size"),
            ({**CONFIG, "dataset": {"manifest": os.path.join(d, "none.txt")}},
             "dataset.manifest: cannot read"),
            ("{\"cluster\": ", "not valid JSON"),
            ({**CONFIG, "dataset": {"files": 10, "root": root}}, "give one of files"),
            # A directory that cannot be read: exit 1, as `clairfs order --root`.
            ({**CONFIG, "dataset": {"root": os.path.join(d, "nowhere")}}, "dataset.root: ", 1),
        ]
        for i, (obj, want, *rc) in enumerate(bad):
            path = write(d, f"bad{i}.json", obj)
            target = os.path.join(d, f"bad{i}.out.json")
            r = clairfs("simulate", "--config", path, "--json", target, timeout=60)
            check(r.returncode == (rc[0] if rc else 2), f"{want}: exit {r.returncode}")
            check(want in r.stderr and r.stderr.count("\n") == 1,
                  f"{want}: stderr {r.stderr!r}")
            check(not os.path.exists(target), f"{want}: wrote {target}")
        r = clairfs("simulate", "--config", os.path.join(d, "missing.json"), timeout=30)
        check(r.returncode == 2 and "cannot read config file" in r.stderr, r.stderr)
        r = clairfs("simulate", "--scenarios", "direct", timeout=30)
        check(r.returncode == 2 and "--config FILE is required" in r.stderr, r.stderr)
        r = clairfs("simulate", "--config", cfg, "--scenarios", "direct,warp", timeout=30)
        check(r.returncode == 2 and "unknown scenario 'warp'" in r.stderr, r.stderr)
        log(f"{len(bad) + 3} bad inputs refused with one line (exit 2; 1 for an unreadable root)")


if __name__ == "__main__":
    run_test(test)
