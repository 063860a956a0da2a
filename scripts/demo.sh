#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's first command: installs what is missing, builds, generates a
# small ImageNet-shaped dataset (2,000 files in 20 class folders), mounts it
# through clairfs, reads every file through the mount and natively, checks
# that every byte matches, prints a comparison and unmounts. Safe to run
# twice; leaves nothing mounted. (The throttled shared-file-system demo with
# an unmodified PyTorch job comes with the benchmark harness.)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -e /dev/fuse ]; then
  echo "demo: /dev/fuse is missing; clairfs needs the fuse kernel module (modprobe fuse)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
  echo "demo: run as root, or install fuse3 first so an unprivileged mount can work" >&2
  exit 1
fi

bash scripts/install-deps.sh build
bash scripts/build.sh
clairfs=$(pwd)/${CLAIRFS_BUILD_DIR:-build}/src/clairfs

work=$(mktemp -d /var/tmp/clairfs-demo.XXXXXX)
cleanup() {
  if grep -q " $work/mnt fuse.clairfs " /proc/self/mountinfo 2>/dev/null; then
    "$clairfs" umount --lazy "$work/mnt" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/data" "$work/mnt"

/usr/bin/python3 - "$work/data" <<'PY'
import math, os, random, sys
root = sys.argv[1]
rng = random.Random(0)
blob = rng.randbytes(1 << 20)
for i in range(2000):
    cls = os.path.join(root, f"class_{i % 20:02d}")
    os.makedirs(cls, exist_ok=True)
    size = min(len(blob), int(rng.lognormvariate(math.log(93_000), 0.6)))
    off = rng.randrange(len(blob) - size + 1)
    with open(os.path.join(cls, f"img_{i:05d}.jpg"), "wb") as f:
        f.write(blob[off:off + size])
PY
echo "demo: generated $(find "$work/data" -type f | wc -l) files, $(du -sh "$work/data" | cut -f1)"

"$clairfs" mount "$work/data" "$work/mnt"
echo "demo: mounted; $(ls "$work/mnt" | wc -l) class folders visible"

/usr/bin/python3 - "$work/data" "$work/mnt" <<'PY'
import hashlib, os, sys, time
native, mount = sys.argv[1], sys.argv[2]
files = sorted(os.path.relpath(os.path.join(d, f), native)
               for d, _, fs in os.walk(native) for f in fs)

def read_all(root):
    digest, start = {}, time.perf_counter()
    for rel in files:
        with open(os.path.join(root, rel), "rb") as f:
            digest[rel] = hashlib.sha256(f.read()).digest()
    return digest, time.perf_counter() - start

native_digest, _ = read_all(native)                 # warm the page cache
rows = []
for label, root in (("native", native), ("clairfs, first read", mount),
                    ("clairfs, kernel cache warm", mount), ("native, warm", native)):
    digest, secs = read_all(root)
    bad = sum(digest[k] != native_digest[k] for k in files)
    rows.append((label, secs, bad))
print(f"\n{'read of ' + str(len(files)) + ' files':<30}{'seconds':>9}{'us/file':>9}{'mismatches':>12}")
for label, secs, bad in rows[1:]:
    print(f"{label:<30}{secs:>9.3f}{secs / len(files) * 1e6:>9.0f}{bad:>12}")
if any(bad for _, _, bad in rows):
    sys.exit("demo: FAILED: bytes through clairfs differ from the backing files")
print("\ndemo: every byte read through clairfs equals the backing file's byte")
PY

"$clairfs" umount "$work/mnt"
echo "demo: unmounted"
