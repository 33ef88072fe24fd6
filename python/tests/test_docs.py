#!/usr/bin/python3
"""The docs' Python sessions and the README's install, run as a reader would run them.

    test_docs.py --lib build/libvramcalc.so FILE.md ...             check (exit 1 if any is stale)
    test_docs.py --lib build/libvramcalc.so --update FILE.md ...    rewrite the sessions' outputs
    test_docs.py --install README.md                                 run the install, then README's sessions

A session is the ```python block right after the line

    <!-- python session: checked by python/tests/test_docs.py -->

Lines starting with ">>> " (continued by "... ") are run in a fresh interpreter, in the
repository root; the other lines are what the interpreter prints (an expression's repr, or
what it prints; for an exception the traceback's last line, after a line "Traceback (most
recent call last):" and "  ..."). Trailing spaces are not compared.

--install runs the ```sh block right after

    <!-- python install: run by python/tests/test_docs.py -->

line by line with sh in the repository root, `.venv` replaced by a scratch directory (so the
checkout gets no .venv) and without VRAMCALC_LIB (the build compiles the library with CMake,
as a reader's does), then runs the file's sessions with that environment's python, outside
the checkout's python/ (`vramcalc.__file__` must be the installed one).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SESSION = "<!-- python session: checked by python/tests/test_docs.py -->"
INSTALL = "<!-- python install: run by python/tests/test_docs.py -->"

# run in the interpreter under test: statements on stdin (JSON), outputs on stdout (JSON)
RUNNER = r'''
import io, json, sys, traceback
stmts = json.load(sys.stdin)
out, ns, real = [], {"__name__": "__main__"}, sys.stdout
for src in stmts:
    buf = io.StringIO()
    sys.stdout = buf
    try:
        exec(compile(src, "<doc>", "single"), ns)
    except Exception as e:  # noqa: BLE001
        last = traceback.format_exception_only(type(e), e)[-1].rstrip("\n")
        buf.write("Traceback (most recent call last):\n  ...\n" + last + "\n")
    finally:
        sys.stdout = real
    out.append(buf.getvalue())
json.dump(out, real)
'''


def blocks(lines, marker, lang):
    """(start, end) line indices of the fenced block's body after each marker line."""
    out = []
    for i, l in enumerate(lines):
        if l.strip() == marker:
            if i + 1 >= len(lines) or lines[i + 1].strip() != "```" + lang:
                raise SystemExit("%s: line %d: the marker is not followed by a ```%s block" % (FILE, i + 1, lang))
            j = i + 2
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            out.append((i + 2, j))
    return out


def parse(body):
    """[(statement source, [expected output lines])]."""
    items = []
    for l in body:
        if l.startswith(">>> "):
            items.append([l[4:], []])
        elif l.startswith("... ") or l == "...":
            items[-1][0] += "\n" + l[4:]
        elif items:
            items[-1][1].append(l)
        else:
            raise SystemExit("%s: a session starts with '>>> ', not %r" % (FILE, l))
    return items


def run(python, stmts, env):
    p = subprocess.run([python, "-c", RUNNER], input=json.dumps([s + "\n" for s in stmts]), capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=600)
    if p.returncode:
        raise SystemExit("%s: the session's interpreter failed: %s" % (FILE, p.stderr[-2000:]))
    return json.loads(p.stdout)


def norm(lines):
    return [l.rstrip() for l in lines]


def check_file(path, python, env, update):
    global FILE
    FILE = os.path.relpath(path, ROOT)
    with open(path) as fh:
        lines = fh.read().split("\n")
    stale, n = [], 0
    for start, end in reversed(blocks(lines, SESSION, "python")):
        items = parse(lines[start:end])
        got = run(python, [s for s, _ in items], env)
        new = []
        for (src, want), out in zip(items, got):
            have = out.rstrip("\n").split("\n") if out else []
            if want[:1] == ["Traceback (most recent call last):"] and have[:1] == want[:1]:
                ok = norm(want[-1:]) == norm(have[-1:])
            else:
                ok = norm(want) == norm(have)
            if not ok:
                stale.append("%s: >>> %s\n--- the docs say:\n%s\n--- it prints:\n%s" % (
                    FILE, src.split("\n")[0], "\n".join(want), "\n".join(have)))
            new += [(">>> " if k == 0 else "... ") + l for k, l in enumerate(src.split("\n"))]
            new += want if ok else have
            n += 1
        lines[start:end] = new
    if update and stale:
        with open(path, "w") as fh:
            fh.write("\n".join(lines))
        print("%s: %d statement(s) rewritten" % (FILE, len(stale)))
        return []
    print("%s: %d statement(s) run, %d stale" % (FILE, n, len(stale)))
    return stale


def install(path, tmp):
    """Runs the file's install block with .venv -> tmp/venv; returns that environment's python.
    Exit 77 (skipped) without what README says to apt-get first: python3-venv (ensurepip),
    python3-setuptools, python3-wheel."""
    global FILE
    p = subprocess.run(["/usr/bin/python3", "-c", "import ensurepip, setuptools, wheel"], capture_output=True)
    if p.returncode:
        print("python3-venv, python3-setuptools or python3-wheel is not installed: skipped")
        sys.exit(77)
    FILE = os.path.relpath(path, ROOT)
    with open(path) as fh:
        lines = fh.read().split("\n")
    found = blocks(lines, INSTALL, "sh")
    if len(found) != 1:
        raise SystemExit("%s: %d install blocks (want 1)" % (FILE, len(found)))
    venv = os.path.join(tmp, "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("VRAMCALC_LIB", "PYTHONPATH", "VIRTUAL_ENV")}
    start, end = found[0]
    for cmd in lines[start:end]:
        if not cmd.strip():
            continue
        # the shell's python3 is Debian's (a PATH with another python3 first would make another venv)
        p = subprocess.run(["sh", "-c", re.sub(r"(?<![\w/])\.venv\b", venv, cmd)], cwd=ROOT, capture_output=True,
                           text=True, env=dict(env, PATH="/usr/bin:/bin"), timeout=600)
        if p.returncode:
            raise SystemExit("%s: `%s` failed (exit %d):\n%s" % (FILE, cmd, p.returncode,
                                                                  (p.stdout + p.stderr)[-3000:]))
        print("ran: %s" % cmd)
    python = os.path.join(venv, "bin", "python")
    where = run(python, ["import vramcalc, os; print(os.path.realpath(vramcalc.__file__))"], env)[0].strip()
    if not where.startswith(os.path.realpath(venv)):
        raise SystemExit("%s: the sessions would import %s, not the installed package" % (FILE, where))
    return python, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", help="the library for the checkout's package (not with --install)")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--install", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if not a.install and any("torchvision" in open(f).read() for f in a.files):
        try:
            import torch  # noqa: F401
            import torchvision  # noqa: F401
        except ImportError:
            print("torch/torchvision absent (a session exports a torchvision model): skipped")
            return 77
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in a.files:
            path = os.path.abspath(f)
            if a.install:
                python, env = install(path, tmp)
            else:
                env = dict(os.environ, VRAMCALC_LIB=os.path.abspath(a.lib),
                           PYTHONPATH=os.path.join(ROOT, "python"))
                python = sys.executable
            stale += check_file(path, python, env, a.update)
        shutil.rmtree(tmp, ignore_errors=True)
    for s in stale:
        print("STALE: " + s)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
