#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check_layers.py on a tree of two areas, top (may call bottom) and
# bottom: a downward include and call pass; an upward include, an upward
# call through a forward declaration, and a table naming an area above fail
# with one line each, naming the file and the rule; a folder without a line
# in the table fails too. The build runs the same script on the real tree.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check="$root/scripts/check_layers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect RC PATTERN ARGS...: the checker's exit status, and its one stderr
# line (none where PATTERN is empty).
expect() {
  local rc_want=$1 pattern=$2 rc=0
  shift 2
  python3 "$check" "$@" --root "$tmp/tree" >/dev/null 2>"$tmp/err" || rc=$?
  if [ "$rc" -ne "$rc_want" ] || { [ -z "$pattern" ] && [ -s "$tmp/err" ]; } ||
    { [ -n "$pattern" ] && { [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "$pattern" "$tmp/err"; }; }; then
    echo "FAIL [$*]: exit $rc (want $rc_want), stderr (want: ${pattern:-nothing}):"
    sed 's/^/    /' "$tmp/err"
    fails=$((fails + 1))
  fi
}
includes() { expect "$1" "$2" includes --stamp "$tmp/stamp.h" --depfile "$tmp/stamp.d"; }

mkdir -p "$tmp/tree/src/top" "$tmp/tree/src/bottom" "$tmp/tree/include/clairfs/bottom" \
  "$tmp/tree/include/clairfs/top"
printf 'top: bottom\nbottom:\n' >"$tmp/tree/src/layers.txt"
echo 'int bottom_value();' >"$tmp/tree/include/clairfs/bottom/value.hpp"
echo 'int top_value();' >"$tmp/tree/include/clairfs/top/value.hpp"
printf '#include "clairfs/bottom/value.hpp"\nint bottom_value() { return 1; }\n' \
  >"$tmp/tree/src/bottom/value.cpp"
printf '#include "clairfs/top/value.hpp"\n#include "clairfs/bottom/value.hpp"\nint top_value() { return bottom_value(); }\n' \
  >"$tmp/tree/src/top/value.cpp"

includes 0 ''
[ -f "$tmp/stamp.h" ] || { echo "FAIL: no stamp after a passing check"; fails=$((fails + 1)); }
grep -q 'src/bottom/value.cpp' "$tmp/stamp.d" ||
  { echo "FAIL: the depfile does not name the sources"; fails=$((fails + 1)); }

echo '#include "clairfs/top/value.hpp"' >>"$tmp/tree/src/bottom/value.cpp"
includes 1 '^src/bottom/value.cpp:3 includes clairfs/top/value.hpp: bottom may not include top (src/layers.txt)$'
[ ! -e "$tmp/stamp.h" ] || { echo "FAIL: a stamp after a failing check"; fails=$((fails + 1)); }
sed -i '3d' "$tmp/tree/src/bottom/value.cpp"

mkdir "$tmp/tree/src/stray" && touch "$tmp/tree/src/stray/x.cpp"
includes 1 '^src/stray/x.cpp: its area stray has no line in src/layers.txt$'
rm -r "$tmp/tree/src/stray"

printf 'top: bottom\nbottom: top\n' >"$tmp/tree/src/layers.txt"
includes 1 '^src/layers.txt:2: bottom names top, which is not below it$'
printf 'top: bottom\nbottom:\n' >"$tmp/tree/src/layers.txt"

# Symbols: the libraries as meson names them, built from the tree.
symbols() { expect "$1" "$2" symbols --stamp "$tmp/linked.stamp" "$tmp/libclairfs_top.a" "$tmp/libclairfs_bottom.a"; }
archive() {
  local area=$1
  shift
  rm -f "$tmp/libclairfs_$area.a"
  c++ -c -I "$tmp/tree/include" -o "$tmp/$area.o" -x c++ - <<<"$*" || fails=$((fails + 1))
  ar rcs "$tmp/libclairfs_$area.a" "$tmp/$area.o"
}
archive top "$(cat "$tmp/tree/src/top/value.cpp")"
archive bottom "$(cat "$tmp/tree/src/bottom/value.cpp")"
symbols 0 ''
archive bottom 'int top_value(); int bottom_value() { return top_value(); }'
symbols 1 '^bottom.o (bottom) calls top_value(), defined in top: bottom may not call top (src/layers.txt)$'

[ "$fails" -eq 0 ] && echo "check_layers: every case as expected"
exit $((fails > 0))
