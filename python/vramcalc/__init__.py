"""vramcalc -- GPU memory estimates for PyTorch models, from Python.

    import vramcalc
    r = vramcalc.estimate(model, input_size=(3, 224, 224), batch=32, optim="adamw",
                          precision="amp-bf16", gpu="rtx4090")
    print(r)                 # the CLI's table, as the library renders it
    r.memory.total           # bytes; every field of `vramcalc -f json` is here (r.to_dict())
    r.max_batch()            # the largest batch that fits the GPU
    r.max_seq()              # a Hugging Face config.json: the longest sequence that fits
    r.to_json()              # byte for byte what `vramcalc MODEL -f json` prints

`model` is an nn.Module (exported with tools/torch2vramcalc.py's exporter; needs torch),
a vramcalc model file path, or a model document (a dict, as json.load gives).  The keyword
arguments are the library's option table (vc_option_at: the CLI's options, by their table
names, `--micro-batches` as micro_batches); each goes to the library's request as the text
the CLI would give it (vc_request_set), so Python takes what the CLI takes and refuses what
it refuses, in the same words (spelt `micro_batches=` for Python).  The JSON, the table and
the CSV are the library's (vc_response_render): nothing is re-computed or re-rendered here.
"""

import inspect
import json
import os
import re
import shutil
import tempfile

from . import _args, _capi, _options, _request
from ._errors import ExportError, UnknownOptionError, VramcalcError, export_error

__all__ = ["estimate", "serve", "max_context", "Result", "VramcalcError", "UnknownOptionError", "ExportError",
           "options", "kinds", "gpus", "export"]
__version__ = "0.1.0"


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def kinds():
    """[(kind, summary)] of every layer kind the library knows (vramcalc --list-layers)."""
    L = _capi.lib()
    out = [(_s(L.vc_kind_name(i)), _s(L.vc_kind_summary(i))) for i in range(L.vc_kind_count())]
    # the loader's scope kind, which the layer registry does not hold (as --list-layers lists it)
    return out + [("Sequential", "a block of layers (a scope), with repeat/frozen/checkpoint")]


def gpus():
    """{name: capacity in bytes} of the GPU presets (vramcalc --list-gpus)."""
    L = _capi.lib()
    out = {}
    for i in range(L.vc_gpu_count()):
        g = L.vc_gpu_get(i).contents
        out[_s(g.name)] = g.capacity
    return out


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

