#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Slurm scripts of scripts/slurm/ (issue 21), run as Slurm runs them,
with real mounts, real torch and `clairfs register --ranks auto`. Slurm
itself is not on the test machine: the prolog and epilog get the variables
slurmd gives them, and the job script runs with slurm/fake_srun.py as srun
(one node, a task per --ntasks-per-node with the variables a step's task
sees).

- prolog: mounts every line of its config for the job (%j expanded), with
  --control-owner the job's user: that user (nobody here) reads the files
  and registers with `--ranks auto`; run again, it replaces the mount (one
  daemon); a line whose backing directory is missing fails it with exit 1
  and one line naming the mount; an unreadable config too;
- epilog: unmounts, the daemon exits, the per-job mount point goes; a
  second run (nothing mounted) succeeds;
- job script: one daemon per node in a step of its own, `clairfs wait`,
  one registration per node with --ranks auto and the job's world size,
  then two torch ranks with a DistributedSampler read 2 epochs through the
  mount, every byte checked; clairfs predicted every open of both ranks
  (run_matched = run_opens = all of them), and at the end nothing is
  mounted and no daemon is left;
- mpiexec (MPICH's, for real): `mpiexec -ppn 1 clairfs register --ranks
  auto --world-size 2` registers this node's ranks 0 and 1; a training
  launch of two ranks in which each registers itself with --ranks auto
  (both [0,1] of 2) then reads: clairfs predicted every open of both.
Needs /dev/fuse (exit 77 without FUSE) and Debian's torch and torchvision."""
import glob
import json
import os
import pwd
import shutil
import subprocess
import sys

import mountlib as ml

SLURM = os.path.join(ml.SOURCE_ROOT, "scripts", "slurm")
HERE = os.path.join(ml.HERE, "slurm")
JOB = "4242"
FILES = 48


def script_env(conf, **extra):
    env = dict(os.environ, CLAIRFS=ml.CLAIRFS, CLAIRFS_SLURM_CONF=conf, SLURM_JOB_ID=JOB,
               SLURM_JOB_USER="nobody")
    env.update(extra)
    return env


def run_script(name, env, timeout=120):
    r = subprocess.run(["bash", os.path.join(SLURM, name)], env=env, capture_output=True,
                       text=True, timeout=timeout)
    ml.log(f"{name}: exit {r.returncode}; stderr: {r.stderr.strip()!r}")
    return r


def open_to_nobody(path):
    """nobody must reach the mount points and the backing files, as a job's
    user reaches them on a cluster."""
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


def case_prolog_epilog(tmp, backing, expected):
    mnt_root = ml.make_dirs(tmp, "mnt")[0]
    conf = os.path.join(tmp, "slurm.conf")
    with open(conf, "w") as f:
        f.write("# BACKING MOUNTPOINT OPTIONS\n\n"
                f"{backing}  {mnt_root}/%j-data  --mem 16M --no-detect  # one job's mount\n")
    mp = os.path.join(mnt_root, f"{JOB}-data")
    open_to_nobody(tmp)
    env = script_env(conf)

    r = run_script("clairfs-prolog.sh", env)
    ml.check(r.returncode == 0, f"prolog: exit {r.returncode}: {r.stderr}")
    ml.check(ml.is_mounted(mp), f"prolog: {mp} is not mounted")
    nobody = pwd.getpwnam("nobody").pw_uid
    owner = os.stat(os.path.join(mp, ".clairfs", "control")).st_uid
    ml.check(owner == nobody, f"prolog: the control file belongs to uid {owner}, not nobody")
    rel = sorted(expected)[0]
    got = subprocess.run(ml.AS_NOBODY + ["cat", os.path.join(mp, rel)], capture_output=True,
                         timeout=30)
    ml.check(got.returncode == 0 and got.stdout == expected[rel],
             f"prolog: nobody reads {rel}: exit {got.returncode}, {got.stderr!r}")
    reg = subprocess.run(ml.AS_NOBODY + [ml.CLAIRFS, "register", mp, "--ranks", "auto",
                                         "--seed", "3"],
                         capture_output=True, text=True, timeout=30,
                         env=dict(env, RANK="0", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1"))
    ml.check(reg.returncode == 0, f"nobody registers: exit {reg.returncode}: {reg.stderr}")
    ml.check("ranks [0] from RANK=0" in reg.stdout, f"register --ranks auto said {reg.stdout!r}")
    ml.check(ml.status(mp)["jobs"], "the registration is not in status")
    other = subprocess.run(ml.AS_NOBODY[:1] + ["--reuid=daemon", "--regid=daemon",
                                               "--clear-groups", ml.CLAIRFS, "register", mp],
                           capture_output=True, text=True, timeout=30)
    ml.check(other.returncode != 0 and "Permission denied" in other.stderr,
             f"another user registered: exit {other.returncode}: {other.stderr}")

    pids = ml.daemon_pids(mp)
    r = run_script("clairfs-prolog.sh", env)
    ml.check(r.returncode == 0 and "still mounted" in r.stderr,
             f"prolog again: exit {r.returncode}: {r.stderr}")
    ml.check(ml.wait_exit(pids, 30), f"prolog again: the first daemon {pids} is still there")
    ml.check(ml.is_mounted(mp) and len(ml.daemon_pids(mp)) == 1,
             f"prolog again: daemons {ml.daemon_pids(mp)}")

    pids = ml.daemon_pids(mp)
    r = run_script("clairfs-epilog.sh", env)
    ml.check(r.returncode == 0, f"epilog: exit {r.returncode}: {r.stderr}")
    ml.check(not ml.is_mounted(mp), f"epilog: {mp} is still mounted")
    ml.check(ml.wait_exit(pids, 30), f"epilog: daemon {pids} still running")
    ml.check(not os.path.exists(mp), f"epilog: the per-job mount point {mp} is still there")
    r = run_script("clairfs-epilog.sh", env)
    ml.check(r.returncode == 0, f"epilog with nothing mounted: exit {r.returncode}")

    with open(conf, "a") as f:
        f.write(f"{tmp}/no-such-dataset {mnt_root}/%j-missing --mem 16M\n")
    r = run_script("clairfs-prolog.sh", env)
    lines = r.stderr.strip().splitlines()
    ml.check(r.returncode == 1, f"prolog with a missing backing: exit {r.returncode}")
    ml.check(len(lines) == 1 and lines[0].startswith(f"clairfs-prolog: job {JOB}: mounting ")
             and "no-such-dataset" in lines[0], f"prolog with a missing backing said {lines}")
    ml.check(ml.is_mounted(mp), "prolog: the good line was not mounted beside the bad one")
    r = run_script("clairfs-epilog.sh", env)
    ml.check(r.returncode == 0 and not ml.is_mounted(mp), f"epilog: exit {r.returncode}")

    r = run_script("clairfs-prolog.sh", script_env(os.path.join(tmp, "absent.conf")))
    ml.check(r.returncode == 1 and "cannot read" in r.stderr,
             f"prolog without a config: exit {r.returncode}: {r.stderr}")


def case_job_script(tmp, backing, expected):
    mp = os.path.join(tmp, "job-mnt")
    out, state, bin_dir = ml.make_dirs(tmp, "out", "srun-state", "bin")
    os.symlink(os.path.join(HERE, "fake_srun.py"), os.path.join(bin_dir, "srun"))
    seed, batch, epochs = 5, 3, 2
    env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"], FAKE_SRUN_STATE=state,
               CLAIRFS=ml.CLAIRFS, SLURM_JOB_ID=JOB, SLURM_NTASKS="2", SLURM_JOB_NUM_NODES="1",
               SLURM_NNODES="1", SLURM_NTASKS_PER_NODE="2", SLURM_TASKS_PER_NODE="2",
               SLURM_NODEID="0", BACKING=os.path.dirname(backing), MNT=mp,
               MOUNT_OPTS="--mem 32M --no-detect --log-file " + os.path.join(out, "daemon.log"),
               REGISTER_OPTS=f"--root train --sampler distributed --seed {seed} "
                             f"--batch-size {batch}",
               TRAIN=f"/usr/bin/python3 {os.path.join(HERE, 'train_ranks.py')} {mp} "
                     f"{os.path.dirname(backing)} {out} {seed} {batch} {epochs}",
               PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run(["bash", os.path.join(SLURM, "clairfs-job.sbatch")], env=env,
                       capture_output=True, text=True, timeout=240)
    ml.log(f"job script: exit {r.returncode}\n{r.stdout}{r.stderr}")
    with open(os.path.join(state, "steps")) as f:
        steps = f.read().splitlines()
    ml.log("steps:\n  " + "\n  ".join(steps))
    ml.check(r.returncode == 0, f"the job script failed: exit {r.returncode}")
    ml.check("ranks [0,1] of 2 from SLURM_NODEID=0 of SLURM_JOB_NUM_NODES=1, world size 2"
             in r.stdout, "register --ranks auto did not say ranks 0 and 1 of 2")
    kinds = [s.split()[1] if s.startswith(ml.CLAIRFS) else "train" for s in steps
             if not s.startswith("mkdir")]
    # The daemons' step runs in the background: it may start after the wait.
    ml.check(sorted(kinds[:2]) == ["mount", "wait"] and kinds[2:] == ["register", "train", "umount"],
             f"steps {kinds}")

    docs = []
    for path in sorted(glob.glob(os.path.join(out, "status-*.json"))):
        with open(path) as f:
            docs.append(json.load(f))
    ml.check(len(docs) == 2, f"{len(docs)} ranks saved the status, expected 2")
    per_rank = (FILES + 1) // 2  # DistributedSampler pads to a multiple of the world
    total = 2 * per_rank * epochs
    best = max(docs, key=lambda d: d["jobs"][0]["loaders"][0]["run_opens"])
    loader = best["jobs"][0]["loaders"][0]
    ml.log(f"loader: run_opens {loader['run_opens']}, run_matched {loader['run_matched']}, "
           f"ranks {[r['rank'] for r in loader['ranks']]}, mode {loader['mode']}")
    ml.check(sorted(r["rank"] for r in loader["ranks"]) == [0, 1],
             f"registered ranks {loader['ranks']}")
    ml.check(loader["run_opens"] == total and loader["run_matched"] == total,
             f"clairfs predicted {loader['run_matched']} of {loader['run_opens']} opens, "
             f"expected all {total}")
    ml.check(not ml.is_mounted(mp), f"{mp} is still mounted after the job")
    ml.check(not ml.daemon_pids(mp), f"daemons left: {ml.daemon_pids(mp)}")


def case_mpiexec(tmp, backing, expected):
    """The mpiexec forms of clairfs-job.sbatch, with MPICH's real mpiexec:
    `mpiexec -ppn 1 clairfs register --ranks auto --world-size 2` (one
    process per node: this node's block of the world), then a training
    launch of two ranks in which each rank registers itself with --ranks
    auto and no world size (the launch is the training: PMI_RANK -
    MPI_LOCALRANKID, MPI_LOCALNRANKS ranks here) before it reads: the
    same registration twice, which the mount takes once."""
    mpiexec = shutil.which("mpiexec.mpich") or shutil.which("mpiexec")
    ml.check(mpiexec is not None, "no mpiexec (MPICH is a build dependency)")
    mp = os.path.join(tmp, "mpi-mnt")
    out = ml.make_dirs(tmp, "mpi-out")[0]
    os.makedirs(mp)
    seed, batch, epochs = 9, 4, 2
    keys = ["--root", "train", "--sampler", "distributed", "--seed", str(seed),
            "--batch-size", str(batch)]
    with ml.mounted(os.path.dirname(backing), mp, "--mem", "32M", "--no-detect"):
        r = subprocess.run([mpiexec, "-ppn", "1", "-n", "1", ml.CLAIRFS, "register", mp,
                            "--ranks", "auto", "--world-size", "2"] + keys,
                           capture_output=True, text=True, timeout=60)
        ml.check(r.returncode == 0 and "ranks [0,1] of 2 from PMI_RANK=0 of PMI_SIZE=1 "
                 "(one per node), world size 2" in r.stdout,
                 f"mpiexec -ppn 1 register: exit {r.returncode}: {r.stdout} {r.stderr}")
        ml.clairfs("unregister", mp)
        rank_cmd = (f"{ml.CLAIRFS} register {mp} --ranks auto {' '.join(keys)} && exec "
                    f"/usr/bin/python3 {os.path.join(HERE, 'train_ranks.py')} {mp} "
                    f"{os.path.dirname(backing)} {out} {seed} {batch} {epochs}")
        r = subprocess.run([mpiexec, "-n", "2", "sh", "-c", rank_cmd], capture_output=True,
                           text=True, timeout=180, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        ml.log(f"mpiexec -n 2: exit {r.returncode}\n{r.stdout}{r.stderr}")
        ml.check(r.returncode == 0, f"the mpiexec training launch failed: exit {r.returncode}")
        ml.check(r.stdout.count("ranks [0,1] of 2 from PMI_RANK=") == 2,
                 "each rank's register --ranks auto did not say ranks 0 and 1 of 2")
        docs = []
        for path in sorted(glob.glob(os.path.join(out, "status-*.json"))):
            with open(path) as f:
                docs.append(json.load(f))
        ml.check(len(docs) == 2, f"{len(docs)} ranks saved the status, expected 2")
        total = 2 * ((FILES + 1) // 2) * epochs
        loader = max(docs, key=lambda d: d["jobs"][0]["loaders"][0]["run_opens"])[
            "jobs"][0]["loaders"][0]
        ml.check(loader["run_opens"] == total and loader["run_matched"] == total,
                 f"mpiexec: clairfs predicted {loader['run_matched']} of {loader['run_opens']} "
                 f"opens, expected all {total} (a second registration restarting the job "
                 "would lose the first rank's)")
        ml.log(f"mpiexec: run_opens {loader['run_opens']}, run_matched {loader['run_matched']}")


def test():
    with ml.temp_dir() as tmp:
        backing = ml.make_dirs(tmp, "data/train")[0]
        expected = {}
        for rel, data in ml.random_dataset(backing, FILES, seed=21, max_size=20_000).items():
            expected[os.path.join("train", rel)] = data
        data_root = os.path.dirname(backing)
        ml.run_cases(("prolog_epilog", lambda: case_prolog_epilog(tmp, data_root, expected)),
                     ("job_script", lambda: case_job_script(tmp, backing, expected)),
                     ("mpiexec", lambda: case_mpiexec(tmp, backing, expected)))


if __name__ == "__main__":
    ml.main(test)
