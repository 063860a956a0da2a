#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`clairfs status --watch` (issue 21, item 5) as a user sees it: run in a
terminal (tmux, on a private server: keys sent with send-keys, the screen
read with capture-pane, the terminal's state with display -p).

- screen: from a shell, the view takes the alternate screen and hides the
  cursor; the RAM bar, bytes and files and the shared-FS figures are the
  status document's; more reads change them in place (the header stays the
  top line, once); a narrower, shorter window gets lines that fit, the
  footer kept; 'q' exits 0 with the shell's screen and cursor back;
- signals: ^C and SIGTERM end it by that signal (the shell sees how it
  ended), the terminal restored;
- gone: unmounted while watched, one line beginning "clairfs: " and exit 1
  on the shell's screen;
- not a terminal (a pipe, or TERM=dumb): reports appended as before, with
  --watch before MOUNT and --watch=S alike;
- a bad interval: exit 2, one line beginning "clairfs: ".
tmux is a test dependency (scripts/install-deps.sh test): without it the
test fails. Needs /dev/fuse (exit 77 without FUSE)."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import mountlib as ml

SOCKET = f"clairfs-watch-{os.getpid()}"
LABELS = ("clairfs ", "RAM ", "SSD ", "prefetch ", "job ", "shared FS ", "saved ", "FUSE ",
          "q quits")


def tmux(*args, check=True):
    env = dict(os.environ, TERM=os.environ.get("TERM") or "xterm")
    r = subprocess.run(["tmux", "-L", SOCKET, "-f", "/dev/null", *args], capture_output=True,
                       text=True, timeout=30, env=env)
    if check:
        ml.check(r.returncode == 0, f"tmux {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def screen(target):
    """The visible screen, trailing blank lines dropped."""
    return tmux("capture-pane", "-p", "-t", target).rstrip("\n").split("\n")


def process_state(pid):
    """What a process is doing, for a failure message: its state and
    where each of its threads waits, or that it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        waits = []
        for tid in sorted(os.listdir(f"/proc/{pid}/task")):
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                waits.append(f.read().strip() or "-")
        return f"pid {pid} state {state}, threads waiting in {', '.join(waits)}"
    except OSError:
        return f"pid {pid} is gone"


def zombie_exit(pid):
    """A zombie's wait status from /proc/PID/stat (field 52, exit_code),
    or None while it runs or once reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[-1]) if fields[0] == "Z" else None


def how_ended(target, pid):
    """("signal", N) or ("exit", N) for the dead pane's command, else None.
    tmux marks the pane dead when its terminal closes and learns how the
    command ended once it reaps it. tmux 3.3a now and then leaves the
    command a zombie for good (seen twice in CI: state Z, never reaped),
    so a zombie's status is read from /proc: the command has ended, and
    how is the kernel's answer, not tmux's."""
    sig, status = flags(target, "pane_dead_signal"), flags(target, "pane_dead_status")
    if sig:
        return ("signal", int(sig[0]))
    if status:
        return ("exit", int(status[0]))
    ws = zombie_exit(pid)
    if ws is None:
        return None
    return ("signal", os.WTERMSIG(ws)) if os.WIFSIGNALED(ws) else ("exit", os.WEXITSTATUS(ws))


def flags(target, *names):
    out = tmux("display-message", "-p", "-t", target, " ".join("#{%s}" % n for n in names))
    return out.split()


def wait_screen(target, cond, what, timeout=15):
    """Polls the screen until cond(lines) holds; fails with the last one."""
    last = []

    def ok():
        last[:] = screen(target)
        return cond(last)
    ml.check(ml.wait_until(ok, timeout, step=0.1), f"{what}; the screen:\n" + "\n".join(last))
    return last


