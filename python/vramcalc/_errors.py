"""The package's exceptions: every error it raises is a VramcalcError.

    VramcalcError (ValueError)        a bad model, option or value; .option: the keyword
    |                                 argument it is about (None: the model), .code: the
    |                                 library's vc_errcode when the library refused it
    +-- UnknownOptionError (also TypeError)   a keyword argument no option has
    +-- ExportError                   the nn.Module exporter failed; the exporter's own class
                                      (torch2vramcalc's TraceError, Unmapped, or what the
                                      module raised) is a base too, so `except TraceError`
                                      and `except RuntimeError` still catch what they did
"""

import difflib


class VramcalcError(ValueError):
    """A bad model, option or value; str() is a one-line message naming the option (its
    keyword argument) or the file."""

    def __init__(self, msg, code=None, option=None):
        super().__init__(msg)
        self.code = code
        self.option = option


class UnknownOptionError(VramcalcError, TypeError):
    """A keyword argument that is no option of the function (a TypeError, as Python's own
    "unexpected keyword argument" is), with the closest option's name when one is close."""

    def __init__(self, func, name, candidates, suggestion=None):
        close = [suggestion] if suggestion else difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
        msg = "%s() got an unexpected keyword argument %r" % (func, name)
        if close:
            msg += "; did you mean %r?" % close[0]
        super().__init__(msg, option=name)
        self.suggestion = close[0] if close else None


class ExportError(VramcalcError):
    """The exporter (tools/torch2vramcalc.py) could not export the nn.Module."""

    def __init__(self, msg, original=None):
        VramcalcError.__init__(self, msg, option="model")
        if original is not None:
            # the exporter's attributes (Unmapped.items, .what) stay readable
            for k, v in vars(original).items():
                self.__dict__.setdefault(k, v)

    def __str__(self):
        return self.args[0] if self.args else ""


for _c in (VramcalcError, UnknownOptionError, ExportError):
    _c.__module__ = "vramcalc"  # tracebacks name them as the package exports them

_WRAPPERS = {}


def export_error(e, prefix=""):
    """An ExportError for the exception e, of a class that derives from both ExportError and
    type(e) (named as type(e) is), so that handlers of either still catch it."""
    base = type(e)
    cls = _WRAPPERS.get(base)
    if cls is None:
        try:
            cls = type(base.__name__, (ExportError, base), {"__module__": base.__module__,
                                                            "__doc__": base.__doc__})
        except TypeError:  # a base whose instance layout cannot be combined (OSError's)
            cls = ExportError
        _WRAPPERS[base] = cls
    msg = str(e).strip() or base.__name__
    err = cls.__new__(cls)
    ExportError.__init__(err, prefix + msg, e)
    return err
