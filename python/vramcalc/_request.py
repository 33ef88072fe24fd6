"""The library's option table and requests (include/vramcalc/vramcalc.h, src/api/): Python's
keyword arguments are the table's rows, each value goes to vc_request_set by the row's name
as the text the CLI would pass, and what comes back is the library's own JSON and table.

Values are checked here only for what ctypes would change (an int passed as text cannot wrap,
but a bool is not a count, and a NUL would cut a string); ranges, choices and combinations
are the library's, with its messages spelt for Python (vc_error_format_for, VC_SPELL_PYTHON:
max_batch=, mode=generate).
"""

import ctypes
import operator
import re

from . import _capi
from ._errors import UnknownOptionError, VramcalcError

c_char_p, c_int, c_size_t, c_uint = ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint
P, _vp = ctypes.POINTER, ctypes.c_void_p

# vc_option_type (by name: Option.type), vc_spelling, vc_format (vramcalc.h)
TYPE_NAMES = ("count", "real", "size", "choice", "string", "flag", "shape", "list")
COUNT_T, REAL_T, SIZE_T, CHOICE_T, STRING_T, FLAG_T, SHAPE_T, LIST_T = TYPE_NAMES
SPELL_CLI, SPELL_PYTHON = 0, 1
FORMAT_DEFAULT, FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV = range(4)
APPLIES = {"model_file": 0x001, "config": 0x002, "counts": 0x004, "train": 0x008, "infer": 0x010,
           "generate": 0x020, "serve": 0x040, "parallel": 0x080, "front_end": 0x100}


class vc_option_info(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("flag", c_char_p), ("letter", ctypes.c_char), ("arg", c_char_p),
                ("type", c_int), ("section", c_int), ("applies", c_uint), ("default_text", c_char_p),
                ("choices", c_char_p), ("help", c_char_p)]


class vc_render_options(ctypes.Structure):
    _fields_ = [("width", c_int), ("utf8", c_int), ("color", c_int)]


# name -> ctypes struct, for the layout check (python/tests/abi_layout.c)
STRUCTS = {"vc_option_info": vc_option_info, "vc_render_options": vc_render_options}


PROTOS = {
    "vc_option_count": (c_size_t, []),
    "vc_option_at": (P(vc_option_info), [c_size_t]),
    "vc_option_find": (P(vc_option_info), [c_char_p]),
    "vc_option_suggest": (P(vc_option_info), [c_char_p, c_int]),
    "vc_option_help": (c_size_t, [P(vc_option_info), ctypes.c_char_p, c_size_t]),
    "vc_option_help_for": (c_size_t, [P(vc_option_info), c_int, ctypes.c_char_p, c_size_t]),
    "vc_option_section_title_for": (c_size_t, [c_int, c_int, ctypes.c_char_p, c_size_t]),
    "vc_option_section_title": (c_char_p, [c_int]),
    "vc_error_format_for": (None, [P(_capi.vc_error), c_int, ctypes.c_char_p, c_size_t]),
    "vc_request_new": (_vp, []),
    "vc_request_free": (None, [_vp]),
    "vc_request_set": (c_int, [_vp, c_char_p, c_char_p, P(_capi.vc_error)]),
    "vc_request_add_model": (c_int, [_vp, c_char_p, P(_capi.vc_error)]),
    "vc_request_run": (c_int, [_vp, P(_vp), P(_capi.vc_error)]),
    "vc_response_render": (c_int, [_vp, c_int, P(vc_render_options), P(_vp), P(c_size_t), P(_capi.vc_error)]),
    "vc_response_plot_path": (c_char_p, [_vp]),
    "vc_response_plot_svg": (c_int, [_vp, P(_vp), P(c_size_t), P(_capi.vc_error)]),
    "vc_response_status": (c_int, [_vp]),
    "vc_response_free": (None, [_vp]),
    "vc_text_free": (None, [_vp]),
}


