#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Large files by chunk (--chunk-size): files above a sixteenth of --mem
(here 1 MiB of --mem 16M) are held in the RAM and SSD tiers as 256 KiB
chunks, read ahead for a sequential reader, through a real mount.

- exact: preads at random offsets, across chunk and file ends and past
  EOF, a whole read and an mmap read, each equal to the backing file's
  bytes; small files are still held whole; status shows the chunks (JSON,
  the human summary, Prometheus series);
- sequential: a TFRecordDataset-like reader (256 KiB reads from 0 to the
  end) is read ahead (read_ahead > 0) and each byte comes from the
  backing store once, also when the file is read again after the page
  cache was dropped (the chunks stay in the tiers);
- restart: a remount with the same options takes the chunks back from
  the SSD tier (reused) and reads no byte from the backing store; a
  remount with another --mem that holds one of the files whole takes the
  others' chunks back by name though their numbers moved; one with
  another --chunk-size reuses only the ranges both sizes share, and all
  of them still serve the right bytes;
- stage: `clairfs stage --wait` puts every chunk into the SSD tier (none
  into RAM), each byte read from the backing store once, and reading the
  files afterwards reads nothing more from it;
- stale: a large file changed on the backing store since the scan fails
  its READ with ESTALE and serves no byte; the mount keeps serving;
- drop-behind: with --drop-behind always, a sequential reader's pages
  leave the page cache once its READs are 2.25 MiB past them (twice the
  1 MiB readahead and a chunk; fincore shows at most the last 10 chunks
  resident, against the whole file with never), the
  bytes are the same, a second read takes nothing from the backing store,
  and status, the human summary and Prometheus count the drops; auto
  keeps them where the files fit the page cache (always here); a bad
  value is refused in one line;
- off: --chunk-size 0 reads large files through, the same bytes, and
  status says chunks null; a bad --chunk-size is refused in one line.
