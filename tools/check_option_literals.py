#!/usr/bin/env python3
"""check_option_literals.py -- fails when a message of the library spells an option as a CLI flag.

    tools/check_option_literals.py [--root DIR] [FOLDER ...]

The library names an option in its messages by its table name between option marks (src/util/util.h:
O("tp"), OV("mode", "generate"), OS("precision", "fp32")), and each front end spells it
(vc_error_format_for: --tp for the CLI, tp= for Python). A literal "--flag" inside a C string of the
library would reach Python as the CLI's word. This reads every C string literal (comments and
#include lines left out; adjacent pieces as written) of the .c, .h and .def files under the FOLDERs
(default: src, layers; the option table's help text included, which vc_option_help and
vc_option_help_for spell) and fails, naming file and line, on each "--" followed by a letter that the
allow-list below does not cover. CTest option_literals runs it.
"""
import argparse
import os
import re
import sys

FLAG = re.compile(r"(?<![\w/.-])--[a-z][a-z0-9-]*")

# Whole files whose strings are not the library's messages.
ALLOW_FILES = {
    # the command line's own: its getopt table, --help's layout, its usage lines
    "src/cli/": "the CLI spells its own options",
    # the rendered report (the CLI's table, which Python prints as is) and --list-gpus' listing
    "src/api/report.c": "the rendered report, not a message",
    "src/api/render.c": "the --list-gpus listing, not a message",
    # a recipe's notes and hints, rendered in the report
    "src/policy/recipe.c": "recipe notes rendered in the report",
    # a layer kind's one-line summary, printed by vramcalc --list-layers (the CLI's)
    "layers/attention.c": "a --list-layers summary, the CLI's listing",
}

# Flags of other programs, or a command to run, inside a message.
ALLOW_TEXT = [
    (re.compile(r"vramcalc --[a-z-]+"), "a command line to run (vramcalc --help, vramcalc --list-layers)"),
    (re.compile(r"--sequence-parallel\b"), "Megatron-LM's flag, not vramcalc's"),
    (re.compile(r"--fp16's"), "Megatron-LM's flag, not vramcalc's"),
    (re.compile(r"--use-distributed-optimizer\b"), "Megatron-LM's flag, not vramcalc's"),
]


def literals(text):
    """(line, body) of each string literal outside comments, char literals and #include lines."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "#" and re.match(r"#\s*include", text[i:i + 20]):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                yield line, text[i + 1:j]
            i = j + 1
            continue
        if c == "\n":
            line += 1
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("folders", nargs="*", default=["src", "layers"])
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    bad = checked = 0
    for folder in a.folders:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".def")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if any(rel.startswith(p) for p in ALLOW_FILES):
                    continue
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for line, body in literals(text):
                    for allow, _ in ALLOW_TEXT:
                        body = allow.sub("", body)
                    for m in FLAG.finditer(body):
                        print("%s:%d: %s in a message: name the option with O(\"%s\") (src/util/util.h)"
                              % (rel, line, m.group(0), m.group(0)[2:].replace("-", "_")))
                        bad += 1
    if bad:
        print("%d CLI flag(s) in the library's messages" % bad)
        return 1
    print("no CLI flag in the library's messages (%d files)" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