def lib():
    """The library with the request API's prototypes set (ImportError without it)."""
    L = _capi.lib()
    if not getattr(L, "_vc_request_protos", False):
        for name, (res, args) in PROTOS.items():
            try:
                fn = getattr(L, name)
            except AttributeError:
                raise ImportError("vramcalc: %s has no %s (a library older than the request API)" % (L._name, name))
            fn.restype, fn.argtypes = res, args
        L._vc_request_protos = True
    return L


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class Option:
    """One row of the library's option table."""

    __slots__ = ("name", "flag", "letter", "arg", "type", "section", "applies", "default", "choices", "help")

    def __init__(self, info):
        L = lib()
        self.name, self.flag = _s(info.name), _s(info.flag)
        self.letter = info.letter.decode() if info.letter and info.letter != b"\0" else None
        self.arg = _s(info.arg)
        self.type = TYPE_NAMES[info.type] if 0 <= info.type < len(TYPE_NAMES) else str(info.type)
        buf = ctypes.create_string_buffer(256)
        L.vc_option_section_title_for(info.section, SPELL_PYTHON, buf, len(buf))
        self.section = _s(buf.value)  # in Python's words, as help is
        self.applies = {k for k, bit in APPLIES.items() if info.applies & bit}
        self.default = _s(info.default_text) or ""
        self.choices = [c.strip() for c in _s(info.choices).split(",") if c.strip()] if info.choices else None
        if info.help:
            buf = ctypes.create_string_buffer(4096)
            L.vc_option_help_for(ctypes.byref(info), SPELL_PYTHON, buf, len(buf))  # options as keywords
            self.help = _s(buf.value)
        else:
            self.help = None  # a hidden alias

    def __repr__(self):
        return "<option %s (--%s, %s)>" % (self.name, self.flag, self.type)


_TABLE = None


def table():
    """{table name: Option} in --help's order."""
    global _TABLE
    if _TABLE is None:
        L = lib()
        _TABLE = {}
        for i in range(L.vc_option_count()):
            o = Option(L.vc_option_at(i).contents)
            _TABLE[o.name] = o
    return _TABLE


def format_error(err, how=SPELL_PYTHON):
    buf = ctypes.create_string_buffer(2048)
    lib().vc_error_format_for(ctypes.byref(err), how, buf, len(buf))
    return _s(buf.value)


def _fail(name, msg):
    raise VramcalcError("%s=: %s" % (name, msg), option=name)


def _nul(name, s):
    if "\0" in s:
        _fail(name, "contains a NUL character: %r" % (s,))
    return s


INT64_MAX = (1 << 63) - 1


def value_text(opt, v, name=None):
    """The text the CLI would pass for keyword argument opt=v (name: the keyword, default the
    table name); None: a flag set (no value)."""
    name = name or opt.name
    if opt.type == FLAG_T:
        if not isinstance(v, bool):
            _fail(name, "expected True or False, got %r" % (v,))
        return None if v else "false"
    if isinstance(v, str):
        return _nul(name, v)
    if opt.type in (COUNT_T, SIZE_T):
        if isinstance(v, bool):
            _fail(name, "expected an integer, got %r" % (v,))
        try:
            n = operator.index(v)
        except TypeError:
            _fail(name, "expected an integer, got %r" % (v,))
        if opt.type == SIZE_T and n > INT64_MAX:  # the library's size parser would say "expected a size"
            _fail(name, "%d is too large (at most %d bytes)" % (n, INT64_MAX))
        return str(n)
    if opt.type == REAL_T:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail(name, "expected a number, got %r" % (v,))
        return repr(float(v)) if isinstance(v, float) else str(v)
    if opt.type in (SHAPE_T, LIST_T):
        if isinstance(v, (tuple, list, range)):
            parts = []
            for d in v:
                if isinstance(d, bool):
                    _fail(name, "expected %s, got %r" % ("integers" if opt.type == SHAPE_T else "names or numbers", v))
                if isinstance(d, str):
                    parts.append(_nul(name, d))
                else:
                    try:
                        parts.append(str(operator.index(d)))
                    except TypeError:
                        _fail(name, "expected %s, got %r" % ("integers" if opt.type == SHAPE_T else "names or numbers", v))
            return ",".join(parts)
        _fail(name, "expected a list or a string, got %r" % (v,))
    if isinstance(v, bool) and opt.choices and "true" in opt.choices:
        return "true" if v else "false"  # ds_overlap_comm: true or false
    if opt.name == "fsdp_reshard_after_forward":  # True, False or N (fully_shard's bool | int)
        if isinstance(v, bool):
            return "true" if v else "false"
        try:
            return str(operator.index(v))
        except TypeError:
            pass
    _fail(name, "expected a string, got %r" % (v,))



