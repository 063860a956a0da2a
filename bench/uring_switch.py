# SPDX-License-Identifier: MIT
"""The kernel's FUSE io_uring switch, set for one benchmark run and put back
(file_cost.py, scenarios.py and cluster.py). clairfs's default --io-uring
auto takes io_uring only while it is on; it is off by default and clairfs
never sets it. Standard library only."""
import os

SWITCH = "/sys/module/fuse/parameters/enable_uring"


def set_for_run(want, log, prog):
    """Sets the switch to Y or N (want "on"/"off"; "keep" leaves it).
    Returns what to write back afterwards, or None. A switch this process
    may not write (a container's read-only /sys) is left as it is, and
    said; so is a kernel without one."""
    if want == "keep" or not os.path.exists(SWITCH):
        if want == "on":
            log(f"{prog}: no {SWITCH}: this kernel has no FUSE over io_uring")
        return None
    value = "Y" if want == "on" else "N"
    try:
        with open(SWITCH) as f:
            was = f.read().strip()
        if was != value:
            with open(SWITCH, "w") as f:
                f.write(value)
    except OSError as e:
        log(f"{prog}: cannot set {SWITCH} to {value} ({e.strerror}); it stays as it is")
        return None
    log(f"{prog}: {SWITCH} is {value} for this run"
        + (f", {was} put back afterwards" if was != value else ""))
    return was if was != value else None


def put_back(was, log, prog):
    """Writes back what set_for_run returned (nothing for None)."""
    if was is None:
        return
    try:
        with open(SWITCH, "w") as f:
            f.write(was)
    except OSError as e:
        log(f"{prog}: cannot put {SWITCH} back to {was}: {e.strerror}")