def _torch_exporter():
    """tools/torch2vramcalc.py: the package's copy (pip install) or the checkout's, loaded once
    (as sys.modules["torch2vramcalc"], so that its exception classes are the ones a caller imports)."""
    try:
        from . import _t2v  # copied in by setup.py
        return _t2v
    except ImportError:
        pass
    import importlib.util
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(os.path.dirname(os.path.dirname(here)), "tools", "torch2vramcalc.py")
    if not os.path.exists(path):
        raise ImportError("vramcalc: the torch exporter (torch2vramcalc) is not installed")
    mod = sys.modules.get("torch2vramcalc")
    if mod is not None and os.path.abspath(getattr(mod, "__file__", "") or "") == path:
        return mod
    spec = importlib.util.spec_from_file_location("torch2vramcalc", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules.setdefault("torch2vramcalc", mod)
    return mod


def _input_spec(t2v, spec):
    """One forward argument's input: (3, 224, 224) | "3,224,224" | "ids=128:int64"."""
    if isinstance(spec, (tuple, list)) and spec and all(not isinstance(d, (str, tuple, list)) for d in spec):
        spec = ",".join(str(_args.count("input_size", d)) for d in spec)
    if not isinstance(spec, str):
        raise VramcalcError("input_size=: give the per-sample shape, e.g. (3, 224, 224), not %r" % (spec,),
                            option="input_size")
    _args.text("input_size", spec)
    try:
        nm, shape, dt = t2v.parse_input(spec)
    except ValueError as e:
        raise VramcalcError("input_size=: %s" % e, option="input_size") from None
    for d in shape:
        _args.count("input_size", d)
    return nm, shape, dt


def _input_specs(t2v, input_size):
    """(3, 224, 224) | "3,224,224" | "ids=128:int64" | [spec, spec, ...] -> exporter inputs."""
    if isinstance(input_size, (tuple, list)) and input_size and \
            all(isinstance(s, (str, tuple, list)) for s in input_size):
        return [_input_spec(t2v, s) for s in input_size]
    return [_input_spec(t2v, input_size)]


def _export(module, input_size, options):
    """(document, info) of tools/torch2vramcalc.py's export; its errors as ExportError."""
    t2v = _torch_exporter()
    specs = _input_specs(t2v, input_size)
    if "name" in options:
        _args.text("name", options["name"])
    try:
        return t2v.export(module, specs, **options)
    except VramcalcError:
        raise
    except Exception as e:  # noqa: BLE001  (TraceError, Unmapped, or what the module's forward raised)
        raise export_error(e, "" if isinstance(e, (t2v.TraceError, t2v.Unmapped)) else
                           "cannot export %s: %s: " % (type(module).__name__, type(e).__name__)) from e


def _is_module(model):
    return any(c.__module__.startswith("torch.nn") and c.__name__ == "Module" for c in type(model).__mro__)


class Fields:
    """A group of named numbers (memory, peak, gpu): attributes, and a dict in order."""

    def __init__(self, pairs):
        self._d = dict(pairs)

    def __getattr__(self, k):
        try:
            return self.__dict__["_d"][k]
        except KeyError:
            raise AttributeError(k) from None

    def __getitem__(self, k):
        return self._d[k]

    def __contains__(self, k):
        return k in self._d

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __eq__(self, other):
        return self._d == (other._d if isinstance(other, Fields) else other)

    def get(self, k, default=None):
        return self._d.get(k, default)

    def keys(self):
        return self._d.keys()

    def items(self):
        return self._d.items()

    def to_dict(self):
        return dict(self._d)

    def __repr__(self):
        return "Fields(%s)" % ", ".join("%s=%r" % kv for kv in self._d.items())


def format_bytes(n):
    """report.c's format_bytes: "1.5 GiB", "512 B"."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    v, u = float(n), 0
    while (v >= 1024.0 or v <= -1024.0) and u < 6:
        v /= 1024.0
        u += 1
    return "%d B" % n if u == 0 else "%.1f %s" % (v, units[u])


def _check_export_kwargs(func, kw):
    for k in kw:
        if k not in _options.EXPORT:
            raise _request.suggest(func, k, _options.EXPORT + ("module", "input_size"))


def export(module, input_size, **kw):
    """The model document (a dict) for an nn.Module, as tools/torch2vramcalc.py writes it.
    kw: the exporter's options (name, source, description, concrete_args, flat, allow_unknown)."""
    _check_export_kwargs("export", kw)
    if not _is_module(module):
        raise VramcalcError("module: an nn.Module, not %s.%s" % (type(module).__module__, type(module).__name__),
                            option="module")
    return _export(module, input_size, kw)[0]


class _ModelFile:
    """The model as a file the request reads: the path given, or a scratch file for a dict or an
    nn.Module (its path replaced in messages and the table by what the caller gave)."""

    def __init__(self, model, input_size, export_options):
        self.tmp, self.rename, self.names, self.description, self.file = None, None, {}, "", None
        if model is None:  # counts only (params=): no model
            for k in export_options:
                raise VramcalcError("%s=: an option of the nn.Module exporter; there is no model" % k, option=k)
            self.path = None
            return
        if _is_module(model):
            if input_size is None:
                raise VramcalcError("input_size=: needed to export an nn.Module, e.g. input_size=(3, 224, 224)",
                                    option="input_size")
            opts = dict(export_options)
            opts["name"] = opts.get("name") or type(model).__name__
            doc, info = _export(model, input_size, opts)
            self._write(_torch_exporter().dumps(doc), opts["name"])
            self.names = info.get("module_names") or {}
            self.description = doc.get("description", "")
            return
        for k in export_options:
            raise VramcalcError("%s=: an option of the nn.Module exporter; the model is not an nn.Module" % k,
                                option=k)
        if isinstance(model, dict):
            # a model document, or a Hugging Face config.json as a dict: the library
            # recognises the latter (model_type, no layers) and builds the model
            try:
                text = json.dumps(model, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise VramcalcError("model: the dict is not JSON: %s" % e, option="model") from None
            self._write(text, "<dict>")
        elif isinstance(model, (str, bytes, os.PathLike)):
            self.path = _args.path("model", model)
            self.file = os.fsdecode(self.path)
        else:
            raise VramcalcError("model: an nn.Module, a model file path or a model document, not %s.%s"
                                % (type(model).__module__, type(model).__name__), option="model")

    def _write(self, text, shown):
        self.tmp = tempfile.mkdtemp(prefix="vramcalc-")
        path = os.path.join(self.tmp, "model.json")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        self.path = os.fsencode(path)
        self.rename = (path, shown)

    def __del__(self):
        if getattr(self, "tmp", None):
            shutil.rmtree(self.tmp, ignore_errors=True)


# Python's own names for options (an earlier keyword, or input_size for --input): name -> table name
_ALIASES = {"input_size": "input", "kv_group": "kv_group_size", "kv_residual": "kv_residual_length"}


def _pairs(func, kw):
    """[(table name, value text)] of keyword arguments kw (None: not given, the default)."""
    table = _request.table()
    seen, pairs = {}, []
    for k, v in kw.items():
        name = _ALIASES.get(k, k)
        opt = table.get(name)
        if opt is None or "front_end" in opt.applies:
            why = _options.not_taken(name) if opt is not None else None
            if why:
                raise VramcalcError(why, option=k)
            raise _request.suggest(func, k, tuple(_ALIASES) + (_options.EXPORT if func == "export" else ()))
        if name in seen:
            py = _request.PY_NAME.get(name, name)
            raise VramcalcError("%s=: given twice (also as %s=)" % (py, seen[name] if seen[name] != py else k),
                                option=py)
        seen[name] = k
        if v is None:
            continue
        pairs.append((name, _request.value_text(opt, v, k)))
    return pairs


def _run(func, model, input_size, kw, export_options):
    """(response, model file, the request's pairs)."""
    if input_size is not None and not _is_module(model):
        kw = dict(kw, input_size=input_size)
    pairs = _pairs(func, kw)  # before an export: a bad keyword costs no tracing
    mf = _ModelFile(model, input_size, export_options)
    resp = _request.run(mf.path, pairs, mf.rename)
    plot = resp.plot()
    if plot:  # --plot FILE.svg: the chart, written as the CLI writes it (O_EXCL without force=)
        path, svg = plot
        try:
            with open(path, "w" if kw.get("force") else "x", encoding="utf-8") as fh:
                fh.write(svg)
        except FileExistsError:
            raise VramcalcError("plot= %r exists: give force= to replace it, or another file name" % path,
                                option="plot") from None
        except OSError as e:
            raise VramcalcError("plot=: cannot write %r: %s" % (path, e.strerror), option="plot") from None
    return resp, mf, pairs


class Result:
    """One response of the library: the fields of `vramcalc -f json` as attributes (model, mode,
    batch, precision, optimizer, ..., memory, peak, gpu, layers, ranks, generate, serve,
    max_batch, max_seq, sweep rows: whatever the CLI's JSON has for the same options); str() is
    what the CLI prints (its table unless format= says otherwise)."""

    def __init__(self, func, resp, mf, pairs):
        self._func, self._resp, self._mf, self._pairs = func, resp, mf, pairs
        self._json = resp.render(_request.FORMAT_JSON)
        try:
            self._doc = json.loads(self._json)
        except ValueError:  # a trace: text in every format
            self._doc = None
        self.file = mf.file
        self.module_names = mf.names
        self.description = mf.description
        self.status = resp.status  # the CLI's exit status: 0 fits (or no gpu), 1 does not fit

    def __getattr__(self, k):
        doc = self.__dict__.get("_doc")
        if isinstance(doc, dict):
            if k in doc:
                return _fields(doc[k])
            if isinstance(doc.get("serve"), dict) and k in doc["serve"]:  # serve(): s.blocks
                return doc["serve"][k]
            if k in _OPTIONAL:  # a section the JSON has only when it applies (r.gpu without gpu=)
                return None
        raise AttributeError(k)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._doc if isinstance(self._doc, dict) else ()))

    def module_of(self, path):
        """The qualified module name (layer4.2.relu) of a layer path (layers[7].layers[2].layers[9])
        for a model passed as an nn.Module; the path itself otherwise."""
        return self.module_names.get(path) or path

    @property
    def peak_module(self):
        """The layer at the peak by its module's qualified name (see module_of)."""
        peak = self._doc.get("peak") if isinstance(self._doc, dict) else None
        return self.module_of(peak["layer"]) if peak and peak.get("layer") else ""

    @property
    def fits(self):
        """Whether the estimate fits the GPU given (True without one)."""
        return self.status == 0

    def _again(self, **changes):
        """The same request with options changed (None: removed); its JSON as a dict."""
        # the outputs and runs other than one estimate (a search does not go with them)
        other = ("format", "columns", "plot", "sweep", "trace", "emit_model", "max_context", "serve")
        pairs = [(n, t) for n, t in self._pairs if n not in changes and n not in other]
        pairs += _pairs(self._func, {k: v for k, v in changes.items() if v is not None})
        resp = _request.run(self._mf.path, pairs, self._mf.rename)
        return json.loads(resp.render(_request.FORMAT_JSON))

    def max_batch(self, gpu=None):
        """The largest batch whose total fits `gpu` (default: the estimate's gpu); 0 when
        batch 1 does not fit: the library's --max-batch."""
        if gpu is None and isinstance(self._doc, dict) and "max_batch" in self._doc:
            return self._doc["max_batch"]
        if gpu is None and not any(n == "gpu" for n, _ in self._pairs):
            raise VramcalcError("max_batch(): no GPU (give gpu= to estimate() or to max_batch())", option="gpu")
        return self._again(max_batch=True, max_seq=None, **({"gpu": gpu} if gpu is not None else {}))["max_batch"]

    def max_seq(self, gpu=None):
        """A model read from a Hugging Face config.json: the longest sequence (tokens per sample,
        at this result's batch) whose total fits `gpu` (default: the estimate's gpu); 0 when
        one token does not fit: the library's --max-seq."""
        if gpu is None and isinstance(self._doc, dict) and "max_seq" in self._doc:
            return self._doc["max_seq"]
        if gpu is None and not any(n == "gpu" for n, _ in self._pairs):
            raise VramcalcError("max_seq(): no GPU (give gpu= to estimate() or to max_seq())", option="gpu")
        return self._again(max_seq=True, seq=None, max_batch=None, **({"gpu": gpu} if gpu is not None else {}))["max_seq"]

    def to_dict(self):
        """The JSON output as a dict (keys in the CLI's order)."""
        return json.loads(self._json)

    def to_json(self):
        """What `vramcalc MODEL -f json` prints for the same options, byte for byte."""
        return self._json

    def _render(self, fmt):
        text = self._resp.render(fmt)
        if self._mf.rename:  # the scratch file of a dict or an nn.Module: the table's header names none
            path, _ = self._mf.rename
            text = re.sub(r"[ \n]+\(" + re.escape(path) + r"\)", "", text)
        table = fmt == _request.FORMAT_TABLE or (fmt == _request.FORMAT_DEFAULT and
                                                  dict(self._pairs).get("format", "table") == "table")
        if table and self.module_names and self.peak_module and self._doc.get("memory"):
            # an nn.Module: the library names layers by their path in the exported model (as the CLI on
            # the exported file); the module at the peak by its qualified name (r.module_of maps any other)
            text += "  peak module: %s\n" % self.peak_module
        return text

    def table(self):
        """The CLI's table (80 columns, ASCII, no colour)."""
        return self._render(_request.FORMAT_TABLE)

    def csv(self):
        """What `vramcalc MODEL -f csv` prints."""
        return self._render(_request.FORMAT_CSV)

    def __str__(self):
        return self._render(_request.FORMAT_DEFAULT)

    def __repr__(self):
        d = self._doc if isinstance(self._doc, dict) else {}
        m = d.get("memory") or {}
        return "<vramcalc.Result %s%s>" % (d.get("model") or "?", (": total %s, peak %s" % (
            format_bytes(m["total"]), format_bytes(m["peak_allocated"]))) if m else "")


