#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A stand-in for srun on one node, for tests/mount/test_slurm_scripts.py:
Slurm itself (slurmctld, slurmd, munge) is not on the test machine. It runs
the command once per task of the step with the variables a step's task sees
(SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, the step's SLURM_NTASKS and
SLURM_STEP_TASKS_PER_NODE), as srun does on node 0, and exits with the
first failing task's status. Options it knows: --ntasks-per-node=N (else
the job's SLURM_NTASKS_PER_NODE), --overlap, --no-kill,
--kill-on-bad-exit=N."""
import itertools
import os
import signal
import subprocess
import sys

args = sys.argv[1:]
tasks = None
while args and args[0].startswith("-"):
    opt = args.pop(0)
    if opt.startswith("--ntasks-per-node="):
        tasks = int(opt.split("=", 1)[1])
    elif opt == "--ntasks-per-node":
        tasks = int(args.pop(0))
    elif opt in ("--overlap", "--no-kill") or opt.startswith("--kill-on-bad-exit"):
        pass
    else:
        sys.exit(f"fake srun: unknown option {opt}")
if not args:
    sys.exit("fake srun: no command")
if tasks is None:
    tasks = int(os.environ["SLURM_NTASKS_PER_NODE"])

step_file = os.path.join(os.environ["FAKE_SRUN_STATE"], "steps")
with open(step_file, "a+") as f:
    f.seek(0)
    step = len(f.read().splitlines())
    f.write(" ".join(args) + "\n")

procs = []
for i in range(tasks):
    env = dict(os.environ, SLURM_PROCID=str(i), SLURM_LOCALID=str(i), SLURM_NODEID="0",
               SLURM_NTASKS=str(tasks), SLURM_NNODES="1", SLURM_STEP_NUM_TASKS=str(tasks),
               SLURM_STEP_TASKS_PER_NODE=str(tasks), SLURM_TASKS_PER_NODE=str(tasks),
               SLURM_STEP_ID=str(step))
    procs.append(subprocess.Popen(args, env=env))


def forward(sig, _frame):
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)


signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGINT, forward)
codes = [p.wait() for p in procs]
sys.exit(next(itertools.chain((c for c in codes if c != 0), [0])))
