#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""--io-uring auto|on|off: which way the kernel's requests reach the daemon,
as status `transport` reports it, with the kernel's switch
(/sys/module/fuse/parameters/enable_uring) set by this test for each case
and put back as it was at the end.

- switch off: auto serves /dev/fuse and says the switch is why; on fails
  the mount with one `clairfs:` line naming the switch, nothing mounted;
  off serves /dev/fuse.
- switch on: auto and on serve io_uring (every counted request came over
  the rings, none over /dev/fuse), the human status says so, and every byte
  read equals the backing file's: small files from the RAM tier, files held
  by chunk, files read through with --mem 0 (and passed through where
  passthrough is on), at odd offsets and from several threads at once; the
  ring threads that served took SCHED_IDLE (--ring-sched idle, the
  default), and none with --ring-sched normal; off still serves /dev/fuse.

Where this build's libfuse has no io_uring (no subprojects/libfuse: the
system's libfuse was built against), auto says so and on fails; with
subprojects/libfuse in the source tree that is a failure. Exit 77 only
without FUSE, or where the kernel has no enable_uring switch at all (a
kernel before 6.14 or without CONFIG_FUSE_IO_URING), which is said."""
import os
import random
import sys
import threading
import time

import mountlib as ml

SWITCH = "/sys/module/fuse/parameters/enable_uring"
BIG = 3 * ml.MIB + 777  # above a sixteenth of --mem 16M: held by chunk or read through


def set_switch(on):
    with open(SWITCH, "w") as f:
        f.write("Y" if on else "N")
    with open(SWITCH) as f:
        got = f.read().strip()
    ml.check(got == ("Y" if on else "N"), f"{SWITCH} reads {got!r} after writing it")


def build_has_io_uring(data, mp):
    """Whether this build's libfuse has io_uring, from status with the switch on."""
    set_switch(True)
    with ml.mounted(data, mp, "--no-detect"):
        t = ml.status(mp)["transport"]
    if "this build's libfuse" in t["reason"]:
        subproject = os.path.join(ml.SOURCE_ROOT, "subprojects", "libfuse", "meson.build")
        ml.check(not os.path.exists(subproject),
                 f"subprojects/libfuse is there, yet this build has no io_uring: {t}")
        ml.log(f"this build's libfuse has no io_uring (no subprojects/libfuse): {t['reason']}")
        return False
    return True


def make_dataset(root):
    expected = ml.random_dataset(root, 40, 42, 300_000, empty=())
    rng = random.Random(43)
    os.makedirs(os.path.join(root, "big"), exist_ok=True)
    for i in range(3):
        rel = os.path.join("big", f"shard{i}.bin")
        data = rng.randbytes(BIG + i * 4097)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        expected[rel] = data
    return expected


def transport(mp):
    return ml.status(mp)["transport"]