def bytes_text(b):
    """src/cli/status_summary.cpp's bytes_text()."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while b >= 1024 and u < 4:
        b /= 1024
        u += 1
    return f"{b:.1f} {units[u]}" if u else f"{b:.0f} {units[u]}"


def line(lines, label):
    got = [l for l in lines if l.startswith(label)]
    return got[0] if len(got) == 1 else None


RAM = re.compile(r"RAM +\[([#.]+)\]  (.+) / (.+) \((\d+)%\)  ([\d,]+) files  hit (\S+)")


def ram_matches(lines, st):
    """The RAM line says what the status says: bar, bytes, capacity, files."""
    m = RAM.match(line(lines, "RAM ") or "")
    if not m:
        return False
    ram = st["ram"]
    cells = len(m.group(1))
    filled = int(ram["bytes"] / ram["capacity"] * cells + 0.5)
    return (m.group(1) == "#" * filled + "." * (cells - filled) and
            m.group(2) == bytes_text(ram["bytes"]) and m.group(3) == bytes_text(ram["capacity"]) and
            int(m.group(5).replace(",", "")) == ram["files"])


def watch_cmd(mp, *opts):
    return " ".join([shlex.quote(ml.CLAIRFS), "status", shlex.quote(mp), *opts])


def start_shell(name, width=100, height=30):
    tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), "sh")
    wait_screen(name, lambda l: any(x.strip() for x in l), "no shell prompt")


def in_view(target, what):
    """Waits for the view: alternate screen on, cursor hidden, header on top."""
    ml.check(ml.wait_until(lambda: flags(target, "alternate_on") == ["1"], 10, step=0.1),
             f"{what}: the view did not take the alternate screen")
    lines = wait_screen(target, lambda l: l[0].startswith("clairfs "), f"{what}: no header")
    ml.check(flags(target, "cursor_flag") == ["0"], f"{what}: the cursor is not hidden")
    return lines


def restored(target):
    return flags(target, "alternate_on", "cursor_flag") == ["0", "1"]


def case_screen(data, mp, expected):
    names = sorted(expected)
    half = {k: expected[k] for k in names[: len(names) // 2]}
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        ml.read_expected(mp, half, "first half")
        start_shell("w")
        tmux("send-keys", "-t", "w", watch_cmd(mp, "--watch", "0.2") + "; echo exit=$?", "Enter")
        in_view("w", "screen")
        st = ml.status(mp)
        ml.check(st["ram"]["files"] == len(half), f"RAM files {st['ram']['files']}")
        lines = wait_screen("w", lambda l: ram_matches(l, st), "the RAM line is not the status's")
        ml.check(sum(l.startswith("clairfs ") for l in lines) == 1, "the header is not there once")
        ml.check(lines[-1] == "q quits, space refreshes", f"footer: {lines[-1]!r}")
        ml.check(lines[0].endswith(mp) and "every 0.2 s" in lines[0] and
                 "mode unregistered" in lines[0], f"header: {lines[0]!r}")
        b = st["backing"]
        shared = f"shared FS {bytes_text(b['bytes'])} read, {b['files']} files"
        ml.check((line(lines, "shared FS") or "").startswith(shared),
                 f"shared FS line {line(lines, 'shared FS')!r}, expected {shared!r}...")
        ml.check((line(lines, "job ") or "").startswith("job       none registered"),
                 f"job line {line(lines, 'job ')!r}")

        # More reads, twice: the same screen shows the new figures.
        ml.read_expected(mp, expected, "all")
        ml.read_expected(mp, expected, "all again")
        st = ml.status(mp)
        ml.check(st["ram"]["files"] == len(expected), f"RAM files {st['ram']['files']}")
        ml.check(st["backing"]["saved_bytes"] > 0, f"saved_bytes {st['backing']}")
        lines = wait_screen("w", lambda l: ram_matches(l, st), "the RAM line did not follow")
        saved = (f"saved     {bytes_text(st['backing']['saved_bytes'])} not read from the shared "
                 f"FS ({st['backing']['saved_reads']:,} file reads)")
        lines = wait_screen("w", lambda l: (line(l, "saved ") or "").startswith(saved),
                            f"no {saved!r}")
        ml.check(lines[0].startswith("clairfs ") and
                 sum(l.startswith("clairfs ") for l in lines) == 1,
                 "refreshed by scrolling, not in place")
        ml.check(flags("w", "alternate_on") == ["1"], "left the alternate screen")

        # A smaller window: every line fits, none wrapped onto the next.
        tmux("resize-window", "-t", "w", "-x", "50", "-y", "8")

        def fits(l):
            return (len(l) <= 8 and l[0].startswith("clairfs ")
                    and l[-1] == "q quits, space refreshes" and all(len(x) <= 50 for x in l)
                    and all(not x or x.startswith(LABELS) for x in l))
        wait_screen("w", fits, "at 50x8, lines do not fit")
        tmux("resize-window", "-t", "w", "-x", "100", "-y", "30")
        wait_screen("w", lambda l: ram_matches(l, st) and len(l) > 8, "no full view after growing")

        tmux("send-keys", "-t", "w", "q")
        wait_screen("w", lambda l: "exit=0" in l, "'q' did not end it with 0")
        ml.check(restored("w"), f"after 'q': alternate_on, cursor_flag = "
                 f"{flags('w', 'alternate_on', 'cursor_flag')}")
        tmux("kill-session", "-t", "w")


def case_signals(data, mp):
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        for sig, how in ((signal.SIGINT, "C-c"), (signal.SIGTERM, "kill")):
            name = f"sig{int(sig)}"
            # The command itself in the pane, kept once dead to read how it ended.
            tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24",
                 "exec " + watch_cmd(mp, "--watch", "0.2"))
            tmux("set-option", "-w", "-t", name, "remain-on-exit", "on")
            in_view(name, sig.name)
            pid = int(flags(name, "pane_pid")[0])
            if how == "C-c":
                tmux("send-keys", "-t", name, "C-c")
            else:
                os.kill(pid, sig)
            ml.check(ml.wait_until(lambda: flags(name, "pane_dead") == ["1"], 10, step=0.1),
                     f"{sig.name}: still running")
            got = []
            ml.check(ml.wait_until(lambda: got.append(how_ended(name, pid)) or got[-1], 10,
                                   step=0.1),
                     f"{sig.name}: no exit status ({process_state(pid)})")
            ended = got[-1]
            ml.check(ended == ("signal", int(sig)), f"{sig.name}: ended by {ended}")
            # (tmux hides the cursor of a dead pane: that is checked below.)
            ml.check(flags(name, "alternate_on") == ["0"],
                     f"{sig.name}: still on the alternate screen")
            tmux("kill-session", "-t", name)
        # ^C from a shell: its prompt comes back with the cursor shown.
        start_shell("c")
        tmux("send-keys", "-t", "c", watch_cmd(mp, "--watch", "0.2"), "Enter")
        in_view("c", "^C from a shell")
        tmux("send-keys", "-t", "c", "C-c")
        ml.check(ml.wait_until(lambda: restored("c"), 10, step=0.1),
                 f"^C from a shell: alternate_on, cursor_flag = "
                 f"{flags('c', 'alternate_on', 'cursor_flag')}")
        tmux("kill-session", "-t", "c")


def case_gone(data, mp):
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        start_shell("g")
        tmux("send-keys", "-t", "g", watch_cmd(mp, "--watch", "0.2") + "; echo exit=$?", "Enter")
        in_view("g", "gone")
        r = ml.clairfs("umount", mp, timeout=60)
        ml.check(r.returncode == 0, f"umount: {r.stderr}")
        lines = wait_screen("g", lambda l: "exit=1" in l, "no exit 1 once unmounted")
        said = [l for l in lines if l.startswith("clairfs: ")]
        ml.check(len(said) == 1 and "no longer a clairfs mount" in said[0],
                 f"expected one line saying it is unmounted: {lines}")
        ml.check(restored("g"), "unmounted: terminal not restored")
        tmux("kill-session", "-t", "g")


def reports(cmd, count, timeout=15):
    """Runs cmd with stdout a pipe until it printed `count` reports."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, seen, deadline = [], 0, time.monotonic() + timeout
    try:
        while seen < count and time.monotonic() < deadline:
            l = p.stdout.readline()
            if not l:
                break
            out.append(l)
            seen += l.startswith("mode:")
    finally:
        p.kill()
        p.wait(10)
    text = "".join(out)
    ml.check(seen == count, f"{cmd}: {seen} reports of {count}: {text!r} {p.stderr.read()!r}")
    ml.check("\x1b" not in text, f"{cmd}: escape sequences in piped output")
    return text


