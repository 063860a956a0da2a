#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The user docs hold together: every relative link of README.md,
docs/*.md, bench/RESULTS.md and tests/README.md reaches a file that
exists, a `#anchor` a heading of that file, and a link to a man page
section ("clairfs(1), FAILURES") a .SH or .SS of that page; every Python
example parses. And the shape a newcomer relies on: README.md at most 250
lines, the two commands (exactly as .ci/run and the scripts name them)
within its first 40 lines, every guide linked from it and opening with a
shell block, the guides linking their man page sections, and no internal
issue number in README.md, docs/ or man/. Needs no mount."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doclib  # noqa: E402
from doclib import SOURCE_ROOT  # noqa: E402

FAILED = []

# The README's two commands, kept word for word: .ci/run runs the second,
# scripts/demo.sh and scripts/test.sh say they are these.
TWO_COMMANDS = [
    'bash scripts/demo.sh   # install, build, then an unmodified PyTorch job on a throttled '
    '"shared" file system, direct vs clairfs (~3 min)',
    "bash scripts/test.sh   # install, build (warnings are errors), run every unit and "
    "real-mount test",
]

# Guides with no man page section behind them, and why.
NO_MAN_LINK = {
    "docs/performance.md": "measurements, whose reference is bench/RESULTS.md",
    "docs/developers.md": "the source tree and its tests, not the programs' behaviour",
}

# "issue 23", "issues 4 and 5", "(issue", "#23": the project's tracker is
# not the user's, so its numbers stay out of the docs.
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|\(issues?\b|(?<![\w/&#])#\d+\b", re.I)


def check(cond, msg):
    if not cond:
        FAILED.append(msg)
        print(f"FAIL: {msg}", flush=True)


def check_links(doc):
    """Returns how many links were checked."""
    n = 0
    for link in doclib.links(doc):
        target = link.target
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto:
            continue
        n += 1
        where = f"{doc}:{link.line}: [{link.text}]({target})"
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(SOURCE_ROOT, os.path.dirname(doc), path)) \
            if path else os.path.join(SOURCE_ROOT, doc)
        rel = os.path.relpath(full, SOURCE_ROOT)
        if not os.path.exists(full):
            check(False, f"{where}: {rel} does not exist")
            continue
        if anchor:
            check(full.endswith(".md"), f"{where}: an anchor into {rel}, which has no headings")
            if full.endswith(".md"):
                known = doclib.anchors(rel)
                check(anchor in known, f"{where}: no heading of {rel} has the anchor "
                      f"#{anchor}")
        if re.search(r"/man/[^/]+\.\d$", full):
            # "clairfs(1), SEVERAL NODES": the section must be the page's.
            m = re.match(r"^[\w-]+\(\d\)(?:,\s*(.+))?$", link.text)
            check(m, f"{where}: a man page link's text is PAGE(N) or PAGE(N), SECTION")
            if m and m.group(1):
                sections = doclib.man_sections(full)
                check(m.group(1) in sections,
                      f"{where}: {rel} has no section '{m.group(1)}' "
                      f"(it has: {', '.join(sorted(sections))})")
    return n


def test():
    docs = doclib.user_docs()
    guides = [d for d in docs if d.startswith("docs/")]
    check(len(guides) >= 10, f"only {len(guides)} guides in docs/: {guides}")

    readme = doclib.read("README.md").splitlines()
    check(len(readme) <= 250, f"README.md has {len(readme)} lines, more than 250")
    for cmd in TWO_COMMANDS:
        at = [n for n, line in enumerate(readme, 1) if line == cmd]
        check(at and at[0] <= 40, f"README.md: '{cmd.split('#')[0].strip()}' is not, word for "
              f"word, within the first 40 lines (found at {at})")
    with open(os.path.join(SOURCE_ROOT, ".ci", "run")) as f:
        check("exec bash scripts/test.sh" in f.read(), ".ci/run no longer runs the README's "
              "test command; TWO_COMMANDS would be checking the wrong thing")

    linked = {os.path.normpath(l.target.partition("#")[0]) for l in doclib.links("README.md")}
    for g in guides:
        check(g in linked, f"README.md does not link {g}")
        # The guide opens with the commands that do its task: its first
        # fenced block is a shell block, before the first section.
        lines = doclib.read(g).splitlines()
        first_section = next((n for n, l in enumerate(lines, 1) if l.startswith("## ")),
                             len(lines) + 1)
        bs = doclib.blocks(g)
        check(bs and bs[0].lang in doclib.SHELL and bs[0].line < first_section,
              f"{g} does not open with a shell block before its first section")
        if g not in NO_MAN_LINK:
            check(any("/man/" in l.target for l in doclib.links(g)),
                  f"{g} links no man page section")

    # A Python example that does not parse would fail the first user who
    # copies it; what it calls is python_register's to test.
    pyblocks = [b for d in docs for b in doclib.blocks(d) if b.lang in ("python", "py")]
    for b in pyblocks:
        try:
            compile("\n".join(b.lines), f"{b.doc}:{b.line}", "exec")
        except SyntaxError as e:
            check(False, f"{b.doc}:{b.line}: a Python block that does not parse: {e}")
    check(len(pyblocks) >= 4, f"only {len(pyblocks)} Python blocks found")

    checked = 0
    for doc in docs + ["bench/RESULTS.md", "tests/README.md"]:
        checked += check_links(doc)
    check(checked >= 50, f"only {checked} relative links found: is the link pattern broken?")

    man = [os.path.join("man", p) for p in sorted(os.listdir(os.path.join(SOURCE_ROOT, "man")))]
    for doc in docs + man:
        for n, line in enumerate(doclib.read(doc).splitlines(), 1):
            m = ISSUE_NUMBER.search(line)
            check(not m, f"{doc}:{n}: an internal issue number ('{m and m.group(0)}'): "
                  f"{line.strip()}")

    print(f"{len(docs)} docs, {checked} relative links, {len(pyblocks)} Python blocks, "
          f"{len(man)} man pages checked", flush=True)
    if FAILED:
        print(f"FAIL: {len(FAILED)} problems", flush=True)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    test()
