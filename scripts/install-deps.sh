#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages clairfs needs to build, test and benchmark,
# and (test, bench) the virtual environment with torch 2.x that the
# framework tests run beside Debian's torch 1.13 (see frameworks_venv below).
# Idempotent: packages already installed are skipped, and so is a venv that
# already has exactly the pinned versions, so a second run makes no network
# access at all.
set -euo pipefail
cd "$(dirname "$0")/.."

# liblmdb-dev and libhdf5-dev: clairfs ranges reads LMDBs and HDF5 files
# (libhdf5-dev is the serial build; the MPI ones would pull in OpenMPI).
# liburing-dev and libnuma-dev: libfuse 3.18's FUSE over io_uring, built from
# subprojects/libfuse (fetch_libfuse below); dpkg-dev: `apt-get source`
# unpacks that source package with dpkg-source. libfuse3-dev stays: a build
# without the subproject uses it.
build_pkgs=(g++ meson ninja-build pkg-config libfuse3-dev fuse3 libmpich-dev
  mpich libaio-dev libxxhash-dev nlohmann-json3-dev doctest-dev libcpp-httplib-dev
  liblmdb-dev libhdf5-dev liburing-dev libnuma-dev dpkg-dev)
# The mount tests use Debian's /usr/bin/python3 (stdlib only), pgrep,
# setpriv/unshare and mount; the order tests compare with real torch and
# torchvision (never python3-mpi4py: it pulls in OpenMPI over MPICH), and
# the dataset generator's test decodes its JPEGs with PIL; the
# benchmarks compare with bindfs, mergerfs and rclone, and the end-to-end
# harness (bench/scenarios.py) needs PIL for its JPEGs, matplotlib for its
# plot and e2fsprogs for the throttled loop-device file system.
# scripts/fuzz.sh builds with clang; its libFuzzer runtime is a package
# named by clang's major version, which the unversioned clang does not pull
# in: the candidate clang's version, else Debian 12's 14 or 13's 19.
clang_rt() {
  local major
  major=$(apt-cache policy clang 2>/dev/null |
    sed -n 's/ *Candidate: \([0-9]*:\)\{0,1\}\([0-9]*\).*/\2/p')
  if [ -z "$major" ]; then
    case "$(cut -d. -f1 /etc/debian_version 2>/dev/null)" in
    13) major=19 ;;
    *) major=14 ;;
    esac
  fi
  echo "libclang-rt-$major-dev"
}
# python3-venv: the torch 2.x venv (ensurepip is not in Debian's python3).
# e2fsprogs: unit_root's full-file-system case formats a small ext4 image
# (Priority required in Debian 12, only important in 13: a minimal 13 lacks
# mkfs.ext4). python3-prometheus-client: the metrics test parses `clairfs
# status --prometheus` with Prometheus' own text-format parser. tmux: the
# status_watch test runs `clairfs status --watch` in a real terminal and
# reads its screen back (send-keys, capture-pane). python3-matplotlib: the
# bench_plot test draws the benchmark plot and checks its bars and lines.
# jq and curl: docs_commands runs the guides' commands, which read the
# status with jq and the metrics port with curl, as a user would.
test_pkgs=(python3 procps util-linux mount python3-torch python3-torchvision python3-pil
  python3-venv clang "$(clang_rt)" e2fsprogs python3-prometheus-client tmux
  python3-matplotlib jq curl)
bench_pkgs=(python3 procps bindfs mergerfs rclone python3-matplotlib python3-pil
  e2fsprogs)
want=("${build_pkgs[@]}")
case "${1:-build}" in
build) ;;
test) want+=("${test_pkgs[@]}") ;;
bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
*)
  echo "usage: $0 [build|test|bench]" >&2
  exit 2
  ;;
esac

mapfile -t want < <(printf '%s\n' "${want[@]}" | sort -u)

sudo=()
need_root() {
  [ "$(id -u)" -ne 0 ] || return 0
  command -v sudo >/dev/null || {
    echo "install-deps: need root or sudo to $1" >&2
    exit 1
  }
  sudo=(sudo)
}

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
else
  need_root "install: ${missing[*]}"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# The framework tests (tests/prefetch/test_real_scripts.py) run the same
