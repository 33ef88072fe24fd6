"""Values Python passes to ctypes itself, checked first: ctypes converts an int modulo 2^64
(a dimension of 2**64 + 1 would be 1) and a str up to its first NUL (a path "a.json\\0x" would
load a.json), so they are refused here with a VramcalcError naming the argument.  (Options go
to the library as text: _request.value_text.)"""

import operator
import os

from ._errors import VramcalcError

INT64_MAX = (1 << 63) - 1


def fail(name, msg):
    """A keyword argument spelt as the library spells it for Python (batch=), the model as model."""
    raise VramcalcError("%s%s: %s" % (name, "" if name in ("model", "module") else "=", msg), option=name)


def count(name, v, lo=1, hi=INT64_MAX):
    """An integer lo..hi (an int or what operator.index takes, a numpy integer; not a bool)."""
    if isinstance(v, bool):
        fail(name, "expected an integer, got %r" % (v,))
    try:
        n = operator.index(v)
    except TypeError:
        fail(name, "expected %s integer, got %r" % ("a positive" if lo == 1 else "an", v))
    if n > hi:
        fail(name, "%d is too large (at most %d)" % (n, hi))
    if n < lo:
        fail(name, "expected %s, got %d" % ("a positive integer" if lo == 1 else "a non-negative integer"
                                            if lo == 0 else "an integer from %d" % lo, n))
    return n


def text(name, v):
    """A str without NUL (ctypes would pass the part before it), as UTF-8 bytes."""
    if not isinstance(v, str):
        fail(name, "expected a string, got %r" % (v,))
    if "\0" in v:
        fail(name, "contains a NUL character: %r" % (v,))
    return v.encode("utf-8", "surrogateescape")


def path(name, v):
    """A file path (str, bytes or os.PathLike) without NUL, as bytes."""
    try:
        p = os.fsencode(v)
    except TypeError:
        fail(name, "expected a path, got %r" % (v,))
    if b"\0" in p:
        fail(name, "the path contains a NUL byte: %r" % (v,))
    if not p:
        fail(name, "the path is empty")
    return p
