#!/usr/bin/env python3
"""check_exports.py -- the shared library exports the public API and nothing else.

    tools/check_exports.py --header include/vramcalc/vramcalc.h --shared LIB.so --static LIB.a
                           --soversion MAJOR

1. The dynamic symbols `nm -D --defined-only` lists in the shared library are exactly the
   functions include/vramcalc/vramcalc.h declares with VC_EXTERN (the library is compiled
   with hidden visibility: an internal function exported, or a public one left hidden, is
   named), and every function the header declares carries VC_EXTERN.
2. Every global symbol of the static library carries the prefix vc_ (public: vc_name,
   internal: vc__name), so that linking it into a program cannot clash with the program's
   own names.
3. The shared library's SONAME is libvramcalc.so.MAJOR (`objdump -p`).

Needs binutils (nm, objdump); exits 77 (CTest: skipped) without them. CTest public_api_exports
runs it.
"""
import argparse
import re
import shutil
import subprocess
import sys

DECL = re.compile(r'^VC_EXTERN\b[^(;]*?\b(vc_\w+)\s*\(', re.M)
# A declaration at the start of a line without VC_EXTERN: "int vc_foo(" or "const char *vc_foo(".
BARE = re.compile(r'^(?!VC_EXTERN\b|typedef\b|#)[A-Za-z_][^(;=]*?\b(vc_\w+)\s*\(', re.M)


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--static", required=True)
    ap.add_argument("--soversion", required=True)
    a = ap.parse_args()
    if not shutil.which("nm") or not shutil.which("objdump"):
        print("check_exports: nm/objdump not found (binutils): skipped")
        return 77
    bad = 0

    with open(a.header, encoding="utf-8") as f:
        text = f.read()
    declared = set(DECL.findall(text))
    for name in sorted(set(BARE.findall(text))):
        print("%s: %s is declared without VC_EXTERN (hidden in the shared library)" % (a.header, name))
        bad += 1
    exported = set()
    for line in run("nm", "-D", "--defined-only", a.shared).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWwDdBbRrVvi":
            exported.add(parts[2].split("@")[0])
    for name in sorted(exported - declared):
        print("%s: exports %s, which %s does not declare VC_EXTERN" % (a.shared, name, a.header))
        bad += 1
    for name in sorted(declared - exported):
        print("%s: does not export %s, declared VC_EXTERN in %s" % (a.shared, name, a.header))
        bad += 1

    unprefixed = set()
    for line in run("nm", "--defined-only", "-g", a.static).splitlines():
        parts = line.split()
        if len(parts) == 3 and not parts[2].startswith("vc_"):
            unprefixed.add(parts[2])
    for name in sorted(unprefixed):
        print("%s: global symbol %s lacks the vc_ (public) or vc__ (internal) prefix" % (a.static, name))
        bad += 1

    soname = re.search(r'^\s*SONAME\s+(\S+)', run("objdump", "-p", a.shared), re.M)
    want = "libvramcalc.so." + a.soversion
    if not soname or soname.group(1) != want:
        print("%s: SONAME %s, expected %s" % (a.shared, soname.group(1) if soname else "none", want))
        bad += 1

    print("check_exports: %d public functions declared, %d exported, %d problems"
          % (len(declared), len(exported), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
