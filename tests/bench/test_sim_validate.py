#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs simulate` against a real run (issue 22), at a size CI affords:
bench/cluster.py runs bench/configs/cluster-3-sim-small.json for real (three
simulated nodes sharing one 20 MB/s, 250 IOPS file system; 1,500 files; a
0.1 s step standing in for the GPU; direct reads, clairfs alone, clairfs
with peers over MPI, a warm local copy), then bench/sim_validate.py builds
the simulator's config from the run's measured inputs and checks that every
scenario's shared-FS bytes, epoch by epoch, and the bytes moved between
the nodes over the run agree within 20%, and its epoch times within 50%.
Times get the wider band because this is a test, not a benchmark: on a
shared machine whatever else runs slows the real run (a CI run beside
another benchmark once took 6.1 s for a 4.3 s epoch), while a model gone
wrong is off by far more; the full-size runs in bench/RESULTS.md hold
times to 20%.

Peer bytes are checked over the run, not per epoch: at this size the
boundary between epochs falls within a second of the daemons' prefetches of
the next epoch from their peers, and which side of it a few MB land on is
not what the model is for (bench/RESULTS.md shows the per-epoch figures of
the full-size runs). Needs root (cgroups, a loop device), FUSE, MPICH and
the bench packages (scripts/install-deps.sh test installs them); skips (77)
only where FUSE or mpiexec.mpich is missing."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
import mountlib as ml  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def test():
    if not shutil.which("mpiexec.mpich"):
        print("SKIP: mpiexec.mpich is not installed (package mpich)")
        sys.exit(77)
    clairfs = os.environ.get("CLAIRFS", os.path.join(ROOT, "build", "src", "clairfs"))
    build = os.path.dirname(os.path.dirname(os.path.abspath(clairfs)))
    with tempfile.TemporaryDirectory(prefix="clairfs-simval-") as out:
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "cluster.py"),
                            os.path.join(ROOT, "bench", "configs", "cluster-3-sim-small.json"),
                            "--build", build, "--out", out, "--no-results-md"],
                           capture_output=True, text=True, timeout=900)
        ml.log(r.stdout[-3000:])
        ml.check(r.returncode == 0, f"bench/cluster.py exit {r.returncode}: {r.stderr[-2000:]}")
        results = glob.glob(os.path.join(out, "*-cluster-3-sim-small.json"))
        ml.check(len(results) == 1, f"cluster.py wrote {results}")
        v = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sim_validate.py"),
                            results[0], "--clairfs", clairfs, "--peer-bytes", "run",
                            "--tolerance", "0.2", "--time-tolerance", "0.5"],
                           capture_output=True, text=True, timeout=300)
        ml.log(v.stdout)
        ml.check(v.returncode == 0, f"simulated and real disagree: {v.stderr.strip()}")


if __name__ == "__main__":
    ml.main(test)