def suggest(func, name, extra=()):
    """UnknownOptionError for keyword name: the library's nearest option (vc_option_suggest: within
    an edit distance of 2), else the closest of the table's names and extra by difflib's ratio."""
    L = lib()
    near = L.vc_option_suggest(name.encode("utf-8", "surrogateescape"), SPELL_PYTHON) if "\0" not in name else None
    names = [o.name for o in table().values() if "front_end" not in o.applies] + list(extra)
    return UnknownOptionError(func, name, names, _s(near.contents.name) if near else None)


class Response:
    """An owned vc_response*."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        if getattr(self, "ptr", None):
            lib().vc_response_free(self.ptr)
            self.ptr = None

    def render(self, fmt=FORMAT_DEFAULT, width=80):
        L = lib()
        text, n, err = _vp(), c_size_t(), _capi.vc_error()
        ro = vc_render_options(width, 0, 0)
        if L.vc_response_render(self.ptr, fmt, ctypes.byref(ro), ctypes.byref(text), ctypes.byref(n),
                                ctypes.byref(err)):
            raise _error(err, None)
        try:
            return ctypes.string_at(text, n.value).decode("utf-8", "replace")
        finally:
            L.vc_text_free(text)

    @property
    def status(self):
        return lib().vc_response_status(self.ptr)

    def plot(self):
        """(path, svg text) of --plot, or None."""
        L = lib()
        path = L.vc_response_plot_path(self.ptr)
        if not path:
            return None
        svg, n, err = _vp(), c_size_t(), _capi.vc_error()
        if L.vc_response_plot_svg(self.ptr, ctypes.byref(svg), ctypes.byref(n), ctypes.byref(err)):
            raise _error(err, None)
        try:
            return _s(path), ctypes.string_at(svg, n.value).decode("utf-8", "replace")
        finally:
            L.vc_text_free(svg)


def run(model_path, pairs, rename=None):
    """Runs a request: model_path (bytes, or None for --params) and [(table name, text or None)].
    rename: (temporary path, what to call it) for a model Python wrote to a file."""
    L = lib()
    q = L.vc_request_new()
    if not q:
        raise MemoryError("vc_request_new")
    err = _capi.vc_error()
    try:
        for name, text in pairs:
            if L.vc_request_set(q, name.encode(), None if text is None else text.encode("utf-8", "surrogateescape"),
                                ctypes.byref(err)):
                raise _error(err, rename, name)
        if model_path is not None and L.vc_request_add_model(q, model_path, ctypes.byref(err)):
            raise _error(err, rename)
        resp = _vp()
        if L.vc_request_run(q, ctypes.byref(resp), ctypes.byref(err)):
            raise _error(err, rename)
        return Response(resp)
    finally:
        L.vc_request_free(q)


# table names whose Python keyword differs (input_size: an nn.Module's exporter input, or --input)
PY_NAME = {"input": "input_size"}


def _error(err, rename, option=None):
    """VramcalcError of the library's err, spelt for Python (.option: the keyword argument it is
    about, the first one it names); .cli_message: the same spelt as the CLI prints it (what
    python/tests/test_parity.py compares)."""
    msg, cli = format_error(err), format_error(err, SPELL_CLI)
    for table_name, py in PY_NAME.items():
        msg = re.sub(r"(?<![\w.])%s=" % table_name, py + "=", msg)
    if rename:
        msg, cli = msg.replace(rename[0], rename[1]), cli.replace(rename[0], rename[1])
    msg = msg.replace("vramcalc --help", "help(vramcalc.estimate)")
    if option is None:  # the first option the error marks, its path's ("\x1f" "sp" "\x1f") or its message's
        path, text = err.path.decode("utf-8", "replace"), err.msg.decode("utf-8", "replace")
        marked = text + path if err.line == -1 and not err.file else path + "\n" + text  # -1: path continues msg
        m = re.search("\x1f-?([a-z0-9_]+)[=\x1f]", marked)
        option = m.group(1) if m else None
    e = VramcalcError(msg, err.code, PY_NAME.get(option, option))
    e.cli_message = cli
    return e
