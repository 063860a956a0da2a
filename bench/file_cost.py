#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Per-file cost of reading a dataset through clairfs, bindfs and mergerfs.

Generates N files of one size, mounts the same backing directory several
ways (by default clairfs with its requests through /dev/fuse and over
io_uring, clairfs --kernel-opens, bindfs and mergerfs; --mounts chooses)
and reads every file (open + read whole + close, by build/bench/read_files)
natively and through each mount, in two cache states:

  warm         the kernel page cache holds the files as seen through the
               path being read (one unmeasured pass, then one measured pass).
               Through a FUSE mount that keeps its page cache (keep_cache),
               the daemon only sees OPEN and RELEASE (and LOOKUP for dentries
               the kernel dropped).
  daemon path  the FUSE mount's page cache is empty but the backing files'
               cache is warm: caches are dropped (echo 3 > drop_caches, which
               also drops dentries and inodes), the backing tree is re-read
               natively, then one pass through the mount is measured. Every
               byte then goes through the daemon (LOOKUP, OPEN, READ, RELEASE).

clairfs-io-uring needs the kernel's FUSE io_uring switch
(/sys/module/fuse/parameters/enable_uring): the run turns it on and puts it
back at the end; the report says which transport each clairfs mount used,
as its status reports it.

Daemon CPU is utime+stime of the daemon process (all its threads) from
/proc/PID/stat before and after each measured pass.

Run as root (drop_caches and mounting need it), with the stdlib only:

  sudo /usr/bin/python3 bench/file_cost.py --files 10000 --size 110K --rounds 5

See bench/README.md for what the figures mean and their caveats.
"""

import argparse
import datetime
import json
import os
import platform
import random
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uring_switch  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
DAY = 86400

# Options that give each FUSE file system a fair chance at the warm case:
# the kernel keeps file pages across opens, and names and attributes are
# cached for as long as clairfs caches them (its --cache-timeout default).
#
# bindfs 1.14 (libfuse 2, high-level API): "kernel_cache" is libfuse's
# keep_cache-on-every-open; without it the page cache is invalidated at each
# open and every warm read would go through the daemon. attr/entry/negative
# timeouts default to 1 s / 1 s / 0 s. bindfs runs single-threaded unless
# --multithreaded (the man page's caveat is about permission races on new
# files, irrelevant read-only); clairfs runs up to 16 threads, so bindfs
# gets threads too.
BINDFS_ARGS = ["--multithreaded", "-o",
               "ro,kernel_cache,attr_timeout=%d,entry_timeout=%d,negative_timeout=%d"
               % (DAY, DAY, DAY)]
# mergerfs 2.33 (its own libfuse 3 fork): cache.files=full sets keep_cache on
# every open (auto-full would also compare mtime/size with the previous
# open); cache.attr/entry/negative_entry default to 1/1/0 s. dropcacheonclose
# stays off (it would evict the backing file's pages on every close, which
# the daemon-path scenario relies on). Threads default to one per core.
MERGERFS_ARGS = ["-o",
                 "ro,cache.files=full,cache.attr=%d,cache.entry=%d,cache.negative_entry=%d,"
                 "cache.readdir=true,cache.symlinks=true" % (DAY, DAY, DAY)]


# clairfs mounts by name, with the options that make each one.
CLAIRFS_KINDS = {
    "clairfs": [],
    "clairfs-dev-fuse": ["--io-uring", "off"],
    "clairfs-io-uring": ["--io-uring", "on"],
    "clairfs-io-uring-normal": ["--io-uring", "on", "--ring-sched", "normal"],
    "clairfs-kernel-opens": ["--kernel-opens"],
    "clairfs-fanotify": ["--opens", "fanotify"],
    "clairfs-fuse-opens": ["--opens", "fuse"],
    "clairfs-no-detect": ["--no-detect"],
}


def log(msg):
    print("[file_cost] " + msg, file=sys.stderr, flush=True)


def transport_of(mountpoint):
    """The transport a clairfs mount's status reports, or None."""
    try:
        with open(os.path.join(mountpoint, ".clairfs", "status")) as f:
            t = json.load(f).get("transport") or {}
        return "%s (%s)" % (t.get("in_use"), t.get("reason"))
    except (OSError, ValueError):
        return None


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError("size like 110K, 4M or 4096: %r" % text)
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
    value = int(m.group(1)) * mult
    if value <= 0:
        raise argparse.ArgumentTypeError("size must be positive")
    return value


