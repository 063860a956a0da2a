#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs mount --help`, `clairfs status --help`, `clairfs order --help`
and `clairfs simulate --help` succeed, and every long option they list is
documented in man/clairfs.1 (order's keys either as --flag or by their
key name, e.g. start_epoch), as is every key of a `clairfs simulate`
config (which the config parser names when it refuses an unknown one), so
the help and the page cannot drift apart silently."""
import json
import os
import re
import tempfile

from mountlib import SOURCE_ROOT, check, clairfs, log, main


def man_text(path):
    """The page with roff escapes for '-' undone (\\- and \\(hy)."""
    with open(path, errors="replace") as f:
        text = f.read()
    return text.replace("\\-", "-").replace("\\(hy", "-").replace("\\(mi", "-")


def test():
    r = clairfs("mount", "--help", timeout=30)
    check(r.returncode == 0, f"clairfs mount --help exit {r.returncode}: {r.stderr}")
    options = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", r.stdout)))
    check(len(options) >= 10, f"--help lists only {options}")
    log(f"--help lists {len(options)} long options: {' '.join(options)}")

    r = clairfs("umount", "--help", timeout=30)
    check(r.returncode == 0, f"clairfs umount --help exit {r.returncode}: {r.stderr}")
    options += ["--lazy"] if "--lazy" in r.stdout else []

    man = os.path.join(SOURCE_ROOT, "man", "clairfs.1")
    check(os.path.isfile(man), f"{man} is missing")
    text = man_text(man)
    check(text.strip(), f"{man} is empty")
    missing = [o for o in options
               if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    check(not missing, f"options in --help but not in {man}: {' '.join(missing)}")
    log(f"all {len(options)} options are documented in {man}")

    r = clairfs("status", "--help", timeout=30)
    check(r.returncode == 0, f"clairfs status --help exit {r.returncode}: {r.stderr}")
    status_opts = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", r.stdout)))
    check("--watch" in status_opts, f"status --help lists only {status_opts}")
    missing = [o for o in status_opts
               if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    check(not missing, f"status options in --help but not in {man}: {' '.join(missing)}")
    log(f"all {len(status_opts)} status options are documented in {man}")

    r = clairfs("order", "--help", timeout=30)
    check(r.returncode == 0, f"clairfs order --help exit {r.returncode}: {r.stderr}")
    keys = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", r.stdout)))
    check(len(keys) >= 20, f"order --help lists only {keys}")
    documented = lambda k: (re.search(r"(?<![\w-])" + re.escape(k) + r"(?![\w-])", text) or
                            re.search(r"\b" + re.escape(k[2:].replace("-", "_")) + r"\b", text))
    missing = [k for k in keys if not documented(k)]
    check(not missing, f"order options in --help but not in {man}: {' '.join(missing)}")
    log(f"all {len(keys)} order options are documented in {man}")

    r = clairfs("simulate", "--help", timeout=30)
    check(r.returncode == 0, f"clairfs simulate --help exit {r.returncode}: {r.stderr}")
    sim_opts = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", r.stdout)))
    check(len(sim_opts) >= 5, f"simulate --help lists only {sim_opts}")
    missing = [o for o in sim_opts
               if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    check(not missing, f"simulate options in --help but not in {man}: {' '.join(missing)}")
    # Each section's keys, as the parser lists them when it refuses one.
    sim_keys = []
    with tempfile.TemporaryDirectory() as d:
        for section in [None, "cluster", "node", "shared_fs", "network", "compute", "dataset"]:
            cfg = {"zz_unknown": 1} if section is None else {section: {"zz_unknown": 1}}
            path = os.path.join(d, "c.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            r = clairfs("simulate", "--config", path, timeout=30)
            m = re.search(r"unknown key 'zz_unknown' \(known: ([^)]*)\)", r.stderr)
            check(r.returncode == 2 and m, f"simulate, section {section}: {r.returncode} "
                  f"{r.stderr.strip()}")
            sim_keys += [k.strip() for k in m.group(1).split(",")]
    missing = [k for k in sim_keys if not re.search(r"\b" + re.escape(k) + r"\b", text)]
    check(not missing, f"simulate config keys not in {man}: {' '.join(missing)}")
    log(f"all {len(sim_opts)} simulate options and {len(sim_keys)} config keys are documented")


if __name__ == "__main__":
    main(test)
