# SPDX-License-Identifier: MIT
"""Reading the user docs (README.md and docs/*.md) as the tests need them:
their fenced code blocks, the commands of the shell blocks as the shell
reads them, their links, and their headings as GitHub anchors them.
Python 3 stdlib only."""
import glob
import os
import re
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("CLAIRFS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))

# The languages a fenced block is a shell session in.
SHELL = {"sh", "bash", "shell", "console"}


def user_docs():
    """README.md, then docs/*.md in name order, as paths relative to the root."""
    docs = sorted(os.path.relpath(p, SOURCE_ROOT)
                  for p in glob.glob(os.path.join(SOURCE_ROOT, "docs", "*.md")))
    return ["README.md"] + docs


def read(rel):
    with open(os.path.join(SOURCE_ROOT, rel), encoding="utf-8") as f:
        return f.read()


@dataclass
class Block:
    doc: str     # path relative to the source root
    line: int    # 1-based line of the block's first content line
    lang: str    # the info string's first word, "" if none
    lines: list  # its content lines


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")


def blocks(doc):
    """Every fenced code block of `doc`, in order."""
    out, cur, fence = [], None, None
    for n, line in enumerate(read(doc).splitlines(), 1):
        m = _FENCE.match(line)
        if cur is None:
            if m:
                fence = m.group(1)
                cur = Block(doc, n + 1, m.group(2).lower(), [])
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not m.group(2):
            out.append(cur)
            cur = None
        else:
            cur.lines.append(line)
    if cur is not None:
        raise ValueError(f"{doc}:{cur.line - 1}: a fenced block that never closes")
    return out


def prose_lines(doc):
    """(line number, text) of every line outside fenced blocks."""
    inside, fence = False, None
    for n, line in enumerate(read(doc).splitlines(), 1):
        m = _FENCE.match(line)
        if not inside and m:
            inside, fence = True, m.group(1)
        elif inside and m and m.group(1)[0] == fence[0] and not m.group(2):
            inside = False
        elif not inside:
            yield n, line


# ---------------------------------------------------------------- commands


def _scan(text):
    """(code without comments, whether a quote is left open): a shell's
    view of quotes, backslashes and comments, enough for the docs' commands."""
    out, i, quote = [], 0, None
    while i < len(text):
        c = text[i]
        if quote == "'":
            out.append(c)
            if c == "'":
                quote = None
        elif quote == '"':
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\" and i + 1 < len(text):
            out.append(text[i:i + 2])
            i += 1
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out), quote is not None


def _continues(text):
    code, open_quote = _scan(text)
    if open_quote:
        return True
    last = code.rstrip()
    return last.endswith(("\\", "&&", "||", "|"))


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


@dataclass
class Command:
    doc: str
    line: int
    text: str    # as written: continuation lines, comments and heredoc bodies kept

    @property
    def key(self):
        """The command as the test's lists name it: comments dropped, line
        continuations joined, runs of white space made one space."""
        code, _ = _scan(self.text)
        return " ".join(code.replace("\\\n", " ").split())


def commands(block):
    """The commands of a shell block, one per logical line: a line ending in
    a backslash, a pipe or && (or inside an open quote) continues on the
    next; a heredoc's body belongs to its command. Blank lines and lines
    that are only a comment are not commands."""
    out, lines, i = [], block.lines, 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        start, parts = i, [lines[i]]
        while _continues("\n".join(parts)) and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        m = _HEREDOC.search(_scan("\n".join(parts))[0])
        if m:
            while i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
                if lines[i].strip() == m.group(2):
                    break
        out.append(Command(block.doc, block.line + start, "\n".join(parts)))
        i += 1
    return out


def doc_commands(docs=None):
    """Every command of every shell block of the user docs, in order."""
    return [c for d in (docs or user_docs()) for b in blocks(d) if b.lang in SHELL
            for c in commands(b)]


# ---------------------------------------------------------------- links and headings

_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")


@dataclass
class Link:
    doc: str
    line: int
    text: str
    target: str


def links(doc):
    """Every inline link and image of `doc` outside code."""
    out = []
    for n, line in prose_lines(doc):
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            out.append(Link(doc, n, m.group(1), m.group(2)))
    return out


def slug(heading):
    """GitHub's anchor for a heading's text: markup dropped, lower case,
    everything but letters, digits, '_', '-' and spaces removed, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = "".join(c for c in text.lower() if c.isalnum() or c in "_- ")
    return text.replace(" ", "-")


def anchors(doc):
    """The anchors of `doc`'s headings, duplicates numbered as GitHub does."""
    seen, out = {}, set()
    for _, line in prose_lines(doc):
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def man_sections(path):
    """The .SH and .SS titles of a man page, quotes and roff escapes undone."""
    out = set()
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r'^\.S[HS]\s+"?(.*?)"?\s*$', line)
            if m:
                out.add(m.group(1).replace("\\-", "-").replace("\\(hy", "-"))
    return out
