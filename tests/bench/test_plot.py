#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/scenarios.py's plot (issue 21, item 6) answers the question a user
asks of it: is clairfs's epoch as fast as a local copy, and epoch 0 near
the bandwidth floor? From runs of three scenarios (two repetitions, three
epochs each), figure() must draw one group of bars per scenario, one bar
per epoch at the median of the repetitions, a dot per repetition, and two
reference lines, the bandwidth floor and the warm local copy's median
epoch; and plot() must write a PNG of it. Needs matplotlib (Debian's
python3-matplotlib, a test package)."""
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import scenarios  # noqa: E402

FAILED = []


def check(cond, msg):
    if not cond:
        FAILED.append(msg)
        print(f"FAIL: {msg}", flush=True)


def runs_of():
    """{scenario: [[epoch seconds] per repetition]} and the runs as
    scenarios.py records them."""
    times = {"local-warm": [[20.0, 10.0, 10.4], [21.0, 10.2, 10.0]],
             "direct": [[60.0, 55.0, 57.0], [62.0, 54.0, 58.0]],
             "clairfs-registered": [[31.0, 10.5, 10.9], [30.0, 10.9, 10.7]]}
    runs = [{"scenario": sc, "epochs": [{"epoch": e, "wall_s": t} for e, t in enumerate(rep)]}
            for sc, reps in times.items() for rep in reps]
    return times, runs


def main():
    times, runs = runs_of()
    cfg = {"slowfs": {"bps": "20M", "iops": 400, "mem": "2G"}}
    info = {"files": 2000, "bytes": 1.1e9}
    floor = {"bandwidth_floor_s": 28.0}
    plt = scenarios.pyplot()
    check(plt is not None, "matplotlib does not import (bash scripts/install-deps.sh test)")
    if plt is None:
        return
    fig = scenarios.figure(plt, list(times), runs, cfg, info, floor)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    check(labels == list(times), f"groups {labels}, expected one per scenario {list(times)}")
    bars = ax.containers
    check(len(bars) == 3, f"{len(bars)} bar series, expected one per epoch (3)")
    for e, container in enumerate(bars):
        heights = [round(b.get_height(), 6) for b in container]
        want = [round(statistics.median(rep[e] for rep in reps), 6) for reps in times.values()]
        check(heights == want, f"epoch {e}: bars {heights}, expected the medians {want}")
        xs = [b.get_x() + b.get_width() / 2 for b in container]
        check(all(abs(x - g) < 0.5 for g, x in enumerate(xs)),
              f"epoch {e}: bars at {xs}, not inside their scenario's group")
    dots = sum(len(c.get_offsets()) for c in ax.collections)
    check(dots == 3 * 3 * 2, f"{dots} dots, expected one per repetition and epoch (18)")
    lines = {ln.get_label(): ln.get_ydata()[0] for ln in ax.get_lines()}
    floor_line = [y for label, y in lines.items() if label.startswith("bandwidth floor")]
    check(floor_line == [28.0], f"bandwidth floor line {floor_line}, expected [28.0]: {lines}")
    local = statistics.median(t for rep in times["local-warm"] for t in rep)
    local_line = [y for label, y in lines.items() if label.startswith("warm local copy")]
    check(local_line == [local], f"warm local line {local_line}, expected [{local}]")
    plt.close(fig)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "plot.png")
        scenarios.plot(path, list(times), runs, cfg, info, floor)
        with open(path, "rb") as f:
            head = f.read(8)
        check(head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10_000,
              f"plot() wrote {os.path.getsize(path)} bytes starting {head!r}, not a PNG plot")
    print("plot: 3 groups x 3 epoch bars at the medians, 18 dots, floor and local lines, PNG")


if __name__ == "__main__":
    main()
    sys.exit(1 if FAILED else 0)
