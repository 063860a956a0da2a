#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The soak of issue 23: 1,000,000 random reads by 16 reader processes over
10,000 files through one mount, with a job registered and a RAM budget of
30% of the dataset, while registrations are rewritten, the status is read
in a loop and stage passes are started; then a lazy unmount with the
readers still running.

It is the `stress` suite's load test (tests/stress/loadlib.py) at full
length, with the same checks: 0 wrong bytes, no failed read, peak RSS
within --mem plus the arena headroom plus a fixed overhead, the daemon
gone within 5 s of the unmount. Prints the figures (reads done, wrong
bytes, peak RSS against the budget, open latency, unmount time) as JSON,
exits 1 if a check failed.

  sudo /usr/bin/python3 bench/soak.py [--reads 1000000] [--readers 16] [--seed 1]
      [--seconds S] [--mem-share 0.30] [--build build] [--json out.json]
  sudo /usr/bin/python3 bench/soak.py --large --seconds 1800 [--readers 10] ...

With --large it is the `stress` suite's large-file load instead
(tests/stress/large_load.py): files held by chunk in RAM and an SSD tier,
a registered job of layout "ranges" followed through a mapping, streamers
with drop-behind, mappers and preaders, with the same checks and each
path's counters.

Needs root and /dev/fuse, and the Python standard library only.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reads", type=int, default=1_000_000, help="reads in all (default 1000000)")
    ap.add_argument("--readers", type=int, default=16, help="reader processes (default 16)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the dataset and of every read")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long instead")
    ap.add_argument("--mem-share", type=float, default=0.30,
                    help="--mem as a share of the dataset (default 0.30; 0 measures the "
                         "daemon's fixed overhead, with no RAM tier)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build directory")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--large", action="store_true",
                    help="the large-file load (chunks, ranges, drop-behind) instead")
    return ap.parse_args()


def commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return r.stdout.strip() or "unknown"


def main():
    a = parse_args()
    os.environ["CLAIRFS"] = os.path.join(os.path.abspath(a.build), "src", "clairfs")
    sys.path.insert(0, os.path.join(ROOT, "tests", "stress"))
    import loadlib  # noqa: E402  (after CLAIRFS is set: mountlib reads it)
    import large_load  # noqa: E402
    loadlib.ml.skip_unless_fuse()
    cfg = loadlib.Config(seed=a.seed, readers=a.readers, reads=a.reads, seconds=a.seconds,
                          mem_share=a.mem_share)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = commit()  # before the run, which may outlast a checkout
    fig, failures = (large_load if a.large else loadlib).run(cfg)
    fig = {"date": started, "commit": head, "load": "large" if a.large else "small",
           "seed": a.seed, "readers": a.readers,
           "reads_asked": a.reads, "mem_share": a.mem_share, **fig, "failures": failures}
    loadlib.report({k: v for k, v in fig.items() if k != "failures"}, failures)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fig, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