Exit 77 only without FUSE."""
import errno
import mmap
import os
import random
import time

import mountlib as ml

CHUNK = 256 << 10
SIZES = {"shards/train-0.tfrecord": 12 * ml.MIB + 12_345, "shards/train-1.tfrecord": 3 * ml.MIB,
         "db/data.mdb": 4 * ml.MIB + 1, "edge.bin": ml.MIB + 1}
SMALL = 20
# What drop-behind keeps of a shard read in order: the 9 chunks behind
# the furthest READ (2 x the 1 MiB readahead + a chunk) and the last,
# partial one.
KEPT = 10 * CHUNK


def make_dataset(root):
    expected = ml.random_dataset(root, SMALL, 41, 60_000)
    expected.update(ml.write_random_files(root, SIZES, random.Random(6)))
    return expected


def options(cache, *more):
    return ml.chunk_options(cache, CHUNK, *more)


def chunks(mp):
    return ml.status(mp)["chunks"]


def random_preads(mp, rel, data, rng, count=60):
    with open(os.path.join(mp, rel), "rb", buffering=0) as f:
        for _ in range(count):
            off = rng.choice([0, CHUNK - 1, CHUNK, 2 * CHUNK - 3, len(data) - 1, len(data),
                              len(data) + 10, rng.randrange(len(data))])
            size = rng.choice([1, 100, 4096, 70_000, CHUNK + 1, ml.MIB])
            got = os.pread(f.fileno(), size, off)
            ml.check(got == data[off:off + size], f"{rel}: pread({size}, {off}) differs")


def read_sequential(mp, rel, data):
    """As TFRecordDataset reads a shard: 256 KiB at a time, from 0."""
    got = bytearray()
    with open(os.path.join(mp, rel), "rb", buffering=0) as f:
        while block := f.read(256 << 10):
            got += block
    ml.check(bytes(got) == data, f"{rel}: the sequential read differs ({len(got)} bytes)")


def large():
    return [rel for rel in SIZES]


def case_exact(tmp, data, expected):
    cache, mp = ml.make_dirs(tmp, "cache-exact", "mnt-exact")
    rng = random.Random(11)
    with ml.mounted(data, mp, *options(cache)):
        c = chunks(mp)
        ml.check(c is not None and c["files"] == len(SIZES) and c["chunk_size"] == CHUNK,
                 f"exact: status chunks {c}")
        want = sum((s + CHUNK - 1) // CHUNK for s in SIZES.values())
        ml.check(c["chunks"] == want, f"exact: {c['chunks']} chunks, expected {want}")
        for rel in large():
            random_preads(mp, rel, expected[rel], rng)
        ml.drop_caches("1")
        ml.read_expected(mp, expected, "exact")
        with open(os.path.join(mp, "db/data.mdb"), "rb") as f:
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                for off in [0, CHUNK - 5, 3 * ml.MIB + 7, len(m) - 1]:
                    ml.check(m[off:off + 4096] == expected["db/data.mdb"][off:off + 4096],
                             f"exact: mmap read at {off} differs")
        st = ml.status(mp)
        ml.check(st["ram"]["files"] >= 1, f"exact: no small file held whole: {st['ram']}")
        ml.check(st["chunks"]["fetch_errors"] == 0, f"exact: {st['chunks']}")
        human = ml.clairfs("status", mp).stdout
        ml.check(f"chunks:      {len(SIZES)} files in {want} chunks of 256.0 KiB" in human,
                 f"exact: clairfs status does not say so: {human}")
        prom = ml.clairfs("status", mp, "--prometheus").stdout
        ml.check(f'clairfs_chunk_files{{mount="{os.path.realpath(mp)}"}} {len(SIZES)}' in prom and
                 "clairfs_chunk_ssd_hits_total" in prom,
                 f"exact: no chunk series in status --prometheus: {prom[:2000]}")
        ml.log(f"exact: {st['chunks']['chunks']} chunks, {st['chunks']['reads']} chunk READs")


def case_sequential(tmp, data, expected):
    cache, mp = ml.make_dirs(tmp, "cache-seq", "mnt-seq")
    rel = "shards/train-0.tfrecord"
    with ml.mounted(data, mp, *options(cache)):
        before = ml.status(mp)["backing"]["bytes"]
        read_sequential(mp, rel, expected[rel])
        st = ml.status(mp)
        c = st["chunks"]
        ml.check(c["read_ahead"] > 0, f"sequential: nothing read ahead: {c}")
        once = st["backing"]["bytes"] - before
        ml.check(once == len(expected[rel]),
                 f"sequential: {once} backing bytes for a {len(expected[rel])}-byte file")
        ml.drop_caches("1")
        read_sequential(mp, rel, expected[rel])
        again = ml.status(mp)["backing"]["bytes"] - before
        ml.check(again == once, f"sequential: the second read took {again - once} backing bytes")
        ml.log(f"sequential: {c['read_ahead']} chunks read ahead, {c['fetched_for_read']} "
               f"waited for, {once} backing bytes")


def ranges(chunk):
    """Every chunk as (file, offset, length) at this chunk size."""
    return {(rel, off, min(chunk, size - off))
            for rel, size in SIZES.items() for off in range(0, size, chunk)}


def case_restart(tmp, data, expected):
    cache, mp = ml.make_dirs(tmp, "cache-restart", "mnt-restart")
    with ml.mounted(data, mp, *options(cache)):
        for rel in large():
            read_sequential(mp, rel, expected[rel])
        ml.check(ml.wait_until(lambda: chunks(mp)["ssd"]["chunks"] == chunks(mp)["chunks"], 30),
                 f"restart: the SSD tier holds {chunks(mp)['ssd']} of {chunks(mp)['chunks']}")
        total = chunks(mp)["chunks"]
        # The writer's counts: every chunk written once, none skipped or refused.
        w = chunks(mp)["ssd"]
        ml.check((w["written"], w["skipped"], w["refused"]) == (total, 0, 0),
                 f"restart: the chunks' SSD writer wrote {w['written']} of {total}, skipped "
                 f"{w['skipped']}, refused {w['refused']}")
    with ml.mounted(data, mp, *options(cache)):
        c = chunks(mp)
        ml.check(c["ssd"]["reused"] == total, f"restart: reused {c['ssd']['reused']} of {total}")
        before = ml.status(mp)["backing"]["bytes"]
        for rel in large():
            read_sequential(mp, rel, expected[rel])
        took = ml.status(mp)["backing"]["bytes"] - before
        ml.check(took == 0, f"restart: {took} backing bytes read after a warm restart")
    # Another --mem moves the cut-off: edge.bin (1 MiB + 1) is held whole
    # under 32M, and the other files' chunks, renumbered, are taken back by
    # name with their bytes (every file read back and compared).
    edge = (SIZES["edge.bin"] + CHUNK - 1) // CHUNK
    with ml.mounted(data, mp, "--mem", "32M", "--chunk-size", str(CHUNK), "--no-detect",
                    "--cache-dir", cache, "--ssd", "64M"):
        c = chunks(mp)
        ml.check(c["files"] == len(SIZES) - 1 and c["ssd"]["reused"] == total - edge,
                 f"restart: --mem 32M: {c['files']} files by chunk, reused "
                 f"{c['ssd']['reused']} of {total - edge}")
        before = ml.status(mp)["backing"]["bytes"]
        ml.read_expected(mp, expected, "restart --mem 32M")
        took = ml.status(mp)["backing"]["bytes"] - before
        small = sum(len(d) for rel, d in expected.items() if rel not in SIZES)
        ml.check(took == small + SIZES["edge.bin"],
                 f"restart: --mem 32M read {took} backing bytes, expected the whole files' "
                 f"{small + SIZES['edge.bin']}")
    # Another chunk size names other ranges: only those equal in both (a
    # file's short last chunk) are taken back, but edge.bin's: the --mem
    # 32M mount, holding it whole, dropped its chunks.
    same = len({r for r in ranges(CHUNK) & ranges(2 * CHUNK) if r[0] != "edge.bin"})
    with ml.mounted(data, mp, "--mem", "16M", "--chunk-size", str(2 * CHUNK), "--no-detect",
                    "--cache-dir", cache, "--ssd", "64M"):
        c = chunks(mp)
        ml.check(c["ssd"]["reused"] == same,
                 f"restart: reused {c['ssd']['reused']} at another size, expected {same}")
        for rel in large():
            read_sequential(mp, rel, expected[rel])
    ml.log(f"restart: {total} chunks taken back, no backing byte read")


def case_stage(tmp, data, expected):
    cache, mp = ml.make_dirs(tmp, "cache-stage", "mnt-stage")
    with ml.mounted(data, mp, *options(cache)):
        r = ml.clairfs("stage", mp, "--wait", timeout=120)
        ml.check(r.returncode == 0, f"stage: clairfs stage --wait exit {r.returncode}: {r.stderr}")
        st = ml.status(mp)
        c = st["chunks"]
        ml.check(st["stage"]["state"] == "done" and st["stage"]["target"] == "ssd",
                 f"stage: {st['stage']}")
        ml.check(c["ssd"]["chunks"] == c["chunks"] and c["ram"]["chunks"] == 0,
                 f"stage: SSD holds {c['ssd']['chunks']} of {c['chunks']} chunks, RAM "
                 f"{c['ram']['chunks']}")
        total = sum(len(d) for d in expected.values())
        ml.check(st["backing"]["bytes"] == total,
                 f"stage: {st['backing']['bytes']} backing bytes for {total}")
        ml.drop_caches("1")
        ml.read_expected(mp, expected, "stage")
        took = ml.status(mp)["backing"]["bytes"] - total
        ml.check(took == 0, f"stage: reading after the stage took {took} backing bytes")


def case_stale(tmp, data, expected):
    cache, mp = ml.make_dirs(tmp, "cache-stale", "mnt-stale")
    rel = "shards/train-1.tfrecord"
    path = os.path.join(data, rel)
    with ml.mounted(data, mp, *options(cache)):
        with open(path, "ab") as f:
            f.write(b"appended after the scan")
        try:
            with open(os.path.join(mp, rel), "rb") as f:
                ml.expect_errno(errno.ESTALE, f.read, what=f"stale: reading {rel}")
        finally:
            with open(path, "r+b") as f:
                f.truncate(len(expected[rel]))
        ml.check(ml.status(mp)["backing"]["stale"] >= 1, "stale: not counted")
        random_preads(mp, "shards/train-0.tfrecord", expected["shards/train-0.tfrecord"],
                      random.Random(3), 10)


def resident(path):
    """Bytes of the file in the page cache (util-linux's fincore)."""
    r = ml.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path])
    ml.check(r.returncode == 0, f"fincore {path}: {r.stderr.strip()}")
    return int(r.stdout.split()[0])