def human_transport(mp):
    r = ml.clairfs("status", mp)
    ml.check(r.returncode == 0, f"clairfs status failed: {r.stderr.strip()}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("transport:")]
    ml.check(len(lines) == 1, f"no one transport line in the human status:\n{r.stdout}")
    return lines[0]


def pread_ranges(mp, expected, rng):
    for rel, data in sorted(expected.items()):
        with open(os.path.join(mp, rel), "rb", buffering=0) as f:
            for _ in range(6):
                off = rng.choice([0, 1, 4095, 4096, max(len(data) - 1, 0), len(data),
                                  rng.randrange(len(data) + 1)])
                size = rng.choice([1, 4096, 70_000, ml.MIB, 2 * ml.MIB])
                got = os.pread(f.fileno(), size, off)
                ml.check(got == data[off:off + size], f"{rel}: pread({size}, {off}) differs")


def read_in_threads(mp, expected, what):
    """Four threads read every file, each in its own order: requests from
    both CPUs' rings at once."""
    errors = []

    def reader(seed):
        order = sorted(expected)
        random.Random(seed).shuffle(order)
        for rel in order:
            with open(os.path.join(mp, rel), "rb") as f:
                if f.read() != expected[rel]:
                    errors.append(rel)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    ml.check(not any(t.is_alive() for t in threads), f"{what}: a reader hung")
    ml.check(not errors, f"{what}: {sorted(set(errors))} differ through the mount")


def daemon_threads(mp):
    """{tid: (name, scheduling policy)} of every thread of the daemon."""
    pids = ml.daemon_pids(mp)
    ml.check(len(pids) == 1, f"daemons of {mp}: {pids}")
    out = {}
    for tid in os.listdir(f"/proc/{pids[0]}/task"):
        try:
            with open(f"/proc/{pids[0]}/task/{tid}/comm") as f:
                out[int(tid)] = (f.read().strip(), os.sched_getscheduler(int(tid)))
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return out


def check_ring_sched(mp, policy, what):
    """Every ring thread that served took --ring-sched's policy, as status
    counts them: SCHED_IDLE for idle (the default), none of them for normal,
    and no other thread of the daemon at SCHED_IDLE. A ring thread takes it at its first request, which may be one of this
    check's own (a status read, a RELEASE sent after a close): so the
    threads /proc shows idle must number between the counts of two status
    reads taken before and after it."""
    before = transport(mp)
    threads = daemon_threads(mp)
    after = transport(mp)
    rings = {t: p for t, (name, p) in threads.items() if name.startswith("fuse-ring")}
    idle = sorted(tid for tid, p in rings.items() if p == os.SCHED_IDLE)
    # A ring thread counts itself just after it takes the policy: a status
    # read may come between the two.
    deadline = time.monotonic() + 5
    while after["ring_threads_idle"] < len(idle) and time.monotonic() < deadline:
        time.sleep(0.05)
        after = transport(mp)
    # Threads a ring thread needed started (a bounded read's worker, the
    # page-drop notifier, a planner) must not inherit its SCHED_IDLE.
    others = {f"{name} {t}": p for t, (name, p) in threads.items()
              if not name.startswith("fuse-ring") and p == os.SCHED_IDLE}
    ml.check(not others, f"{what}: threads other than the rings at SCHED_IDLE: {others}")
    ml.log(f"{what}: ring threads {rings}, status {after['ring_sched']}, "
           f"{before['ring_threads_idle']}..{after['ring_threads_idle']} idle")
    ml.check(rings, f"{what}: no fuse-ring threads in the daemon")
    ml.check(after["ring_sched"] == policy and after["ring_threads_refused"] == 0,
             f"{what}: {after}")
    ml.check(before["ring_threads_idle"] <= len(idle) <= after["ring_threads_idle"],
             f"{what}: {idle} SCHED_IDLE in /proc, status {before} then {after}")
    if policy == "idle":
        ml.check(idle, f"{what}: no ring thread took SCHED_IDLE: {rings}")
        ml.check("SCHED_IDLE" in human_transport(mp), human_transport(mp))
    else:
        ml.check(not idle and after["ring_threads_idle"] == 0, f"{what}: {rings} {after}")
        ml.check("SCHED_IDLE" not in human_transport(mp), human_transport(mp))


def case_switch_off(data, mp, has_uring):
    set_switch(False)
    with ml.mounted(data, mp, "--no-detect"):
        t = transport(mp)
        ml.log(f"switch off, auto: {t}")
        ml.check(t["in_use"] == "/dev/fuse" and t["io_uring"] == "auto", f"auto: {t}")
        if has_uring:
            ml.check("enable_uring is N" in t["reason"], f"auto, switch off: reason {t}")
        ml.check(t["requests_io_uring"] == 0 and t["requests_dev_fuse"] > 0, f"counts: {t}")
        ml.check("/dev/fuse (" in human_transport(mp), human_transport(mp))
    r = ml.clairfs("mount", data, mp, "--io-uring", "on")
    ml.log(f"switch off, on: rc={r.returncode} {r.stderr.strip()!r}")
    errs = [l for l in r.stderr.splitlines() if "io-uring" in l]
    ml.check(r.returncode == 1 and len(errs) == 1 and errs[0].startswith("clairfs: "),
             f"--io-uring on with the switch off: rc={r.returncode}, stderr {r.stderr!r}")
    ml.check(("enable_uring is N" if has_uring else "this build's libfuse") in errs[0], errs[0])
    ml.check(not ml.is_mounted(os.path.realpath(mp)), "--io-uring on failed, yet mounted")
    with ml.mounted(data, mp, "--no-detect", "--io-uring", "off"):
        t = transport(mp)
        ml.check(t["in_use"] == "/dev/fuse" and t["reason"] == "--io-uring off", f"off: {t}")


def case_switch_on(data, mp, expected, has_uring):
    set_switch(True)
    rng = random.Random(7)
    for mode in ("auto", "on"):
        if mode == "on" and not has_uring:
            r = ml.clairfs("mount", data, mp, "--io-uring", "on")
            ml.check(r.returncode == 1 and "this build's libfuse" in r.stderr, r.stderr)
            continue
        # The RAM tier takes the small files, chunks the big ones.
        with ml.mounted(data, mp, "--no-detect", "--mem", "16M", "--io-uring", mode):
            t = transport(mp)
            ml.log(f"switch on, {mode}: {t}")
            if not has_uring:
                ml.check(t["in_use"] == "/dev/fuse", f"{mode}: {t}")
                ml.read_expected(mp, expected, f"{mode} without io_uring")
                continue
            ml.check(t["in_use"] == "io_uring" and t["io_uring"] == mode, f"{mode}: {t}")
            ml.check("switch is on" in t["reason"], f"{mode}: reason {t}")
            ml.check(human_transport(mp).split()[1] == "io_uring", human_transport(mp))
            before = ml.status(mp)
            ml.read_expected(mp, expected, f"io_uring, {mode}")
            pread_ranges(mp, expected, rng)
            read_in_threads(mp, expected, f"io_uring, {mode}, 4 threads")
            after = ml.status(mp)
            # Once the rings are up, only FORGETs (and interrupts) still come
            # through /dev/fuse; a request or two may before they are.
            def delta(path):
                a, b = after, before
                for k in path:
                    a, b = a[k], b[k]
                return a - b
            ring = delta(("transport", "requests_io_uring"))
            device = delta(("transport", "requests_dev_fuse"))
            forgets = delta(("requests", "forget")) + delta(("requests", "forget_multi"))
            ml.log(f"{mode}: {ring} requests over io_uring, {device} over /dev/fuse "
                   f"({forgets} FORGETs)")
            ml.check(ring > 2 * len(expected), f"{mode}: too few ring requests: {after}")
            ml.check(device <= forgets, f"{mode}: requests other than FORGET over /dev/fuse: "
                                        f"{before['transport']} -> {after['transport']}")
            check_ring_sched(mp, "idle", mode)
    if not has_uring:
        return
    # Every file read through the daemon (or passed through where on).
    with ml.mounted(data, mp, "--no-detect", "--mem", "0"):
        st = ml.status(mp)
        ml.check(st["transport"]["in_use"] == "io_uring", f"--mem 0: {st['transport']}")
        ml.log(f"--mem 0 over io_uring, passthrough {st['passthrough']['state']}")
        ml.read_expected(mp, expected, "io_uring, --mem 0")
        pread_ranges(mp, expected, rng)
        read_in_threads(mp, expected, "io_uring, --mem 0, 4 threads")
        check_ring_sched(mp, "idle", "--mem 0")
    with ml.mounted(data, mp, "--no-detect", "--ring-sched", "normal"):
        read_in_threads(mp, expected, "io_uring, --ring-sched normal, 4 threads")
        check_ring_sched(mp, "normal", "--ring-sched normal")
    with ml.mounted(data, mp, "--no-detect", "--io-uring", "off"):
        t = transport(mp)
        ml.check(t["in_use"] == "/dev/fuse" and t["requests_io_uring"] == 0, f"off: {t}")
        ml.read_expected(mp, expected, "switch on, --io-uring off")


def test():
    with ml.temp_dir() as tmp:
        data, mp = os.path.join(tmp, "data"), os.path.join(tmp, "mnt")
        os.makedirs(data)
        os.makedirs(mp)
        expected = make_dataset(data)
        with open(SWITCH) as f:
            was = f.read().strip()
        ml.log(f"{SWITCH} was {was}; put back at the end")
        try:
            has_uring = build_has_io_uring(data, mp)
            ml.run_cases(
                ("switch_off", lambda: case_switch_off(data, mp, has_uring)),
                ("switch_on", lambda: case_switch_on(data, mp, expected, has_uring)),
            )
        finally:
            with open(SWITCH, "w") as f:
                f.write(was)


if __name__ == "__main__":
    ml.skip_unless_fuse()
    if not os.path.exists(SWITCH):
        ml.log(f"SKIP: {SWITCH} is missing: this kernel has no FUSE over io_uring "
               "(Linux 6.14 or later built with CONFIG_FUSE_IO_URING has it)")
        sys.exit(77)
    ml.run_test(test)
