# SPDX-License-Identifier: MIT
# Sourced by clairfs-prolog.sh and clairfs-epilog.sh: the one reading of
# their configuration, so that the epilog unmounts exactly what the
# prolog mounted. Each line is BACKING MOUNTPOINT [OPTIONS...]; '#' starts
# a comment, %j is the job id and %u the user.
#
# for_each_mount FN: calls FN LINENO PER_JOB BACKING MOUNTPOINT [OPTIONS...]
# for every line that has words (PER_JOB is true where the line has %j);
# returns the worst status FN returned.
for_each_mount() {
  local fn=$1 line lineno=0 per_job status=0 words
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    per_job=false
    [[ $line == *%j* ]] && per_job=true
    line=${line//%j/$job}
    line=${line//%u/$user}
    read -r -a words <<<"$line"
    [ "${#words[@]}" -eq 0 ] && continue
    "$fn" "$lineno" "$per_job" "${words[@]}" || status=1
  done <"$conf"
  return $status
}