# job under Debian's torch 1.13 (/usr/bin/python3, the reference the order
# was checked against) and under the torch 2.x pinned in
# tests/requirements-frameworks.txt, installed by pip into one venv outside
# the repository. pip uses its own configuration: a local wheel directory
# or mirror if pip.conf names one, else PyPI (whose Linux torch wheel is
# the CUDA build; PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
# fetches the CPU one). A venv whose python runs gets what is missing or at
# another version installed in place (a pin added later costs one package,
# not the frameworks again); it is rebuilt from scratch only if that fails,
# or if its python no longer runs (a Debian upgrade that replaced python3.11).
venv=${CLAIRFS_VENV:-/opt/clairfs-venv}
reqs=tests/requirements-frameworks.txt

# Exit 0 when python $1 has exactly the versions pinned (NAME==VERSION lines)
# in $reqs; a local version label (2.13.0+cpu) counts as its version.
pins_met() {
  "$1" - "$reqs" <<'PY' 2>/dev/null
import re, sys
from importlib import metadata
bad = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    m = re.fullmatch(r"([A-Za-z0-9._-]+)\s*==\s*(\S+)", line)
    if not m:
        continue
    try:
        have = metadata.version(m[1])
    except metadata.PackageNotFoundError:
        have = None
    if have is None or have.split("+")[0] != m[2]:
        bad.append(f"{m[1]} {have} (want {m[2]})")
if bad:
    print("; ".join(bad))
sys.exit(1 if bad else 0)
PY
}

frameworks_venv() {
  local why="missing"
  if [ -x "$venv/bin/python" ]; then
    why=$(pins_met "$venv/bin/python") && {
      echo "install-deps: $venv has the versions pinned in $reqs"
      return
    }
    if [ -n "$why" ]; then
      need_root "update $venv"
      echo "install-deps: updating $venv from $reqs ($why)"
      if pip_install "$venv/bin/python" -r "$reqs" && pins_met "$venv/bin/python" >/dev/null; then
        echo "install-deps: $venv updated"
        return
      fi
      why="an update in place failed"
    fi
    why=${why:-its python does not run}
  fi
  need_root "create $venv"
  echo "install-deps: creating $venv from $reqs ($why)"
  "${sudo[@]}" rm -rf "$venv"
  # A venv is not relocatable, so it is built in place; a failure removes
  # it, and the next run starts again.
  if ! "${sudo[@]}" /usr/bin/python3 -m venv "$venv" ||
    ! pip_install "$venv/bin/python" -r "$reqs" ||
    ! pins_met "$venv/bin/python"; then
    "${sudo[@]}" rm -rf "$venv"
    echo "install-deps: could not build $venv from $reqs" >&2
    exit 1
  fi
  echo "install-deps: $venv done ($("$venv/bin/python" - "$reqs" <<'PY'
import re, sys
from importlib import metadata
names = [m[1] for line in open(sys.argv[1])
         if (m := re.fullmatch(r"([A-Za-z0-9._-]+)\s*==\s*\S+", line.split("#", 1)[0].strip()))]
print(", ".join(f"{n} {metadata.version(n)}" for n in names))
PY
))"
}

# pip install "$@" with the venv's python $1, quietly. A pip.conf that lists
# local wheel directories or indexes makes pip warn "Location '...' is
# ignored" for every package a location lacks (dozens of lines for a
# tensorflow install); those lines are dropped, anything else pip says
# (errors, other warnings) is shown. Exit status: pip's.
pip_install() {
  local py=$1 log rc=0
  shift
  log=$(mktemp)
  "${sudo[@]}" "$py" -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore "$@" >"$log" 2>&1 || rc=$?
  grep -v -E "^(WARNING: )?Location '[^']*' is ignored" "$log" | sed 's/^/  pip: /' >&2 || true
  rm -f "$log"
  return $rc
}

# libfuse >= 3.18 with FUSE over io_uring: Debian 12 packages 3.14, 13
# packages 3.17, and Debian's own 3.18 is built without liburing. So the
# top-level meson.build builds libfuse from subprojects/libfuse, statically,
# with liburing; its source is Debian's own source package (fuse3, Debian's
# patches applied) from unstable, fetched by apt and checked against the
# archive's signed index. The apt configuration is a private one in a
# temporary directory: the machine's own Debian archive URI (as apt itself
# lists it) with the suite replaced by sid; nothing under /etc changes. A
# fetch that fails leaves the build on the system libfuse (/dev/fuse only),
# with one warning here and one from meson. CLAIRFS_LIBFUSE_SUITE names
# another suite that has fuse3 >= 3.18.
libfuse_dir=subprojects/libfuse