# the JSON's sections that are there only when they apply: None otherwise (as Result had them)
_OPTIONAL = ("gpu", "layers", "parallel", "tensor_parallel", "expert_parallel", "pipeline", "ranks", "generate")


def _fields(v):
    if isinstance(v, dict):
        return Fields((k, _fields(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_fields(x) for x in v]
    return v


def _estimate(func, model, input_size, options, export_options):
    if _is_module(model):
        _check_export_kwargs(func, {k: v for k, v in export_options.items()})
    else:
        options = dict(options, **export_options)  # refused below, by name
        export_options = {k: options.pop(k) for k in _options.EXPORT if k in options}
    resp, mf, pairs = _run(func, model, input_size, options, export_options)
    return Result(func, resp, mf, pairs)


def estimate(model, input_size=None, **options):
    """What `vramcalc MODEL [options]` reports, as a Result.

    model: an nn.Module (exported on the fly; input_size is then required: (3, 224, 224),
    "ids=128:int64", or a list of those for several forward arguments; the exporter's options
    name, source, description, concrete_args, flat, allow_unknown go with it), a model file
    path (a vramcalc model or a Hugging Face config.json), or a dict of either.  For a file or
    a dict, input_size is the CLI's --input.

    options: the CLI's options by their table names (below; vramcalc.options() has the table).
    A flag takes True or False, a count an int, a size an int or "512MiB", a shape or a list a
    tuple or "3,224,224", a choice its name; None is the default.  Each goes to the library as
    the CLI's text, which checks it and every combination as the CLI does: an unknown keyword
    raises UnknownOptionError (a TypeError) with the closest option, a bad value or combination
    VramcalcError in the CLI's words, the option spelt as Python's (micro_batches=).
    """
    export_options = {k: options.pop(k) for k in list(options) if k in _options.EXPORT}
    return _estimate("estimate", model, input_size, options, export_options)


def serve(model, gpu, **options):
    """vLLM's KV cache on gpu: `vramcalc MODEL --serve --gpu GPU [options]` as a Result, whose
    attributes are also the JSON's "serve" fields (s.blocks, s.concurrency, s.kv_cache, ...)."""
    export_options = {k: options.pop(k) for k in list(options) if k in _options.EXPORT}
    input_size = options.pop("input_size", None)
    return _estimate("serve", model, input_size, dict(options, serve=True, gpu=gpu), export_options)


def max_context(model, gpu, **options):
    """The longest prompt whose generation fits gpu, as `vramcalc MODEL --mode generate
    --max-context --gpu GPU [options]` finds it (N fits, N + 1 does not; 0 when a one-token
    prompt does not fit)."""
    export_options = {k: options.pop(k) for k in list(options) if k in _options.EXPORT}
    input_size = options.pop("input_size", None)
    options.setdefault("mode", "generate")
    r = _estimate("max_context", model, input_size, dict(options, max_context=True, gpu=gpu), export_options)
    return r._doc["max_context"]["prompt"]


def options():
    """The library's option table: {table name: Option} (flag, type, default, choices, help,
    applies), in --help's order; the keyword arguments of estimate()."""
    return dict(_request.table())


def _signature_and_doc():
    """estimate()'s signature and docstring made from the option table (help(vramcalc.estimate))."""
    try:
        table = _request.table()
    except ImportError:  # no library: the plain signature
        return
    kw = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=None)
          for o in table.values() if "front_end" not in o.applies and o.name != "input"]
    base = [inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("input_size", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
    estimate.__signature__ = inspect.Signature(
        base + kw + [inspect.Parameter("export_options", inspect.Parameter.VAR_KEYWORD)])
    sections = {}  # title -> lines, in the order of the sections' first rows (as --help groups them)
    for o in table.values():
        if "front_end" in o.applies or o.help is None:
            continue
        name = "input_size" if o.name == "input" else o.name
        sections.setdefault(o.section, []).append("    %s (%s%s; --%s): %s" % (
            name, o.type, ", default %s" % o.default if o.default else "", o.flag, o.help))
    lines = []
    for title, rows in sections.items():
        lines += ["", "  %s:" % title] + rows
    estimate.__doc__ += "\n    Options (the library's table, by --help's sections):\n" + "\n".join(lines) + "\n"



_signature_and_doc()