def case_not_a_terminal(data, mp):
    with ml.mounted(data, mp, "--mem", "16M", "--no-detect"):
        reports([ml.CLAIRFS, "status", "--watch", mp], 2)
        reports([ml.CLAIRFS, "status", mp, "--watch=0.2"], 3)
        reports([ml.CLAIRFS, "status", mp, "--watch", "0.2"], 3)
        # A terminal that cannot move its cursor gets the reports too.
        start_shell("d", 100, 40)
        tmux("send-keys", "-t", "d", "TERM=dumb " + watch_cmd(mp, "--watch", "0.2"), "Enter")
        wait_screen("d", lambda l: sum(x.startswith("mode:") for x in l) >= 2,
                    "TERM=dumb: reports not appended")
        ml.check(flags("d", "alternate_on") == ["0"], "TERM=dumb took the alternate screen")
        tmux("send-keys", "-t", "d", "C-c")
        tmux("kill-session", "-t", "d")

        for args in (["--watch", "0"], ["--watch", "-1"], ["--watch=abc"], ["--watch="],
                     ["--watch", "100000"]):
            r = subprocess.run([ml.CLAIRFS, "status", mp, *args], capture_output=True, text=True,
                               timeout=30)
            ml.check(r.returncode == 2 and r.stderr.count("\n") == 1 and
                     r.stderr.startswith("clairfs: ") and "--watch" in r.stderr,
                     f"status {args}: exit {r.returncode}: {r.stderr!r}")


def test():
    ml.check(shutil.which("tmux"), "tmux is missing (scripts/install-deps.sh test installs it)")
    with tempfile.TemporaryDirectory(prefix="clairfs-watch.", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        expected = ml.random_dataset(data, 40, 21, 60_000)
        mp = os.path.join(tmp, "mnt")
        os.makedirs(mp)
        try:
            ml.run_cases(("screen", lambda: case_screen(data, mp, expected)),
                         ("signals", lambda: case_signals(data, mp)),
                         ("gone", lambda: case_gone(data, mp)),
                         ("not_a_terminal", lambda: case_not_a_terminal(data, mp)))
        finally:
            tmux("kill-server", check=False)


if __name__ == "__main__":
    ml.main(test)