def fstype(path):
    out = subprocess.run(["df", "--output=fstype", path], capture_output=True,
                         text=True, check=True).stdout.split()
    return out[-1] if out else "?"


def pick_workdir(requested):
    if requested:
        return requested
    for cand in (tempfile.gettempdir(), "/var/tmp"):
        if os.path.isdir(cand) and fstype(cand) not in ("tmpfs", "ramfs"):
            return cand
    raise SystemExit("no local-disk temp dir: /tmp and /var/tmp are tmpfs; use --workdir")


def run_text(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info(clairfs_bin):
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "nproc": os.cpu_count(),
        "uname_r": platform.release(),
        "uname_a": " ".join(platform.uname()),
        "clk_tck": CLK_TCK,
    }
    with open("/proc/meminfo") as f:
        info["mem_total"] = f.readline().split(":", 1)[1].strip()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    info["clairfs_commit"] = run_text(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = run_text(["git", "-C", REPO, "status", "--porcelain", "--", "src", "include",
                      "meson.build"])
    info["clairfs_tree_dirty"] = bool(dirty)
    info["clairfs_binary"] = clairfs_bin
    info["libfuse3"] = run_text(["dpkg-query", "-W", "-f=${Version}", "libfuse3-3"])
    info["bindfs"] = run_text(["dpkg-query", "-W", "-f=${Version}", "bindfs"])
    info["mergerfs"] = run_text(["dpkg-query", "-W", "-f=${Version}", "mergerfs"])
    return info


# ---------------------------------------------------------------- data set

def generate(back, nfiles, size, ndirs, seed):
    """Writes nfiles random files (deterministic in seed) into ndirs
    subdirectories; returns their paths relative to back, shuffled (the
    order a training epoch would read them, also deterministic)."""
    rng = random.Random(seed)
    rel = []
    for d in range(ndirs):
        os.makedirs(os.path.join(back, "d%03d" % d), exist_ok=True)
    t0 = time.monotonic()
    for i in range(nfiles):
        r = "d%03d/f%06d.bin" % (i % ndirs, i)
        with open(os.path.join(back, r), "wb") as f:
            f.write(rng.randbytes(size))
        rel.append(r)
        if (i + 1) % 2000 == 0:
            log("generated %d/%d files" % (i + 1, nfiles))
    os.sync()
    log("generated %d files of %d bytes in %.1f s" % (nfiles, size, time.monotonic() - t0))
    rng.shuffle(rel)
    return rel


def write_list(path, root, rel):
    with open(path, "w") as f:
        for r in rel:
            f.write(os.path.join(root, r) + "\n")


# ---------------------------------------------------------------- mounts

def proc_argv(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


def find_daemon(mountpoint, exe_names, timeout=5.0):
    """The PID of the process serving mountpoint: the one whose argv has
    mountpoint as a whole argument and whose program is one of exe_names.
    (Like `pgrep -f MOUNTPOINT`, but without matching /mnt/a1 for /mnt/a.)"""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            argv = proc_argv(int(name))
            if not argv or mountpoint not in argv[1:]:
                continue
            if os.path.basename(argv[0]) in exe_names:
                found.append(int(name))
        if len(found) == 1:
            return found[0]
        if time.monotonic() > deadline:
            raise RuntimeError("expected one daemon for %s, found %s" % (mountpoint, found))
        time.sleep(0.05)


def cpu_seconds(pid):
    """utime+stime of the whole process (every thread), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def alive(pid):
    """True while pid runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] not in ("Z", "X")


def mount_line(mountpoint):
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 1 and parts[1] == mountpoint:
                return line.strip()
    return ""


def wait_mounted(mountpoint, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not os.path.ismount(mountpoint):
        if time.monotonic() > deadline:
            raise RuntimeError("%s did not become a mount point" % mountpoint)
        time.sleep(0.05)


def unmount(mountpoint):
    """Unmounts, retrying while busy, then lazily. True when it is gone."""
    for _ in range(20):
        if not os.path.ismount(mountpoint):
            return True
        subprocess.run(["fusermount3", "-u", "-q", mountpoint], stderr=subprocess.DEVNULL)
        if not os.path.ismount(mountpoint):
            return True
        time.sleep(0.25)
    subprocess.run(["fusermount3", "-u", "-z", "-q", mountpoint], stderr=subprocess.DEVNULL)
    return not os.path.ismount(mountpoint)


class Mount:
    def __init__(self, name, cmd, exe_names, mountpoint):
        self.name = name
        self.cmd = cmd
        self.exe_names = exe_names
        self.mountpoint = mountpoint
        self.pid = None
        self.mounted = False
        self.transport = None  # clairfs: the transport its status reports

    def start(self):
        log("mounting %s: %s" % (self.name, shlex.join(self.cmd)))
        r = subprocess.run(self.cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise RuntimeError("%s mount failed (exit %d): %s" %
                               (self.name, r.returncode, (r.stderr or r.stdout).strip()))
        self.mounted = True
        wait_mounted(self.mountpoint)
        self.pid = find_daemon(self.mountpoint, self.exe_names)
        log("%s daemon pid %d" % (self.name, self.pid))

    def stop(self):
        if not self.mounted:
            return True
        gone = unmount(self.mountpoint)
        if gone:
            self.mounted = False
        # The daemon exits once unmounted; give it a moment, then end the one
        # we started (by its PID) if it lingers.
        if self.pid:
            for _ in range(40):
                if not alive(self.pid):
                    break
                time.sleep(0.05)
            else:
                argv = proc_argv(self.pid)
                if argv and self.mountpoint in argv:
                    os.kill(self.pid, signal.SIGTERM)
        return gone


def make_mounts(args, tools, back, mntroot):
    mounts, skipped = [], {}
    wanted = [m.strip() for m in args.mounts.split(",") if m.strip()]
    for name in wanted:
        mp = os.path.join(mntroot, name)
        if name in CLAIRFS_KINDS:
            # clairfs-kernel-opens: the opt-in FUSE no_open mode, where the
            # kernel stops sending OPEN/RELEASE (the daemon sees no opens).
            # clairfs-fanotify / clairfs-fuse-opens: opens followed through
            # fanotify, or through an OPEN round trip each (--opens).
            # clairfs-no-detect: the default without job detection, to
            # show what detection costs each unregistered open.
            # clairfs-dev-fuse / clairfs-io-uring: the default mode, its
            # requests through /dev/fuse or over io_uring (--io-uring).
            # clairfs-io-uring-normal: io_uring with the ring threads left
            # at the normal policy (--ring-sched normal), to show what
            # SCHED_IDLE saves.
            exe = tools["clairfs"]
            extra = CLAIRFS_KINDS[name]
            cmd = [exe, "mount", back, mp] + extra + shlex.split(args.clairfs_opts)
            names = {os.path.basename(exe)}
        elif name == "bindfs":
            exe = shutil.which("bindfs")
            cmd = [exe or "bindfs"] + shlex.split(args.bindfs_opts) + [back, mp]
            names = {"bindfs", exe}
        elif name == "mergerfs":
            exe = shutil.which("mergerfs")
            cmd = [exe or "mergerfs"] + shlex.split(args.mergerfs_opts) + [back, mp]
            names = {"mergerfs", exe}
        else:
            raise SystemExit("unknown mount kind %r (%s, bindfs, mergerfs)" % (
                name, ", ".join(CLAIRFS_KINDS)))
        if not exe or not os.access(exe, os.X_OK):
            skipped[name] = "not installed (%s not found)" % name
            log("skipping %s: not installed" % name)
            continue
        os.makedirs(mp, exist_ok=True)
        mounts.append(Mount(name, cmd, names, mp))
    return mounts, skipped


# ---------------------------------------------------------------- measuring

def drop_caches(how):
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("%d\n" % how)


def read_pass(read_files, listfile):
    """Runs one pass of read_files; returns its JSON figures plus the CPU the
    reader itself used (user and system, from the reaped child's rusage)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([read_files, listfile, "--passes", "1"], capture_output=True, text=True,
                       timeout=3600)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError("read_files %s failed (exit %d): %s" %
                           (listfile, r.returncode, r.stderr.strip()))
    fig = json.loads(r.stdout.strip().splitlines()[-1])
    fig["client_user_s"] = ru1.ru_utime - ru0.ru_utime
    fig["client_sys_s"] = ru1.ru_stime - ru0.ru_stime
    return fig


def measure(read_files, listfile, mount):
    cpu0 = cpu_seconds(mount.pid) if mount else None
    fig = read_pass(read_files, listfile)
    if mount:
        time.sleep(0.05)  # let the last asynchronous RELEASE be served
        fig["daemon_cpu_s"] = cpu_seconds(mount.pid) - cpu0
        fig["daemon_cpu_ms_per_file"] = fig["daemon_cpu_s"] * 1e3 / fig["files"]
    fig["client_cpu_us_per_file"] = \
        (fig["client_user_s"] + fig["client_sys_s"]) * 1e6 / fig["files"]
    return fig


def run_scenario(kind, state, lists, read_files, mounts_by_name, drop):
    mount = mounts_by_name.get(kind)
    if state == "warm":
        read_pass(read_files, lists[kind])  # unmeasured: fills the cache
    else:
        drop_caches(drop)                      # empties the mount's cache (and all others)
        read_pass(read_files, lists["native"])  # unmeasured: backing warm again
    return measure(read_files, lists[kind], mount)


# ---------------------------------------------------------------- reporting

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(raw, kinds, states):
    """Medians over rounds per scenario. Ratios are the median over rounds
    of (mount / native in the same round), so drift between rounds on a
    noisy machine cancels out."""
    native = {r["round"]: r for r in raw if r["kind"] == "native"}
    rows = []
    for kind in kinds:
        for state in (["warm"] if kind == "native" else states):
            runs = [r for r in raw if r["kind"] == kind and r["state"] == state]
            if not runs:
                continue
            t_ratio = [r["us_per_file"] / native[r["round"]]["us_per_file"] for r in runs]
            bw_ratio = [r["MB_per_s"] / native[r["round"]]["MB_per_s"] for r in runs]
            rows.append({
                "kind": kind,
                "state": state,
                "rounds": len(runs),
                "us_per_file": med([r["us_per_file"] for r in runs]),
                "us_per_file_min": min(r["us_per_file"] for r in runs),
                "us_per_file_max": max(r["us_per_file"] for r in runs),
                "time_ratio": med(t_ratio),
                "MB_per_s": med([r["MB_per_s"] for r in runs]),
                "MB_per_s_ratio": med(bw_ratio),
                "daemon_cpu_ms_per_file": med([r.get("daemon_cpu_ms_per_file") for r in runs]),
                "client_cpu_us_per_file": med([r["client_cpu_us_per_file"] for r in runs]),
            })
    return rows


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows):
    out = ["| read via | cache state | us/file (median) | min..max | x native time "
           "| MB/s | x native MB/s | daemon CPU ms/file | reader CPU us/file |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        state = "warm" if r["state"] == "warm" else "daemon path"
        out.append("| %s | %s | %s | %s..%s | %s | %s | %s | %s | %s |" % (
            r["kind"], state, fmt(r["us_per_file"], ".1f"), fmt(r["us_per_file_min"], ".1f"),
            fmt(r["us_per_file_max"], ".1f"), fmt(r["time_ratio"], ".2f"),
            fmt(r["MB_per_s"], ".0f"), fmt(r["MB_per_s_ratio"], ".2f"),
            fmt(r["daemon_cpu_ms_per_file"], ".4f"), fmt(r["client_cpu_us_per_file"], ".1f")))
    return "\n".join(out)


def verdicts(rows, nfiles):
    get = {(r["kind"], r["state"]): r for r in rows}
    lines = []
    main = next((k for k in ("clairfs-io-uring", "clairfs") if (k, "warm") in get
                 or (k, "daemon") in get), "clairfs")
    warm = get.get((main, "warm"))
    dpath = get.get((main, "daemon"))
    dev = get.get(("clairfs-dev-fuse", "warm"))
    if warm and main == "clairfs-io-uring":
        ok = warm["time_ratio"] <= 1.3
        lines.append("- clairfs over io_uring, warm: %.1f us/file = %.2fx native (issue 42's "
                     "target <= 1.3x): %s%s" % (
                         warm["us_per_file"], warm["time_ratio"], "MET" if ok else "NOT MET",
                         "; over /dev/fuse %.1f us/file = %.2fx" % (
                             dev["us_per_file"], dev["time_ratio"]) if dev else ""))
    elif warm:
        ok = warm["time_ratio"] <= 2.0
        lines.append("- clairfs warm: %.1f us/file = %.2fx native (target <= 2x): %s" % (
            warm["us_per_file"], warm["time_ratio"], "MET" if ok else "NOT MET"))
    for r, label in ((warm, "warm"), (dpath, "daemon path")):
        if r:
            ok = r["daemon_cpu_ms_per_file"] < 0.3
            lines.append("- %s daemon CPU per file, %s: %.4f ms (target < 0.3 ms): %s" % (
                main, label, r["daemon_cpu_ms_per_file"], "MET" if ok else "NOT MET"))
    lines.append("- daemon CPU resolution: one clock tick = %.0f ms over %d files = %.4f ms/file "
                 "per pass" % (1e3 / CLK_TCK, nfiles, 1e3 / CLK_TCK / nfiles))
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10000, help="how many files [10000]")
    ap.add_argument("--size", type=parse_size, default=parse_size("110K"),
                    help="size of each file, e.g. 110K (K = 1024) [110K]")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds [5]")
    ap.add_argument("--dirs", type=int, default=100, help="subdirectories [100]")
    ap.add_argument("--seed", type=int, default=2, help="random seed for data and order [2]")
    ap.add_argument("--build", default="build", help="meson build dir (relative to the repo "
                    "root unless absolute) [build]")
    ap.add_argument("--json", help="write every raw figure and the summary here")
    ap.add_argument("--workdir", help="where to make the temp dir (default: /tmp unless it "
                    "is tmpfs, then /var/tmp)")
    ap.add_argument("--mounts", default="clairfs-dev-fuse,clairfs-io-uring,clairfs-kernel-opens,"
                    "bindfs,mergerfs",
                    help="which file systems to mount [%(default)s]")
    ap.add_argument("--states", default="warm,daemon",
                    help="cache states to measure: warm, daemon [warm,daemon]")
    ap.add_argument("--drop", type=int, choices=(1, 3), default=3,
                    help="value written to drop_caches for the daemon-path state: 3 also drops "
                    "dentries and inodes (so LOOKUPs happen too), 1 only page cache [3]")
    ap.add_argument("--clairfs-opts", default="", help="extra clairfs mount options")
    ap.add_argument("--bindfs-opts", default=shlex.join(BINDFS_ARGS),
                    help="bindfs options [%(default)s]")
    ap.add_argument("--mergerfs-opts", default=shlex.join(MERGERFS_ARGS),
                    help="mergerfs options [%(default)s]")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (data and lists)")
    args = ap.parse_args()

    if os.geteuid() != 0:
        raise SystemExit("run as root: dropping caches and mounting need it")
    if args.files < 1 or args.rounds < 1 or args.dirs < 1:
        raise SystemExit("--files, --rounds and --dirs must be positive")
    states = [s.strip() for s in args.states.split(",") if s.strip()]
    if not states or any(s not in ("warm", "daemon") for s in states):
        raise SystemExit("--states takes warm and/or daemon")

    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    tools = {"clairfs": os.path.join(build, "src", "clairfs"),
             "read_files": os.path.join(build, "bench", "read_files")}
    for name, path in tools.items():
        if not os.access(path, os.X_OK):
            raise SystemExit("%s not built at %s: run `ninja -C %s`" % (name, path, args.build))

    # SIGTERM/SIGHUP unwind through the finally below like Ctrl-C does.
    def on_signal(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    info = machine_info(tools["clairfs"])
    base = pick_workdir(args.workdir)
    tmp = tempfile.mkdtemp(prefix="clairfs-bench-", dir=base)
    log("work dir %s (%s)" % (tmp, fstype(tmp)))
    back = os.path.join(tmp, "back")
    mntroot = os.path.join(tmp, "mnt")
    listdir = os.path.join(tmp, "lists")
    for d in (back, mntroot, listdir):
        os.makedirs(d)

    mounts = []
    raw = []
    uring_was = None
    try:
        uring = [m for m in args.mounts.split(",") if m.startswith("clairfs-io-uring")]
        if uring:
            # An io_uring mount needs the switch: turned on for this run.
            if not os.path.exists(uring_switch.SWITCH):
                raise SystemExit("%s: this kernel has no %s" % (uring[0], uring_switch.SWITCH))
            uring_was = uring_switch.set_for_run("on", log, "file_cost")
        rel = generate(back, args.files, args.size, args.dirs, args.seed)
        mounts, skipped = make_mounts(args, tools, back, mntroot)
        lists = {"native": os.path.join(listdir, "native.txt")}
        write_list(lists["native"], back, rel)
        for m in mounts:
            m.start()
            lists[m.name] = os.path.join(listdir, m.name + ".txt")
            write_list(lists[m.name], m.mountpoint, rel)
            # Same bytes through the mount as in the backing file.
            with open(os.path.join(back, rel[0]), "rb") as a, \
                    open(os.path.join(m.mountpoint, rel[0]), "rb") as b:
                if a.read() != b.read():
                    raise RuntimeError("%s serves different bytes for %s" % (m.name, rel[0]))
            if m.name in CLAIRFS_KINDS:
                m.transport = transport_of(m.mountpoint)
                log("%s transport: %s" % (m.name, m.transport))
        by_name = {m.name: m for m in mounts}
        kinds = ["native"] + [m.name for m in mounts]

        scenarios = [("native", "warm")] + [(k, s) for s in states for k in kinds[1:]]
        for rnd in range(args.rounds):
            order = scenarios if rnd % 2 == 0 else scenarios[::-1]
            for kind, state in order:
                fig = run_scenario(kind, state, lists, tools["read_files"], by_name, args.drop)
                fig.update({"round": rnd, "kind": kind, "state": state})
                raw.append(fig)
                log("round %d %-8s %-6s %8.1f us/file %7.0f MB/s%s" % (
                    rnd, kind, state, fig["us_per_file"], fig["MB_per_s"],
                    "  daemon %.4f ms/file" % fig["daemon_cpu_ms_per_file"]
                    if "daemon_cpu_ms_per_file" in fig else ""))

        rows = summarize(raw, kinds, states)
        command = "sudo /usr/bin/python3 bench/file_cost.py " + shlex.join(sys.argv[1:])
        report = [
            "command: `%s`" % command,
            "date: %s; machine: %s, nproc %s, kernel %s, %s RAM; clairfs %s%s" % (
                info["date"], info.get("cpu", "?"), info["nproc"], info["uname_r"],
                info["mem_total"], info["clairfs_commit"],
                " (+ uncommitted changes in src/)" if info["clairfs_tree_dirty"] else ""),
            "data: %d files x %d bytes in %d dirs on %s; %d rounds; medians over rounds; "
            "ratios are medians of per-round mount/native" % (
                args.files, args.size, args.dirs, fstype(tmp), args.rounds),
            "",
            table(rows),
            "",
            verdicts(rows, args.files),
        ]
        for m in mounts:
            if m.transport:
                report.append("- %s: requests over %s" % (m.name, m.transport))
        for name, why in skipped.items():
            report.append("- %s skipped: %s" % (name, why))
        print("\n".join(report))

        if args.json:
            doc = {
                "command": command,
                "args": vars(args),
                "machine": info,
                "workdir_fstype": fstype(tmp),
                "mounts": {m.name: {"cmd": m.cmd, "proc_mounts": mount_line(m.mountpoint),
                                    "transport": m.transport}
                           for m in mounts},
                "skipped": skipped,
                "summary": rows,
                "raw": raw,
            }
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
            log("wrote %s" % args.json)
    finally:
        still = []
        for m in reversed(mounts):
            try:
                if not m.stop():
                    still.append(m.mountpoint)
            except Exception as e:  # keep unmounting the others
                log("unmounting %s: %s" % (m.mountpoint, e))
                still.append(m.mountpoint)
        with open("/proc/self/mounts") as f:
            for line in f:
                mp = line.split()[1]
                if mp.startswith(tmp + "/") and mp not in still:
                    still.append(mp)
        uring_switch.put_back(uring_was, log, "file_cost")
        if still:
            log("still mounted, so %s is left in place: %s" % (tmp, ", ".join(still)))
        elif args.keep:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        log("interrupted (%s)" % (e or "Ctrl-C"))
        sys.exit(130)
