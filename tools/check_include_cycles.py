#!/usr/bin/env python3
"""check_include_cycles.py -- fails when the folders of the C sources include each other in a cycle.

    tools/check_include_cycles.py [--root DIR] [-I DIR ...] [--show] [FOLDER ...]

Every #include "..." line of the .c and .h files under the FOLDERs (default: src, layers,
include) is resolved as the compiler resolves a quoted include: first beside the including
file, then in each -I directory in turn (default: the include directories CMakeLists.txt gives
the library: include, the folders of its VC_SRC_FOLDERS, layers). An include that resolves to
no file in the repository (<stdio.h>, cJSON) is not an edge; one that resolves to none but
names a header the FOLDERs hold (an -I directory missing) is an error, so that a folder left
out of the -I list cannot hide an edge. A resolved include from a file in folder A to
a file in folder B (A != B; a folder is the file's directory, e.g. src/cli) is an edge A -> B
of the folder graph; the graph must have no cycle (the strongly connected components,
Tarjan's algorithm, are single folders). On a cycle it prints the folders of each component
and the #include lines that make its edges, and exits 1. --show prints the graph.

It reads folders, not a fixed list, so regrouping src/ into src/engine, src/model, ...
needs no change here: a new folder is a new node. CTest include_cycles runs it.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def sources(root, folders):
    for folder in folders:
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            sys.exit("check_include_cycles.py: no folder %s" % top)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def resolve(root, path, name, incdirs):
    for d in [os.path.dirname(path)] + [os.path.join(root, i) for i in incdirs]:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(cand):
            return cand
    return None


def default_incdirs(root):
    """include, CMakeLists.txt's set(VC_SRC_FOLDERS ...), layers; include, src, layers without it."""
    try:
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(r"^set\(VC_SRC_FOLDERS\s+([^)]*)\)", f.read(), re.M)
    except OSError:
        m = None
    return ["include"] + (m.group(1).split() if m else ["src"]) + ["layers"]


def graph(root, folders, incdirs, unresolved=None):
    """{folder: {folder: [(file, line number, include line), ...]}} over resolved includes;
    unresolved (a list) gets (file, line number, include line) for each quoted include that
    resolves to no file but names a header of the FOLDERs."""
    headers = {os.path.basename(p) for p in sources(root, folders) if p.endswith(".h")}
    edges = {}
    for path in sources(root, folders):
        a = os.path.relpath(os.path.dirname(path), root)
        edges.setdefault(a, {})
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1), incdirs)
                if target is None:
                    if unresolved is not None and os.path.basename(m.group(1)) in headers:
                        unresolved.append((os.path.relpath(path, root), n, line.strip()))
                    continue
                b = os.path.relpath(os.path.dirname(target), root)
                if b != a and not b.startswith(".."):
                    edges[a].setdefault(b, []).append((os.path.relpath(path, root), n, line.strip()))
                    edges.setdefault(b, {})
    return edges


def components(edges):
    """Tarjan's strongly connected components (iterative), in a stable order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("folders", nargs="*", default=["src", "layers", "include"])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("-I", dest="incdirs", action="append", help="an include directory (repeatable)")
    ap.add_argument("--show", action="store_true", help="print the folder graph")
    a = ap.parse_args(argv)
    incdirs = a.incdirs or default_incdirs(a.root)
    unresolved = []
    edges = graph(a.root, a.folders, incdirs, unresolved)
    for f, n, line in unresolved:
        print("%s:%d: %s resolves to no file beside it or in -I %s: its folder is not an -I directory"
              % (f, n, line, " ".join(incdirs)))
    if unresolved:
        return 1
    if a.show:
        for x in sorted(edges):
            for y in sorted(edges[x]):
                print("%s -> %s (%d includes)" % (x, y, len(edges[x][y])))
    cycles = [c for c in components(edges) if len(c) > 1]
    for c in cycles:
        print("include cycle between folders: %s" % ", ".join(c))
        for x in c:
            for y in sorted(edges[x]):
                if y in c:
                    for f, n, line in edges[x][y][:3]:
                        print("  %s -> %s: %s:%d: %s" % (x, y, f, n, line))
                    if len(edges[x][y]) > 3:
                        print("  %s -> %s: ... %d more" % (x, y, len(edges[x][y]) - 3))
    if cycles:
        return 1
    print("check_include_cycles.py: %d folders, %d edges, no cycle" % (
        len(edges), sum(len(v) for v in edges.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