# The upstream version of an unpacked libfuse tree, from its meson.build.
libfuse_version() {
  sed -n "/^project(/,/)/s/.*version: *'\([0-9.]*\)'.*/\1/p" "$1/meson.build" 2>/dev/null |
    head -n1 || true
}

# The Debian archive this machine's apt uses, as apt lists it: the URI of
# the entry for the release itself (not its -updates or -security).
debian_archive_uri() {
  local codename
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
    awk -v c="$codename" '
      $2 == c { print $1; found = 1; exit }
      $2 !~ /-/ && first == "" { first = $1 }
      END { if (!found && first != "") print first }'
}

fetch_libfuse() {
  local have suite uri tmp tree ver
  have=$(libfuse_version "$libfuse_dir")
  if [ -n "$have" ] && dpkg --compare-versions "$have" ge 3.18; then
    echo "install-deps: libfuse $have in $libfuse_dir"
    return
  fi
  suite=${CLAIRFS_LIBFUSE_SUITE:-sid}
  uri=$(debian_archive_uri)
  if [ -z "$uri" ]; then
    echo "install-deps: warning: no Debian archive in apt's sources; the build uses the system libfuse (no io_uring)" >&2
    return
  fi
  need_root "fetch Debian's fuse3 source package"
  tmp=$(mktemp -d)
  # apt downloads as the _apt user, which must reach these directories.
  chmod 755 "$tmp"
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/sources.list.d" \
    "$tmp/preferences.d" "$tmp/src"
  if id _apt >/dev/null 2>&1; then
    "${sudo[@]}" chown _apt "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"
  fi
  {
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n' "$uri" "$suite"
    # Debian's archive keyring (.pgp from trixie's package on, .gpg before);
    # with neither, apt checks against its trusted.gpg.d.
    local keyring
    for keyring in /usr/share/keyrings/debian-archive-keyring.{pgp,gpg}; do
      if [ -f "$keyring" ]; then
        printf 'Signed-By: %s\n' "$keyring"
        break
      fi
    done
  } >"$tmp/sources.list.d/clairfs-libfuse.sources"
  printf '%s\n' "Dir::State::Lists \"$tmp/lists\";" "Dir::Cache \"$tmp/cache\";" \
    'Dir::Etc::sourcelist "/dev/null";' "Dir::Etc::sourceparts \"$tmp/sources.list.d\";" \
    'Dir::Etc::preferences "/dev/null";' "Dir::Etc::preferencesparts \"$tmp/preferences.d\";" \
    >"$tmp/apt.conf"
  echo "install-deps: fetching Debian's fuse3 source package ($suite)"
  if (cd "$tmp/src" &&
    "${sudo[@]}" env APT_CONFIG="$tmp/apt.conf" apt-get update -qq &&
    "${sudo[@]}" env APT_CONFIG="$tmp/apt.conf" apt-get source -qq fuse3) >"$tmp/log" 2>&1; then
    tree=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d -name 'fuse3-*' | head -n1)
    ver=$(libfuse_version "$tree")
    if [ -n "$ver" ] && dpkg --compare-versions "$ver" ge 3.18; then
      "${sudo[@]}" rm -rf "$libfuse_dir"
      mkdir -p "$(dirname "$libfuse_dir")"
      "${sudo[@]}" mv "$tree" "$libfuse_dir"
      # Its files keep the tarball's times; this one says when it came
      # (scripts/build.sh reconfigures a build directory older than it).
      "${sudo[@]}" touch "$libfuse_dir/.fetched"
      echo "install-deps: libfuse $ver in $libfuse_dir ($(basename "$(ls "$tmp"/src/*.dsc)" .dsc))"
    else
      echo "install-deps: warning: $suite has libfuse ${ver:-of no known version}, not >= 3.18; the build uses the system libfuse (no io_uring)" >&2
    fi
  else
    echo "install-deps: warning: cannot fetch Debian's fuse3 source ($(grep -m1 -E '^(E|W|dpkg-source): ' "$tmp/log" || tail -n1 "$tmp/log")); the build uses the system libfuse (no io_uring)" >&2
  fi
  "${sudo[@]}" rm -rf "$tmp"
}

fetch_libfuse

case "${1:-build}" in
test | bench) frameworks_venv ;;
esac
