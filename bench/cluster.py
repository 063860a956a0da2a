#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Several simulated nodes on one host sharing one throttled file system:
one cache across clairfs daemons (--peers mpi) against a daemon per node
alone, direct reading and a warm local copy (issue 15).

    sudo /usr/bin/python3 bench/cluster.py bench/configs/cluster-3.json \\
        [--reps N] [--scenarios a,b,...] [--build build] [--out bench/results]
        [--workdir DIR] [--no-results-md] [--from-json RESULT]

The set-up, the dataset, the repetitions (order reversed on odd ones, caches
dropped before every run) and the clean-up on any exit are scenarios.py's
(its Bench class); what differs is that a run is NODES nodes at once. Node i
is a memory cgroup and a cpuacct cgroup of its own (limit: the config's
slowfs.mem), one mount point and one bench/train_job.py with
DistributedSampler(world NODES, rank i); the job and its daemon both run in
the node's cgroups, so the page cache each reads is charged to that node.
Every node is in the slow FS's one blkio cgroup: its throttle (bps, iops) is
per cgroup, so the nodes share it as nodes share one file system. The jobs
start together (once each has scanned the dataset), and an epoch's time is
the slowest node's.

Scenarios:
  local-warm     every node reads one local-disk copy, read into the page
                 cache beforehand (outside the cgroups): the CPU ceiling.
  direct         every node reads the slow FS.
  clairfs        a `clairfs mount SLOWFS MNTi --mem M` per node, alone.
  clairfs-peers  the nodes' daemons from one launch,
                   mpiexec.mpich -disable-auto-cleanup
                     -n 1 cgexec.sh NODE0 -- clairfs mount SLOWFS MNT0 -f
                          --peers mpi --mem M --log-file LOG0 : -n 1 ... MNT1 ...
                 then `clairfs wait MNTi --timeout 300` for each.
Both clairfs scenarios register rank i's sampler on mount i through its
.clairfs/control (as scenarios.py's registrations), add the config's
clairfs_opts, and use --mem M = mem_share (0.4) x the dataset's bytes, no
SSD tier. Unmounts are `clairfs umount`, which returns once the daemon has
exited; with peers the harness then waits for mpiexec.

Per epoch (from the moment every node has finished the one before, or the
jobs' start, until every node has finished it; so the epochs add up to the
span of the run) it records the shared FS's device counters and, per node,
its daemon's utime+stime (/proc/PID/stat, and per thread) and the deltas of
its .clairfs/status: backing.files/bytes, peers.files_in/bytes_in/files_out/
bytes_out/errors. Each job's own per-epoch line (train_job.py) is kept too.

Writes OUT/<date>-<config>.json and .png (the slowest node's epoch time and
the shared FS and peer MB per epoch, per scenario), prints the table and
appends it with the exact command to bench/RESULTS.md under "Several nodes
(issue 15)" (unless --no-results-md). bench/README.md says what each column
is and which config keys there are.
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios  # noqa: E402
import slowfs  # noqa: E402
from scenarios import fmt, log, med, one  # noqa: E402
from train_job import pid_cpu, thread_cpu  # noqa: E402

SCENARIOS = ["local-warm", "direct", "clairfs", "clairfs-peers"]
MPIEXEC = "mpiexec.mpich"
COUNTERS = {"backing_files": ("backing", "files"), "backing_bytes": ("backing", "bytes"),
            "peer_files_in": ("peers", "files_in"), "peer_bytes_in": ("peers", "bytes_in"),
            "peer_files_out": ("peers", "files_out"), "peer_bytes_out": ("peers", "bytes_out"),
            "peer_errors": ("peers", "errors"), "ram_rejected": ("ram", "rejected")}


def read_status(mnt):
    with open(os.path.join(mnt, ".clairfs", "status")) as f:
        return json.load(f)


def counters(status):
    """The status figures an epoch's deltas are taken of (0 where a mount
    without --peers has no "peers")."""
    return {k: (status.get(a) or {}).get(b, 0) for k, (a, b) in COUNTERS.items()}


def parent_pid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids, timeout):
    end = time.time() + timeout
    while any(alive(p) for p in pids) and time.time() < end:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