def case_drop_behind(tmp, data, expected):
    rel = "shards/train-0.tfrecord"
    size = len(expected[rel])
    for when in ("never", "always", "auto"):
        cache, mp = ml.make_dirs(tmp, f"cache-db-{when}", f"mnt-db-{when}")
        with ml.mounted(data, mp, *options(cache, "--drop-behind", when)):
            path = os.path.join(mp, rel)
            before = ml.status(mp)["backing"]["bytes"]
            read_sequential(mp, rel, expected[rel])
            # The drops run on the daemon's own thread: give it a moment
            # (a loaded machine may run it late).
            held = resident(path)
            for _ in range(250):
                if when != "always" or held <= KEPT:
                    break
                time.sleep(0.02)
                held = resident(path)
            c = chunks(mp)
            ml.log(f"drop-behind {when}: {held} of {size} bytes resident, "
                   f"{c['dropped_behind']} chunks dropped")
            if when == "always":
                # 49 chunks of 256 KiB, of which KEPT stay.
                ml.check(c["drop_behind"] is True and c["dropped_behind"] >= 49 - 10,
                         f"drop-behind always: status {c}")
                ml.check(held <= KEPT, f"drop-behind always: {held} of {size} bytes "
                         "still in the page cache")
                human = ml.clairfs("status", mp).stdout
                ml.check("drop-behind on (" in human, f"drop-behind: the summary: {human}")
                prom = ml.clairfs("status", mp, "--prometheus").stdout
                ml.check("clairfs_chunk_dropped_behind_total{" in prom,
                         "drop-behind: no clairfs_chunk_dropped_behind_total series")
                # Read again: from the tiers, byte for byte, nothing from the backing store.
                read_sequential(mp, rel, expected[rel])
                again = ml.status(mp)["backing"]["bytes"] - before
                ml.check(again == size, f"drop-behind: {again} backing bytes for two reads")
            else:
                # never, and auto where 13 MiB of chunked files fit the page cache.
                ml.check(c["drop_behind"] is False and c["dropped_behind"] == 0,
                         f"drop-behind {when}: status {c}")
                pages = (size + 4095) // 4096 * 4096
                ml.check(held == pages, f"drop-behind {when}: {held} of {pages} bytes resident")
    r = ml.clairfs("mount", data, os.path.join(tmp, "mnt-db-never"), "--drop-behind", "sometimes")
    ml.check(r.returncode != 0 and "drop" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
             f"drop-behind sometimes gave rc {r.returncode}: {r.stderr!r}")


def case_off(tmp, data, expected):
    mp = ml.make_dirs(tmp, "mnt-off")[0]
    with ml.mounted(data, mp, "--mem", "16M", "--chunk-size", "0", "--no-detect"):
        ml.check(ml.status(mp)["chunks"] is None, "off: status shows chunks")
        ml.read_expected(mp, expected, "off")
    r = ml.clairfs("mount", data, mp, "--chunk-size", "1000")
    ml.check(r.returncode != 0 and "chunk_size" in r.stderr.replace("-", "_") and
             len(r.stderr.strip().splitlines()) == 1,
             f"off: --chunk-size 1000 gave rc {r.returncode}: {r.stderr!r}")


def main():
    ml.skip_unless_fuse()

    def cases():
        with ml.temp_dir() as tmp:
            data = ml.make_dirs(tmp, "data")[0]
            expected = make_dataset(data)
            ml.run_cases(*[(c.__name__[5:], (lambda c: lambda: c(tmp, data, expected))(c))
                           for c in (case_exact, case_sequential, case_restart, case_stage, case_stale,
                                     case_drop_behind, case_off)])
    ml.run_test(cases)


if __name__ == "__main__":
    main()
