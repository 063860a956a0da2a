#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The bounded load test of the `stress` suite: 16 reader processes do
random reads through a real mount over 10,000 files (random file, offset
and size, some past EOF), with a job registered and a RAM budget of 30% of
the dataset, while registrations are rewritten (valid ones accepted,
invalid ones refused with EINVAL), the status is read in a loop (the file,
`clairfs status` and `--json`) and stage passes are started. It checks:

- every byte read through the mount equals the backing file's (0 wrong),
  and no read fails before the unmount;
- the daemon's peak RSS (VmHWM) stays within --mem plus the RAM arena's
  headroom plus a fixed overhead (loadlib.FIXED_OVERHEAD, measured and
  documented in bench/RESULTS.md);
- a lazy unmount with the readers still running lets the daemon exit in
  under 5 s (a does-not-hang bound), and every reader then stops;
- prefetch was active (status counted prefetched files), RAM use stayed
  within the tier's capacity, and each side load ran;
- the daemon neither died nor hung: if it does, or no read finishes for
  60 s, the load ends at once with one line saying which, and the daemon
  is killed.

The full version is bench/soak.py (1,000,000 reads). A failure prints the
reader, the read's number, the file, offset and length; the reads repeat
with the same seed: STRESS_SEED=N (default 1), STRESS_READS=N (default
200000), STRESS_SECONDS=N (a time bound, default 150).

Needs root and /dev/fuse (exit 77 without FUSE)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadlib  # noqa: E402
import mountlib as ml  # noqa: E402


@ml.main
def test():
    cfg = loadlib.Config(seed=int(os.environ.get("STRESS_SEED", "1")),
                         reads=int(os.environ.get("STRESS_READS", "200000")),
                         seconds=float(os.environ.get("STRESS_SECONDS", "150")))
    fig, failures = loadlib.run(cfg)
    loadlib.report(fig, failures)
    ml.check(not failures, f"{len(failures)} failures (seed {cfg.seed}), listed above")
