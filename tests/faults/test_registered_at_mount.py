#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A job registered at mount (`clairfs mount --register`) is built before
the daemon forks, so nothing it starts may be a thread: threads do not
survive the fork. Once the tracker's planner thread was started there; the
daemon then never built epoch 2 (the job's opens waited for ever) and a
new registration hung joining a thread that was not there.

Reads three epochs in the registered order, each open bounded in time (a
hang fails the test instead of stalling it), checks the mode stays
clairvoyant with every open matched, then replaces the registration."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
from faultlib import ml  # noqa: E402

EPOCHS = 3


def epoch_orders(backing):
    args = ["order", "--root", backing, "--paths", "--epochs", str(EPOCHS)]
    for k, v in fl.JOB_KEYS.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    r = ml.clairfs(*args, timeout=60)
    ml.check(r.returncode == 0, f"clairfs order failed: {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines()[:EPOCHS]]


def test():
    with ml.temp_dir() as tmp:
        src, mp = ml.make_dirs(tmp, "source", "mnt")
        expected = fl.make_dataset(src, classes=2, per_class=12, max_size=20_000)
        job = os.path.join(tmp, "job.json")
        with open(job, "w") as f:
            json.dump({**fl.JOB_KEYS, "epochs": EPOCHS}, f)
        orders = epoch_orders(src)
        with ml.mounted(src, mp, "--mem", "64M", "--register", job):
            for e, order in enumerate(orders):
                done, result, exc = ml.in_thread(fl.read_and_compare, mp, expected, order,
                                             timeout=60)
                ml.check(done, f"epoch {e}: the reads in the registered order hang")
                ml.check(exc is None, f"epoch {e}: {exc}")
                failed, wrong = result
                ml.check(not failed and not wrong, f"epoch {e}: failed {failed}, wrong {wrong}")
            st = fl.status(mp)
            ml.log(f"after {EPOCHS} epochs: mode {st['mode']}, epoch {st['epoch']}, "
                   f"match_rate {st['match_rate']}")
            ml.check(st["mode"] == "clairvoyant", f"mode {st['mode']}: {st['reason']}")
            new = {**fl.JOB_KEYS, "seed": 8}
            done, _, exc = ml.in_thread(lambda: fl.register(mp, **new), timeout=60)
            ml.check(done and exc is None, f"a new registration hangs or fails: {exc}")
            ml.check(fl.status(mp)["registrations"] == 2, "the new registration did not land")


if __name__ == "__main__":
    ml.main(test)
