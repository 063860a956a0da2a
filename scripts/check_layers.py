#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keeps the areas of src/ in the layers src/layers.txt writes down.

All public headers share one include root (include/), so separate static
libraries alone would not stop prefetch/ from including a fuse/ header; and
meson links static libraries inside --start-group/--end-group, so an upward
call would link too. The build runs this twice instead:

  check_layers.py includes --stamp OUT --depfile DEP
      before any area is compiled: every #include "..." of src/ and
      include/clairfs/ resolved to its file, and refused where the file's
      area is not one the includer's area names. Writes OUT (a header each
      area library lists, so ninja runs this first) only when all is well.
  check_layers.py symbols --stamp OUT --nm NM LIBS...
      once the area libraries are built: every symbol an area's objects
      need that only an area out of its reach defines (a forward
      declaration of a function of an area above it, say).
  check_layers.py graph [-v]
      prints which area includes which, and how often (-v: every include).

--root DIR checks another tree than the one this script is in (its test).

One line per violation, naming the file, what it reaches and the rule.
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join('src', 'layers.txt')
INCLUDE = re.compile(r'\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = ('.cpp', '.hpp', '.h')


def read_table():
    """The areas top to bottom, each with the areas it names; a table that
    names an area above (or beside) the one naming it is itself refused."""
    areas, errors = {}, []
    with open(os.path.join(ROOT, TABLE)) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            area, _, named = line.partition(':')
            areas[area.strip()] = (n, named.split())
    order = list(areas)
    for area, (n, named) in areas.items():
        for other in named:
            if other not in areas:
                errors.append(f'{TABLE}:{n}: {area} names {other}, which is no area')
            elif order.index(other) <= order.index(area):
                errors.append(f'{TABLE}:{n}: {area} names {other}, which is not below it')
    return {a: set(named) for a, (_, named) in areas.items()}, errors


def reach(table, area):
    """The areas `area` names, and the areas those name, all the way down:
    an inline function of a header it may include may call any of them."""
    seen, todo = set(), list(table[area])
    while todo:
        a = todo.pop()
        if a not in seen:
            seen.add(a)
            todo.extend(table[a])
    return seen


def area_of(path):
    """src/AREA/... and include/clairfs/AREA/... (or include/clairfs/AREA.hpp)
    are AREA's; src/main.cpp is main's. None for anything else."""
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts[0] == 'src':
        return parts[1] if len(parts) > 2 else 'main'
    if parts[:2] == ['include', 'clairfs']:
        return parts[2] if len(parts) > 3 else os.path.splitext(parts[2])[0]
    return None


def sources():
    """Every source and header of src/ and include/clairfs/, and the
    directories holding them (a depfile naming a directory re-runs the check
    when a file is added to it)."""
    files, dirs = [], []
    for top in ('src', os.path.join('include', 'clairfs')):
        for d, subdirs, names in os.walk(os.path.join(ROOT, top)):
            subdirs.sort()
            dirs.append(d)
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith(SOURCE_SUFFIXES)]
    return files, dirs


def resolve(path, name):
    """The file `#include "name"` in `path` reads: the includer's own
    directory first, then the include directories the build passes (src/ is
    the area libraries' own directory; include/ and the root are `inc`)."""
    for base in (os.path.dirname(path), os.path.join(ROOT, 'src'),
                 os.path.join(ROOT, 'include'), ROOT):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(candidate):
            return candidate
    return None  # a system or generated header (clairfs_config.h)


def includes():
    """(file, line, text included, its file) for every include of one area's
    file that reads another area's file."""
    files, _ = sources()
    for path in files:
        with open(path, errors='replace') as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                target = m and resolve(path, m.group(1))
                if target and area_of(target) != area_of(path):
                    yield path, n, m.group(1), target


def check_includes(table):
    errors = []
    files, _ = sources()
    for path in files:
        if area_of(path) not in table:
            errors.append(f'{os.path.relpath(path, ROOT)}: its area '
                          f'{area_of(path)} has no line in {TABLE}')
    for path, n, name, target in includes():
        a, b = area_of(path), area_of(target)
        if a in table and b in table and b not in table[a]:
            errors.append(f'{os.path.relpath(path, ROOT)}:{n} includes {name}: '
                          f'{a} may not include {b} ({TABLE})')
    return errors


