#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs status --prometheus` (issue 21): the status in Prometheus' text
exposition format, parsed here with Prometheus' own parser
(prometheus_client, Debian's python3-prometheus-client).

- every family parses, has HELP and TYPE, and counters end in _total;
- every series carries mount="MOUNTPOINT", escaped: the mount point's name
  here holds a double quote and a backslash;
- the figures are the status document's: RAM bytes, capacity and files,
  backing bytes, misses, and FUSE requests by kind;
- the SSD tier's series appear only with an SSD tier;
- --prometheus with --json is refused (exit 2, one line);
- --metrics-port serves the same text at http://127.0.0.1:PORT/metrics
  (other paths 404); a second mount given a taken port fails with one line
  and nothing mounted; the port closes at unmount.
Needs /dev/fuse (exit 77 without FUSE)."""
import os
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request

import mountlib as ml
from prometheus_client.parser import text_string_to_metric_families


def scrape(mp):
    r = subprocess.run([ml.CLAIRFS, "status", mp, "--prometheus"], capture_output=True,
                       text=True, timeout=60)
    ml.check(r.returncode == 0, f"status --prometheus: exit {r.returncode}: {r.stderr}")
    text = r.stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            ml.check(kind in ("gauge", "counter"), f"{name}: type {kind}")
            ml.check((kind == "counter") == name.endswith("_total"), f"{name}: {kind}")
            ml.check(f"# HELP {name} " in text, f"{name}: no HELP")
    return families


def value(families, name, **labels):
    fam = families.get(name)
    ml.check(fam is not None, f"no {name} in the scrape ({sorted(families)})")
    got = [s.value for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items())]
    ml.check(len(got) == 1, f"{name}{labels}: {len(got)} series")
    return got[0]


def case_ram(data, mp, expected):
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        ml.read_expected(mp, expected, "metrics")
        st = ml.status(mp)
        fams = scrape(mp)
        for fam in fams.values():
            for s in fam.samples:
                ml.check(s.labels.get("mount") == mp,
                         f"{s.name}: mount label {s.labels.get('mount')!r}, expected {mp!r}")
        ml.check(value(fams, "clairfs_up") == 1, "clairfs_up")
        ml.check(value(fams, "clairfs_mode", mode="unregistered") == 1, "clairfs_mode")
        for name, key in (("clairfs_ram_bytes", ("ram", "bytes")),
                          ("clairfs_ram_capacity_bytes", ("ram", "capacity")),
                          ("clairfs_ram_files", ("ram", "files")),
                          ("clairfs_ram_misses", ("ram", "misses")),
                          ("clairfs_backing_read_bytes", ("backing", "bytes")),
                          ("clairfs_backing_files", ("backing", "files")),
                          ("clairfs_backing_saved_bytes", ("backing", "saved_bytes"))):
            ml.check(value(fams, name) == st[key[0]][key[1]],
                     f"{name} {value(fams, name)} against status {key}: {st[key[0]][key[1]]}")
        ml.check(value(fams, "clairfs_ram_bytes") == sum(len(d) for d in expected.values()),
                 "clairfs_ram_bytes is not the dataset's size")
        # A second pass opens tiered files only: it spared the backing store.
        ml.read_expected(mp, expected, "metrics, second pass")
        st, fams = ml.status(mp), scrape(mp)
        ml.check(value(fams, "clairfs_backing_saved_bytes") == st["backing"]["saved_bytes"] > 0,
                 f"clairfs_backing_saved_bytes {value(fams, 'clairfs_backing_saved_bytes')}, "
                 f"status {st['backing']['saved_bytes']}")
        ml.check(value(fams, "clairfs_fuse_requests", kind="open") >= len(expected),
                 "clairfs_fuse_requests{kind=open} below the opens made")
        ml.check("clairfs_ssd_bytes" not in fams, "SSD series without an SSD tier")

        r = subprocess.run([ml.CLAIRFS, "status", mp, "--prometheus", "--json"],
                           capture_output=True, text=True, timeout=60)
        ml.check(r.returncode == 2 and r.stderr.count("\n") == 1 and "--prometheus" in r.stderr,
                 f"--prometheus --json: exit {r.returncode}: {r.stderr!r}")


def case_ssd(data, mp, expected, cache):
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect", "--cache-dir", cache):
        ml.read_expected(mp, expected, "metrics, SSD")
        fams = scrape(mp)
        ml.check(value(fams, "clairfs_ssd_capacity_bytes") > 0, "no SSD capacity")
        ml.check("clairfs_ssd_hits" in fams and "clairfs_ssd_errors" in fams, "SSD counters")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def case_http(data, mp, mp2, expected):
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect", "--metrics-port", str(port)):
        ml.read_expected(mp, expected, "metrics over HTTP")
        code, ctype, text = http_get(url)
        ml.check(code == 200 and ctype.startswith("text/plain"), f"GET /metrics: {code} {ctype}")
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        ml.check(value(fams, "clairfs_ram_bytes") == ml.status(mp)["ram"]["bytes"],
                 "clairfs_ram_bytes over HTTP differs from the status")
        ml.check(all(s.labels.get("mount") == mp for f in fams.values() for s in f.samples),
                 "mount label over HTTP")
        ml.check(http_get(f"http://127.0.0.1:{port}/other")[0] == 404, "GET /other is not 404")

        r = subprocess.run([ml.CLAIRFS, "mount", data, mp2, "--metrics-port", str(port)],
                           capture_output=True, text=True, timeout=120)
        lines = [l for l in r.stderr.splitlines() if "metrics" in l]
        ml.check(r.returncode == 1 and len(lines) == 1 and "cannot listen" in lines[0],
                 f"a taken --metrics-port: exit {r.returncode}: {r.stderr!r}")
        ml.check(not ml.is_mounted(mp2), "mounted despite the taken port")
        ml.check(http_get(url)[0] == 200, "the first mount's metrics stopped")
    try:
        http_get(url)
        ml.check(False, "the metrics port still answers after the unmount")
    except (urllib.error.URLError, ConnectionError):
        pass


def test():
    with tempfile.TemporaryDirectory(prefix="clairfs-metrics.", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        expected = ml.random_dataset(data, 30, 11, 30_000)
        mp = os.path.join(tmp, 'mnt "q" \\ x')
        mp2 = os.path.join(tmp, "mnt-ssd")
        mp3 = os.path.join(tmp, "mnt-http")
        cache = os.path.join(tmp, "cache")
        for d in (mp, mp2, mp3, cache):
            os.makedirs(d)
        ml.run_cases(("ram", lambda: case_ram(data, mp, expected)),
                     ("ssd", lambda: case_ssd(data, mp2, expected, cache)),
                     ("http", lambda: case_http(data, mp3, mp2, expected)))


if __name__ == "__main__":
    ml.main(test)
