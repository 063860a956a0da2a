#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The bounded large-file load test of the `stress` suite
(tests/stress/large_load.py): files held by chunk in RAM and an SSD tier,
read side by side by a registered job of layout "ranges" that reads its
samples through a mapping in the predicted order (pushed ahead, dropped
behind), streamers in 256 KiB reads with drop-behind always on, mappers
of random slices and preaders of random ranges, while the status is read
in a loop, a stage pass runs and registrations are rewritten. It checks:

- every byte read through the mount equals the backing file's (0 wrong),
  and no read fails before the unmount;
- the daemon's peak RSS stays within --mem plus the arena's headroom plus
  the fixed overhead loadlib.py allows;
- a lazy unmount with the readers still running lets the daemon exit in
  under 5 s, and every reader then stops;
- each path was loaded: status showed chunk READs, read-ahead, chunks
  dropped behind, samples pushed and chunks in the SSD tier, the chunks'
  RAM within its capacity;
- the job's registration written again is accepted, bad ones are refused
  with EINVAL;
- the daemon neither died nor hung (no read finishing for 60 s).

bench/soak.py --large runs it at length. STRESS_SEED=N (default 1),
STRESS_READS=N (default 250,000: about 35 s here, the same work however
loaded the machine is), STRESS_SECONDS=N (default 150, a bound for a
machine far slower than this one).

Needs root and /dev/fuse (exit 77 without FUSE)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import large_load  # noqa: E402
import loadlib  # noqa: E402
import mountlib as ml  # noqa: E402


@ml.main
def test():
    cfg = loadlib.Config(seed=int(os.environ.get("STRESS_SEED", "1")), readers=10,
                         reads=int(os.environ.get("STRESS_READS", "250000")),
                         seconds=float(os.environ.get("STRESS_SECONDS", "150")))
    fig, failures = large_load.run(cfg)
    loadlib.report(fig, failures)
    ml.check(not failures, f"{len(failures)} failures (seed {cfg.seed}), listed above")
