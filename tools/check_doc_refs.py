#!/usr/bin/env python3
"""check_doc_refs.py -- the documentation cites files of this repository only.

    tools/check_doc_refs.py [--root DIR]

Every Markdown file of the repository (README.md, docs/, bench/, examples/, tests/, ...;
build directories and .git left out) is read: a relative link to a .md file
(`[text](contract.md#5)`) must reach a file, and the design notes the project was first
written from (SPEC.md, AUTOGRAD.md, LLM_ANCHORS.md, STYLE.md) are not part of the
repository, so a mention of one is an error: the contract is docs/contract.md, the autograd notes are
docs/autograd.md. Prints each offending line (file:line) and exits 1. CTest docs_references.
"""
import argparse
import os
import re
import sys

OUTSIDE = re.compile(r"\b(SPEC|AUTOGRAD|LLM_ANCHORS|STYLE)\.md\b")
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)#\s]+\.md)(?:#[^)]*)?\)")


def markdown_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")) and x != "node_modules")
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(d, f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args(argv)
    bad = 0
    for path in markdown_files(a.root):
        rel = os.path.relpath(path, a.root)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for m in OUTSIDE.finditer(line):
                    print("%s:%d: %s is not in this repository (docs/contract.md, docs/autograd.md)" % (rel, n, m.group(0)))
                    bad += 1
                for m in LINK.finditer(line):
                    if not os.path.isfile(os.path.join(os.path.dirname(path), m.group(1))):
                        print("%s:%d: the link %s reaches no file" % (rel, n, m.group(1)))
                        bad += 1
    if bad:
        return 1
    print("check_doc_refs.py: no reference to a document outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
