#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Slurm Prolog: mounts clairfs on each node of a job before its first task
# starts, as root, for the job's user. In slurm.conf:
#
#   Prolog=/usr/local/share/clairfs/slurm/clairfs-prolog.sh
#   Epilog=/usr/local/share/clairfs/slurm/clairfs-epilog.sh
#   PrologFlags=Alloc        # mount at allocation, before the job script
#
# Each line of ${CLAIRFS_SLURM_CONF:-/etc/clairfs/slurm.conf} is one mount:
#
#   BACKING  MOUNTPOINT  [clairfs mount OPTIONS...]
#   /lustre/datasets/imagenet  /mnt/clairfs/imagenet  --mem 64G --cache-dir /nvme/clairfs
#
# '#' starts a comment; %j in a line is the job id and %u the user (for a
# mount point per job where nodes are shared). The mount is made with
# --allow-other and --control-owner "$SLURM_JOB_USER", so the job's user
# reads it and may register the job (`clairfs register MOUNT --ranks auto`);
# every read is still checked against the backing files' modes.
#
# A mount already there (an epilog that failed) is unmounted first: the
# control file must be this job's user's. A mount that fails makes the
# prolog exit 1 with one line on stderr, which Slurm logs, and drains the
# node rather than run the job over an empty directory.
set -uo pipefail

conf=${CLAIRFS_SLURM_CONF:-/etc/clairfs/slurm.conf}
clairfs=${CLAIRFS:-$(command -v clairfs || echo /usr/local/bin/clairfs)}
job=${SLURM_JOB_ID:?clairfs-prolog: SLURM_JOB_ID is not set: run me as the Slurm Prolog}
user=${SLURM_JOB_USER:?clairfs-prolog: SLURM_JOB_USER is not set: run me as the Slurm Prolog}

say() { echo "clairfs-prolog: job $job: $*" >&2; }

[ -r "$conf" ] || { say "cannot read $conf"; exit 1; }

# shellcheck source=clairfs-slurm-conf.sh
. "$(dirname "$(readlink -f "$0")")/clairfs-slurm-conf.sh"

mount_one() {
  local lineno=$1 backing=${3:-} mnt=${4:-} out
  if [ -z "$mnt" ]; then
    say "$conf:$lineno: expected BACKING MOUNTPOINT [OPTIONS...]"
    return 1
  fi
  shift 4
  if "$clairfs" status "$mnt" --json >/dev/null 2>&1; then
    say "$mnt is still mounted (a previous epilog failed?): unmounting it first"
    "$clairfs" umount "$mnt" || "$clairfs" umount --lazy "$mnt" || true
  fi
  if ! mkdir -p "$mnt"; then
    say "cannot create $mnt"
    return 1
  fi
  # The daemon outlives the prolog (it detaches); its log goes to syslog
  # unless the line says --log-file.
  if ! out=$("$clairfs" mount "$backing" "$mnt" --allow-other --control-owner "$user" \
    --progress never "$@" 2>&1); then
    say "mounting $backing on $mnt failed: $(printf '%s' "$out" | tail -n 1)"
    return 1
  fi
}

for_each_mount mount_one