class Cluster(scenarios.Bench):
    known = SCENARIOS

    def __init__(self, args, cfg):
        super().__init__(args, cfg)
        self.nodes = cfg.get("nodes", 3)
        world = cfg["job"].setdefault("world", self.nodes)
        if world != self.nodes:
            sys.exit(f"cluster: job.world {world} is not nodes {self.nodes}")
        self.node_cgs = []
        self.mem = None  # clairfs --mem, once the dataset's size is known

    # --- set-up -------------------------------------------------------------
    def prepare(self, state, info):
        self.mem = int(self.cfg.get("mem_share", 0.4) * info["bytes"])
        for i in range(self.nodes):
            self.node_cgs.append(slowfs.add_node(state, self.st, f"node{i}", self.st["mem"]))
        log(f"{self.nodes} nodes: memory cgroups of {self.st['mem'] >> 20} MiB each, "
            f"clairfs --mem {self.mem} ({self.mem / info['bytes']:.2f} of the dataset)")

    def availability(self):
        av = {}
        for sc in self.scenarios:
            if sc.startswith("clairfs") and not os.access(self.clairfs, os.X_OK):
                av[sc] = f"{self.clairfs} not built"
            elif sc == "clairfs-peers" and not shutil.which(MPIEXEC):
                av[sc] = f"{MPIEXEC} not installed (package mpich)"
            elif sc == "clairfs-peers":
                h = subprocess.run([self.clairfs, "mount", "--help"], capture_output=True,
                                   text=True).stdout
                if "--peers" not in h:
                    av[sc] = "this clairfs has no mount --peers"
        return av

    def node_paths(self, what):
        return [os.path.join(self.work, f"node{i}-{what}") for i in range(self.nodes)]

    def mount_cmd(self, mnt, log_file):
        return ([self.clairfs, "mount", self.data, mnt, "--mem", str(self.mem),
                 "--log-file", log_file] + self.cfg.get("clairfs_opts", []))

    def clairfs_pids(self, mnt):
        """The clairfs processes naming MNT (not mpiexec, whose command line
        names every mount point)."""
        exe = os.path.realpath(self.clairfs)
        out = []
        for p in scenarios.pids_with_arg(mnt):
            try:
                if os.path.realpath(f"/proc/{p}/exe") == exe:
                    out.append(p)
            except OSError:
                pass
        return out

    def daemon_of(self, mnt):
        """The daemon serving MNT. With --peers -f the process mpiexec
        started stays, waiting for the daemon it forked: the daemon is the
        one whose parent is another of MNT's."""
        pids = self.clairfs_pids(mnt)
        forked = [p for p in pids if parent_pid(p) in pids]
        found = forked or pids
        if len(found) != 1:
            raise RuntimeError(f"daemon of {mnt}: clairfs processes {pids}")
        return found[0]

    # --- mounts -------------------------------------------------------------
    def mount_alone(self, mnts, logs):
        """clairfs: a daemon per node, each in its node's cgroups; `clairfs
        mount` returns once its mount is live."""
        for i, (mnt, log_file) in enumerate(zip(mnts, logs)):
            os.makedirs(mnt, exist_ok=True)
            errpath = os.path.join(self.work, f"node{i}-mount.stderr")
            p = self.spawn(self.mount_cmd(mnt, log_file), self.node_cgs[i],
                           stderr=open(errpath, "w"))
            scenarios.MOUNTS.append(mnt)
            try:
                rc = self.reap(p, timeout=300)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"clairfs mount {mnt} did not return within 300 s:\n"
                                   + scenarios.tail(errpath)) from None
            if rc != 0:
                raise RuntimeError(f"clairfs mount {mnt} failed (exit {rc}):\n"
                                   + scenarios.tail(errpath))

    def launch_group(self, mnts, logs):
        """clairfs-peers: one MPMD launch of every node's daemon, each
        started through cgexec.sh into its node's cgroups (mpiexec and its
        proxy stay outside them). Returns the mpiexec process."""
        cmd = [MPIEXEC, "-disable-auto-cleanup"]
        for i, (mnt, log_file) in enumerate(zip(mnts, logs)):
            os.makedirs(mnt, exist_ok=True)
            cmd += ([":"] if i else []) + ["-n", "1"] + self.cg_prefix(self.node_cgs[i]) \
                + self.mount_cmd(mnt, log_file) + ["-f", "--peers", "mpi"]
        p = subprocess.Popen(cmd, stdout=open(self.mpiexec_out(), "w"), stderr=subprocess.STDOUT)
        scenarios.RUNNING.append(p)
        scenarios.MOUNTS.extend(mnts)
        return p

    def mpiexec_out(self):
        return os.path.join(self.work, "mpiexec.out")

    def wait_group(self, mnts, logs, launch):
        """`clairfs wait MNT --timeout 300` for each node: its mount answers
        and every peer has joined. A launch that ends first (a daemon
        refused its options, say) fails the run at once rather than after
        the timeout."""
        for mnt, log_file in zip(mnts, logs):
            w = subprocess.Popen([self.clairfs, "wait", mnt, "--timeout", "300"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while w.poll() is None and launch.poll() is None:
                time.sleep(0.1)
            if w.poll() is None:
                w.kill()
            err = w.communicate()[1].strip()
            if w.returncode != 0:
                why = (f"mpiexec exited {launch.returncode}" if launch.poll() is not None
                       else f"clairfs wait {mnt}: {err}")
                # Last, what mpiexec passed on of the daemons' stderr: why.
                raise RuntimeError(f"{why}\ndaemon log: {scenarios.tail(log_file)}\nmpiexec: "
                                   f"{scenarios.tail(self.mpiexec_out())}")

    def unmount_all(self, mnts, launch):
        """`clairfs umount` (it returns once the daemon has exited) or, if
        that fails, umount -l; then mpiexec's end. A daemon still there
        after that (a launch that failed half-way) is killed, so that it
        costs the next run nothing."""
        for mnt in mnts:
            if scenarios.mounted(mnt):
                try:
                    subprocess.run([self.clairfs, "umount", mnt], capture_output=True,
                                   timeout=120)
                except subprocess.TimeoutExpired:
                    log(f"    clairfs umount {mnt} took over 120 s")
            scenarios.unmount(mnt)
            if mnt in scenarios.MOUNTS:
                scenarios.MOUNTS.remove(mnt)
        if launch is not None:
            try:
                self.reap(launch, timeout=60)
            except subprocess.TimeoutExpired:
                log("    mpiexec had not exited 60 s after the unmounts: killed")
        left = [p for m in mnts for p in self.clairfs_pids(m)]
        if left and not wait_gone(left, 30):
            log(f"    clairfs processes {left} still there 30 s after the unmounts: killed")
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # --- scenarios ----------------------------------------------------------
    def sc_local_warm(self, r):
        r["warmed_files"] = scenarios.read_tree(self.local)  # outside the cgroups: stays cached
        return self.run_nodes([self.local] * self.nodes)

    def sc_direct(self, r):
        return self.run_nodes([self.data] * self.nodes)

    def sc_clairfs(self, r, peers):
        mnts, logs = self.node_paths("mnt"), self.node_paths("daemon.log")
        launch = None
        try:
            if peers:
                launch = self.launch_group(mnts, logs)
                self.wait_group(mnts, logs, launch)
            else:
                self.mount_alone(mnts, logs)
            pids = [self.daemon_of(m) for m in mnts]
            r["daemon_pids"] = pids
            r["daemons_in_node_cgroups"] = [
                scenarios.in_cgroup(p, os.path.basename(cg["memory"]))
                for p, cg in zip(pids, self.node_cgs)]
            r["registrations"] = [self.registration(rank=i) for i in range(self.nodes)]

            def register():
                for mnt, reg in zip(mnts, r["registrations"]):
                    self.control_write(mnt, reg)
            out = self.run_nodes(mnts, mnts, pids, register)
            try:
                r["clairfs_status"] = [read_status(m) for m in mnts]
            except (OSError, ValueError) as e:
                raise RuntimeError(f"cannot read a status after the jobs: {e}") from None
            for i, st in enumerate(r["clairfs_status"]):
                c = counters(st)
                log(f"    node {i}: mode {st['mode']}, match rate {st['match_rate']}, backing "
                    f"{c['backing_files']} files, peers in {c['peer_files_in']} / out "
                    f"{c['peer_files_out']} files, {c['peer_errors']} errors")
            return out
        finally:
            self.unmount_all(mnts, launch)
            r["daemon_logs"] = [scenarios.tail(p, 2000) for p in logs]
            for p in logs:
                if os.path.exists(p):
                    os.unlink(p)

    # --- one run --------------------------------------------------------------
    def snapshot(self, mnts, pids):
        """The counters an epoch's figures are differences of."""
        reqs, nbytes = scenarios.loop_stat(self.st)
        return {"t": time.perf_counter(), "shared_fs_bytes": nbytes, "shared_fs_reads": reqs,
                "nodes": [{"cpu_s": pid_cpu(pid), "threads": thread_cpu(pid),
                           **counters(read_status(mnt))} for mnt, pid in zip(mnts, pids)]}

    def run_nodes(self, datas, mnts=(), pids=(), register=None):
        """One job per node on DATAS[i], DistributedSampler rank i, started
        together. Counters are taken first, then register() is called (a
        registration starts the daemons' prefetching while the jobs import
        torch and scan the dataset), then again when the jobs begin and
        once all have finished each epoch. MNTS and PIDS: the daemons'
        mounts and processes."""
        seed = self.cfg["job"].get("seed", 0)
        go = self.go_path()
        specs = [{"id": str(i), "seed": seed, "cgroups": cg} for i, cg in enumerate(self.node_cgs)]
        cmds = [self.job_cmd(data, seed, pids[i] if pids else None, go, rank=i,
                             cpuacct=self.node_cgs[i]["cpuacct"])
                for i, data in enumerate(datas)]
        snaps, errors, finished, lock = [], [], collections.Counter(), threading.Lock()
        start = self.snapshot(mnts, pids)
        if register:
            register()

        def take():
            try:
                snaps.append(self.snapshot(mnts, pids))
            except (OSError, ValueError) as e:  # a status unreadable: the run fails below
                errors.append(e)

        def on_epoch(_idx, rec):
            # A node cannot finish epoch e+1 before e, so the snapshots
            # come in epoch order.
            with lock:
                finished[rec["epoch"]] += 1
                if finished[rec["epoch"]] == self.nodes:
                    take()

        out = self.run_jobs(specs, cmds, go, take, on_epoch)
        if errors:
            raise RuntimeError(f"counters between epochs: {errors[0]}")
        out["before_go"] = delta(start, snaps[0])
        out["epochs"] = cluster_epochs(out["jobs"], [start] + snaps[1:])
        return out

    def run_one(self, sc, rep):
        r = {"scenario": sc, "rep": rep, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        scenarios.drop_caches()
        for cg in self.node_cgs:
            with open(os.path.join(cg["memory"], "memory.max_usage_in_bytes"), "w") as f:
                f.write("0")
        fail0 = [cg_value(cg, "memory.failcnt") for cg in self.node_cgs]
        reqs0, bytes0 = scenarios.loop_stat(self.st)
        t0 = time.perf_counter()
        fn = {"local-warm": self.sc_local_warm, "direct": self.sc_direct,
              "clairfs": lambda r: self.sc_clairfs(r, peers=False),
              "clairfs-peers": lambda r: self.sc_clairfs(r, peers=True)}[sc]
        r.update(fn(r))
        r["run_s"] = round(time.perf_counter() - t0, 3)
        # The whole run's reads: mounts and scans, every job, and whatever
        # the daemons fetched until their unmount.
        reqs1, bytes1 = scenarios.loop_stat(self.st)
        r["run_shared_fs_bytes"] = bytes1 - bytes0
        r["run_shared_fs_reads"] = reqs1 - reqs0
        r["total_s"] = r["span_s"]
        r["mem_max_usage"] = [cg_value(cg, "memory.max_usage_in_bytes") for cg in self.node_cgs]
        r["mem_failcnt"] = [cg_value(cg, "memory.failcnt") - f
                            for cg, f in zip(self.node_cgs, fail0)]
        e = r["epochs"]
        log(f"    slowest node per epoch {fmt([x['slowest_s'] for x in e])} s, shared FS "
            f"{fmt([x['shared_fs_bytes'] / 1e6 for x in e], '{:.0f}')} MB, peers in "
            f"{fmt([sum(n['peer_bytes_in'] for n in x['nodes']) / 1e6 for x in e], '{:.0f}')} MB, "
            f"node memory peaks {', '.join(f'{m >> 20}' for m in r['mem_max_usage'])} MiB")
        return r

    # --- output ---------------------------------------------------------------
    def report(self, info, runs, unavailable, reps):
        prefix, command, rev = self.output_names()
        floor = scenarios.floors(info, self.st)
        summary = summarize(self.scenarios, runs, unavailable, info, floor)
        failures = getattr(self, "failures", [])
        out = {"command": command, "git": rev, "config": self.cfg, "dataset": info,
               "slowfs": {k: self.st[k] for k in ("bps", "iops", "mem", "direct_io")},
               "nodes": self.nodes, "clairfs_mem": self.mem, "repetitions": reps,
               "unavailable": unavailable, "runs": runs, "failures": failures,
               "summary": summary, "floors": floor}
        with open(prefix + ".json", "w") as f:
            json.dump(out, f, indent=1)
        plot(prefix + ".png", self.scenarios, runs, self.cfg, info, self.st)
        table = render(summary, self.scenarios, self.cfg, floor)
        for f in failures:
            table += f"\n\nFailed run: {f['scenario']} rep {f['rep'] + 1}: `{f['error']}`"
        print(table)
        print(f"\nresults: {prefix}.json\nplot:    {prefix}.png")
        if not self.a.no_results_md:
            path = os.path.join(HERE, "RESULTS.md")
            rel = os.path.relpath(prefix, HERE)
            scenarios.append_section(
                path, "## Several nodes (issue 15)",
                "Produced by `bench/cluster.py` (see bench/README.md); every section below "
                "was appended by one invocation.",
                prefix, rev, command, setup_text(info, self.st, self.cfg, self.nodes, self.mem,
                                                 reps, rel), table)
        return out


def cg_value(cgs, knob):
    return scenarios.cg_read({"cgroups": cgs}, "memory", knob)


def delta(a, b):
    """The counters from snapshot A to snapshot B: the shared FS's device,
    and per node its daemon's CPU (all threads, and per thread name) and
    status."""
    nodes = []
    for na, nb in zip(a["nodes"], b["nodes"]):
        n = {"daemon_cpu_s": round(nb["cpu_s"] - na["cpu_s"], 3),
             "threads_cpu_s": {k: round(v - na["threads"].get(k, 0.0), 3)
                               for k, v in sorted(nb["threads"].items())}}
        n.update({k: nb[k] - na[k] for k in COUNTERS})
        nodes.append(n)
    return {"span_s": round(b["t"] - a["t"], 3),
            "shared_fs_bytes": b["shared_fs_bytes"] - a["shared_fs_bytes"],
            "shared_fs_reads": b["shared_fs_reads"] - a["shared_fs_reads"], "nodes": nodes}


def cluster_epochs(jobs, snaps):
    """One record per epoch from the jobs' epoch lines and the snapshots
    between epochs (SNAPS[e] before epoch e, SNAPS[e+1] after it): the
    slowest node's time, every node's, and the counters in between."""
    out = []
    for e in range(len(snaps) - 1):
        recs = [j["epochs"][e] for j in jobs]
        d = delta(snaps[e], snaps[e + 1])
        for n, rec in zip(d["nodes"], recs):
            n["samples"] = rec["samples"]
        out.append({"epoch": e, "slowest_s": max(r["wall_s"] for r in recs),
                    "node_s": [r["wall_s"] for r in recs],
                    "samples": sum(r["samples"] for r in recs), **d})
    return out


def node_sum(ep, key):
    """KEY summed over the nodes' daemons; None in a run without daemons."""
    return sum(n[key] for n in ep["nodes"]) if ep["nodes"] else None


def thread_ms_per_file(ep, thread, key):
    """CPU of the daemons' threads named THREAD per file counted by KEY, ms."""
    files = node_sum(ep, key)
    if not files:
        return None
    return sum(n["threads_cpu_s"].get(thread, 0) for n in ep["nodes"]) * 1e3 / files


def per_file_ms(ep, key):
    """The daemons' CPU over an epoch (summed over nodes) per file counted
    by KEY, in ms; None without daemons or without such files."""
    if not ep["nodes"]:
        return None
    files = ep["samples"] if key == "samples" else node_sum(ep, key)
    return node_sum(ep, "daemon_cpu_s") * 1e3 / files if files else None


def summarize(scs, runs, unavailable, info, floor):
    """Medians over a scenario's runs, per epoch, and the ratios the
    issue's targets are stated in."""
    s = {}
    for sc in scs:
        if sc in unavailable:
            s[sc] = {"unavailable": unavailable[sc]}
            continue
        rs = [r for r in runs if r["scenario"] == sc]
        if not rs:
            continue
        ne = min(len(r["epochs"]) for r in rs)

        def col(f):
            return [med([f(r["epochs"][i]) for r in rs]) for i in range(ne)]

        def each(f):
            return [[f(r["epochs"][i]) for r in rs] for i in range(ne)]
        s[sc] = {
            "runs": len(rs),
            "slowest_s": col(lambda e: e["slowest_s"]),
            "slowest_s_min": [min(x) for x in each(lambda e: e["slowest_s"])],
            "slowest_s_max": [max(x) for x in each(lambda e: e["slowest_s"])],
            "shared_fs_bytes": col(lambda e: e["shared_fs_bytes"]),
            "epochs_shared_fs_x_dataset": med([sum(e["shared_fs_bytes"] for e in r["epochs"])
                                               / info["bytes"] for r in rs]),
            "run_shared_fs_x_dataset": med([r["run_shared_fs_bytes"] / info["bytes"] for r in rs]),
            "peer_bytes_in": col(lambda e: node_sum(e, "peer_bytes_in")),
            "backing_files": col(lambda e: node_sum(e, "backing_files")),
            "run_backing_files": med([sum(counters(st)["backing_files"]
                                          for st in r.get("clairfs_status", [])) for r in rs]),
            "daemon_ms_per_file": col(lambda e: per_file_ms(e, "samples")),
            "daemon_ms_per_file_out": col(lambda e: per_file_ms(e, "peer_files_out")),
            "daemon_ms_per_file_in": col(lambda e: per_file_ms(e, "peer_files_in")),
            "serve_thread_ms_per_file_out": col(
                lambda e: thread_ms_per_file(e, "clairfs-serve", "peer_files_out")),
            "link_thread_ms_per_peer_file": col(
                lambda e: thread_ms_per_file(e, "clairfs-peers", "peer_files_in")),
            "daemon_cpu_s": col(lambda e: node_sum(e, "daemon_cpu_s")),
            "peer_files_in": col(lambda e: node_sum(e, "peer_files_in")),
            "before_go_s": med([r["before_go"]["span_s"] for r in rs]),
            "before_go_shared_fs_bytes": med([r["before_go"]["shared_fs_bytes"] for r in rs]),
            "total_s": med([r["total_s"] for r in rs]),
            "mem_max_usage": max(max(r["mem_max_usage"]) for r in rs)}
    lw = (s.get("local-warm") or {}).get("slowest_s")
    alone = s.get("clairfs") or {}
    for e in s.values():
        if "slowest_s" not in e:
            continue
        e["x_local_warm"] = ratios(e["slowest_s"], lw)
        e["clairfs_alone_x"] = ratios(alone.get("slowest_s"), e["slowest_s"])
        if floor and e["slowest_s"]:
            e["epoch0_x_bandwidth_floor"] = e["slowest_s"][0] / floor["bandwidth_floor_s"]
    peers = s.get("clairfs-peers") or {}
    if peers.get("daemon_cpu_s") and alone.get("daemon_cpu_s"):
        # What the peers add to the daemons' CPU, per file moved between them.
        peers["marginal_ms_per_peer_file"] = [
            (p - a) * 1e3 / f if None not in (p, a) and f else None
            for p, a, f in zip(peers["daemon_cpu_s"], alone["daemon_cpu_s"],
                               peers["peer_files_in"])]
    return s


def ratios(a, b):
    if not a or not b:
        return None
    return [x / y if x and y else None for x, y in zip(a, b)]


def render(summary, scs, cfg, floor):
    """The RESULTS.md table, then the figures the issue's targets read off."""
    ne = cfg["job"].get("epochs", 2)
    ep = "/".join(f"e{i}" for i in range(ne))
    none = [None] * ne
    lines = [f"| scenario | runs | slowest-node epoch s ({ep}) | × local-warm ({ep}) "
             f"| shared-FS MB ({ep}) | shared FS over the epochs ÷ dataset | peer MB in, Σ nodes ({ep}) "
             f"| backing-store files, Σ nodes ({ep}) | daemon CPU ms per file read ({ep}) "
             f"| daemon CPU ms per file served to a peer ({ep}) "
             f"| daemon CPU ms per file fetched from a peer ({ep}) | node memory peak MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for sc in scs:
        e = summary.get(sc)
        if e is None:
            continue
        if "unavailable" in e:
            lines.append(f"| {sc} | – | unavailable: {e['unavailable']} |" + "  |" * 9)
            continue
        mb = [b and b / 1e6 for b in e["peer_bytes_in"]]
        lines.append(
            f"| {sc} | {e['runs']} "
            f"| {scenarios.ranged(e['slowest_s'], e['slowest_s_min'], e['slowest_s_max'])} "
            f"| {fmt(e['x_local_warm'] or none, '{:.2f}')} "
            f"| {fmt([b / 1e6 for b in e['shared_fs_bytes']], '{:.0f}')} "
            f"| {e['epochs_shared_fs_x_dataset']:.3f} "
            f"| {fmt(mb, '{:.0f}')} "
            f"| {fmt(e['backing_files'], '{:.0f}')} "
            f"| {fmt(e['daemon_ms_per_file'], '{:.2f}')} "
            f"| {fmt(e['daemon_ms_per_file_out'], '{:.2f}')} "
            f"| {fmt(e['daemon_ms_per_file_in'], '{:.2f}')} "
            f"| {e['mem_max_usage'] >> 20} |")
    return "\n".join(lines) + read_offs(summary, scs, floor)


def read_offs(summary, scs, floor):
    """Below the table: the figures the issue's targets are stated in."""
    rows = [sc for sc in scs if "slowest_s" in (summary.get(sc) or {})]
    if not rows:
        return ""
    text = "\n\nShared FS read over all epochs ÷ the dataset's bytes (over the whole run, " \
        "mounts and scans included): " + ", ".join(
            f"{sc} {summary[sc]['epochs_shared_fs_x_dataset']:.3f} "
            f"({summary[sc]['run_shared_fs_x_dataset']:.3f})" for sc in rows) + "."
    if floor:
        text += (f"\n\nEpoch 0, slowest node ÷ the bandwidth floor ({floor['dataset_bytes'] / 1e9:.3f}"
                 f" GB / {floor['bps'] / 1e6:g} MB/s = {floor['bandwidth_floor_s']:.1f} s): "
                 + ", ".join(f"{sc} {one(summary[sc].get('epoch0_x_bandwidth_floor'), '{:.2f}')}"
                             for sc in rows) + ".")
    text += ("\n\nOf epoch 0's shared-FS MB, read before the jobs began (from the "
             "registrations, or the jobs' launch, through their imports and scans): " + ", ".join(
                 f"{sc} {summary[sc]['before_go_shared_fs_bytes'] / 1e6:.0f} MB in "
                 f"{summary[sc]['before_go_s']:.1f} s" for sc in rows) + ".")
    peers = summary.get("clairfs-peers") or {}
    ne = len(peers.get("slowest_s") or [])
    if ne:
        none = [None] * ne
        ep = "/".join(f"e{i}" for i in range(ne))
        text += (f"\n\nclairfs-peers ({ep}), slowest node: "
                 f"{fmt(peers['x_local_warm'] or none, '{:.2f}')} × local-warm; "
                 f"clairfs alone takes {fmt(peers['clairfs_alone_x'] or none, '{:.2f}')} "
                 f"× as long. Backing-store files over the run, Σ nodes: "
                 + ", ".join(f"{sc} {summary[sc]['run_backing_files']:.0f}" for sc in rows
                             if sc.startswith("clairfs")) + "."
                 f"\n\nclairfs-peers, daemon CPU per file moved between daemons ({ep}): "
                 f"the thread answering peers (clairfs-serve) "
                 f"{fmt(peers['serve_thread_ms_per_file_out'], '{:.3f}')} ms per file served, "
                 f"the TCP links' thread (clairfs-peers, both directions) "
                 f"{fmt(peers['link_thread_ms_per_peer_file'], '{:.3f}')} ms per file; all "
                 f"threads, minus clairfs alone's, "
                 f"{fmt(peers.get('marginal_ms_per_peer_file') or none, '{:.3f}')} ms per file.")
    return text


def setup_text(info, st, cfg, nodes, mem, reps, rel):
    j = cfg["job"]
    return (f"{nodes} simulated nodes on one host. Dataset {info['files']} JPEGs "
            f"({info.get('style', 'imagenet')} style), {info['bytes'] / 1e9:.2f} GB (mean "
            f"{info['mean'] / 1e3:.0f} KB, median {info['median'] / 1e3:.0f} KB); one slow FS "
            f"shared by every node, {st['bps'] / 1e6:g} MB/s + {st['iops']} read IOPS (loop "
            f"direct-io {st['direct_io']}); per node a memory cgroup of {st['mem'] >> 20} MiB "
            f"holding its job and its daemon, clairfs --mem {mem / 1e6:.0f} MB "
            f"({mem / info['bytes']:.2f} of the dataset), no SSD tier; per node "
            f"{scenarios.job_text(j)}, DistributedSampler world {nodes}, seed {j.get('seed', 0)}, "
            f"the jobs started together; {reps} repetition(s), medians (min–max when they "
            f"differ). The page cache is the host's: in `direct` a file one node has cached "
            f"is a hit for the others, which separate nodes would not have. Raw: `{rel}.json`, "
            f"plot `{rel}.png`.")


def plot(path, scs, runs, cfg, info, st):
    plt = scenarios.pyplot() if runs else None
    if plt is None:
        return
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(11, 4.5))
    for sc in scs:
        rs = [r for r in runs if r["scenario"] == sc]
        if not rs:
            continue
        ne = min(len(r["epochs"]) for r in rs)
        xs = list(range(ne))
        line, = ax_t.plot(xs, [med([r["epochs"][i]["slowest_s"] for r in rs]) for i in xs],
                          marker="o", label=sc)
        for r in rs:
            ax_t.scatter(xs, [r["epochs"][i]["slowest_s"] for i in xs],
                         color=line.get_color(), alpha=0.35, s=14)
        ax_b.plot(xs, [med([r["epochs"][i]["shared_fs_bytes"] / 1e6 for r in rs]) for i in xs],
                  marker="o", color=line.get_color(), label=f"{sc}: shared FS")
        if sc == "clairfs-peers":
            ax_b.plot(xs, [med([sum(n["peer_bytes_in"] for n in r["epochs"][i]["nodes"]) / 1e6
                                for r in rs]) for i in xs],
                      marker="s", linestyle="--", color=line.get_color(), label=f"{sc}: peers")
    ne = cfg["job"].get("epochs", 2)
    for ax in (ax_t, ax_b):
        ax.set_xticks(range(ne))
        ax.set_xlabel("epoch")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax_t.set_ylabel("slowest node's epoch s (median; dots: each repetition)")
    ax_b.set_ylabel("MB read per epoch, all nodes (median)")
    ax_b.axhline(info["bytes"] / 1e6, color="grey", linewidth=0.8, linestyle=":")
    ax_b.annotate("dataset", (0, info["bytes"] / 1e6), fontsize=7, color="grey",
                  textcoords="offset points", xytext=(2, 2))
    fig.suptitle(f"{cfg.get('nodes', 3)} nodes; {info['files']} files, {info['bytes'] / 1e9:.2f} GB; "
                 f"slow FS {st['bps'] / 1e6:g} MB/s, {st['iops']} IOPS; memcg "
                 f"{st['mem'] >> 20} MiB per node", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    a = scenarios.arg_parser(__doc__).parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            d = json.load(f)
        scs = a.scenarios.split(",") if a.scenarios else d["config"]["scenarios"]
        floor = scenarios.floors(d["dataset"], d["slowfs"])
        summary = summarize(scs, d["runs"], d["unavailable"], d["dataset"], floor)
        plot(os.path.splitext(a.from_json)[0] + ".png", scs, d["runs"], d["config"],
             d["dataset"], d["slowfs"])
        print(render(summary, scs, d["config"], floor))
        return
    scenarios.run_bench(Cluster, a, "cluster")


if __name__ == "__main__":
    main()