def write_depfile(depfile, stamp):
    files, dirs = sources()
    deps = [os.path.join(ROOT, TABLE)] + files + dirs
    with open(depfile, 'w') as f:
        f.write(stamp + ': ' + ' \\\n  '.join(p.replace(' ', '\\ ') for p in deps) + '\n')


def nm_symbols(nm, archive):
    """(member, symbol, defined) for the global symbols of an archive."""
    out = subprocess.run([nm, '-A', '-P', '-g', archive], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        where, _, rest = line.rpartition(': ')
        fields = rest.split()
        if len(fields) < 2 or fields[1] in ('w', 'v'):
            continue  # weak undefined: the link does not need it
        member = where[where.find('[') + 1:-1] if where.endswith(']') else where
        if os.path.isabs(member):  # meson's thin archives name their objects
            member = os.path.relpath(member)
        yield member, fields[0], fields[1] != 'U'


def check_symbols(table, nm, archives):
    """An area's undefined symbol that only areas out of its reach define."""
    defined, needed = {}, []
    for archive in archives:
        m = re.fullmatch(r'libclairfs_(\w+)\.a', os.path.basename(archive))
        area = m and m.group(1)
        if area not in table:
            return [f'{archive}: not the library of an area of {TABLE}']
        for member, symbol, is_defined in nm_symbols(nm, archive):
            if is_defined:
                defined.setdefault(symbol, set()).add(area)
            else:
                needed.append((area, member, symbol))
    errors, seen = [], set()
    for area, member, symbol in needed:
        where = defined.get(symbol)
        allowed = reach(table, area) | {area}
        if where and not (where & allowed) and (area, symbol) not in seen:
            seen.add((area, symbol))
            errors.append((area, member, symbol, sorted(where)))
    if not errors:
        return []
    names = subprocess.run(['c++filt'], input='\n'.join(e[2] for e in errors),
                           capture_output=True, text=True).stdout.splitlines()
    if len(names) != len(errors):
        names = [e[2] for e in errors]
    return [f'{member} ({area}) calls {name}, defined in {", ".join(where)}: '
            f'{area} may not call {where[0]} ({TABLE})'
            for (area, member, _, where), name in zip(errors, names)]


def print_graph(verbose):
    edges = {}
    for path, n, name, target in includes():
        edges.setdefault((area_of(path), area_of(target)), []).append(
            f'{os.path.relpath(path, ROOT)}:{n} {name}')
    for (a, b), lines in sorted(edges.items()):
        print(f'{a} -> {b} ({len(lines)})')
        if verbose:
            print(''.join(f'    {line}\n' for line in lines), end='')


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='mode', required=True)
    inc = sub.add_parser('includes')
    inc.add_argument('--stamp', required=True)
    inc.add_argument('--depfile', required=True)
    sym = sub.add_parser('symbols')
    sym.add_argument('--stamp', required=True)
    sym.add_argument('--nm', default='nm')
    sym.add_argument('archives', nargs='+')
    graph = sub.add_parser('graph')
    graph.add_argument('-v', action='store_true')
    for p in (inc, sym, graph):
        p.add_argument('--root', default=ROOT)
    args = parser.parse_args()
    ROOT = os.path.abspath(args.root)
    table, errors = read_table()
    if args.mode == 'graph':
        print_graph(args.v)
        return 0
    stamp = os.path.abspath(args.stamp)
    if os.path.exists(stamp):
        os.remove(stamp)  # a failed check leaves nothing for ninja to trust
    if args.mode == 'includes':
        write_depfile(args.depfile, args.stamp)
        errors = errors or check_includes(table)
    else:
        errors = errors or check_symbols(table, args.nm, args.archives)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    with open(stamp, 'w') as f:
        f.write(f'// Written by scripts/check_layers.py {args.mode}: the areas keep {TABLE}.\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
