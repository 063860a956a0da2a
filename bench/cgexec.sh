#!/bin/sh
# SPDX-License-Identifier: MIT
# cgexec.sh CGROUP_DIR... -- COMMAND [ARGS...]
# Moves itself into every cgroup-v1 directory given (writes its PID to
# cgroup.procs), then execs COMMAND, so COMMAND and everything it forks
# (DataLoader workers, a FUSE daemon that daemonizes) start inside them.
set -e
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  echo $$ > "$1/cgroup.procs"
  shift
done
[ "${1:-}" = "--" ] || { echo "usage: cgexec.sh CGROUP_DIR... -- COMMAND..." >&2; exit 2; }
shift
exec "$@"
