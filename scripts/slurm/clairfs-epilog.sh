#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Slurm Epilog: unmounts what clairfs-prolog.sh mounted for the job (the same
# ${CLAIRFS_SLURM_CONF:-/etc/clairfs/slurm.conf}). `clairfs umount` returns
# once the daemon has exited, so the next job's mount finds the cache
# directory free. A file still open (a straggling process) makes it detach
# lazily instead: the daemon serves the open files, then exits. A mount
# point that is not mounted is fine (the prolog failed, or a rerun).
set -uo pipefail

conf=${CLAIRFS_SLURM_CONF:-/etc/clairfs/slurm.conf}
clairfs=${CLAIRFS:-$(command -v clairfs || echo /usr/local/bin/clairfs)}
job=${SLURM_JOB_ID:?clairfs-epilog: SLURM_JOB_ID is not set: run me as the Slurm Epilog}
user=${SLURM_JOB_USER:-}

say() { echo "clairfs-epilog: job $job: $*" >&2; }

[ -r "$conf" ] || { say "cannot read $conf"; exit 1; }

# shellcheck source=clairfs-slurm-conf.sh
. "$(dirname "$(readlink -f "$0")")/clairfs-slurm-conf.sh"

unmount_one() {
  local per_job=$2 mnt=${4:-}
  [ -n "$mnt" ] || return 0 # the prolog said so already
  if "$clairfs" status "$mnt" --json >/dev/null 2>&1; then
    if ! "$clairfs" umount "$mnt" 2>/dev/null; then
      say "$mnt is busy: detaching it lazily"
      "$clairfs" umount --lazy "$mnt" || { say "cannot unmount $mnt"; return 1; }
    fi
  fi
  # A mount point made for this job alone goes with it.
  if $per_job; then rmdir "$mnt" 2>/dev/null || true; fi
}

for_each_mount unmount_one
