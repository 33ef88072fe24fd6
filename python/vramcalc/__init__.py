"""vramcalc -- GPU memory estimates for PyTorch models, from Python.

    import vramcalc
    r = vramcalc.estimate(model, input_size=(3, 224, 224), batch=32, optim="adamw",
                          precision="amp-bf16", gpu="rtx4090")
    print(r)                 # the CLI's table (without the bar)
    r.memory.total           # bytes; every field of `vramcalc -f json` is here (r.to_dict())
    r.max_batch()            # the largest batch that fits the GPU
    r.max_seq()              # a Hugging Face config.json: the longest sequence that fits
    r.to_json()              # byte for byte what `vramcalc MODEL -f json` prints

`model` is an nn.Module (exported with tools/torch2vramcalc.py's exporter; needs torch),
a vramcalc model file path, or a model document (a dict, as json.load gives).  The numbers
come from the C library (libvramcalc.so, through ctypes): nothing is re-computed here.
"""

import ctypes
import inspect
import json
import os

from . import _args, _capi, _options
from ._capi import vc_error, vc_gpu_spec, vc_options, vc_result, vc_serve_options, vc_serve_result
from ._errors import ExportError, UnknownOptionError, VramcalcError, export_error

__all__ = ["estimate", "serve", "max_context", "Result", "VramcalcError", "UnknownOptionError", "ExportError",
           "kinds", "gpus", "export"]
__version__ = "0.1.0"


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def _raise(err, what=None, model=None):
    """Raises the library's error err as VramcalcError (what: the keyword argument it is about).
    An error about a model read from a file and that names no file names it, as the CLI's
    die_err does (src/cli/parse.c)."""
    if model is not None and model.origin and not err.file:
        err.file = os.fsencode(model.origin)[:vc_error.file.size - 1]
    buf = ctypes.create_string_buffer(1400)
    _capi.lib().vc_error_format(ctypes.byref(err), buf, len(buf))
    msg = _s(buf.value)
    raise VramcalcError(("%s: %s" % (what, msg)) if what else msg, err.code, what)


def _enum(kind, value, name=None):
    """A closed choice by its name (optim="adamw"); name: the keyword argument (default: kind)."""
    name = name or kind
    L = _capi.lib()
    v = getattr(L, "vc_%s_from_name" % kind)(_args.text(name, value))
    if v < 0:
        raise VramcalcError("%s: unknown value %r" % (name, value), option=name)
    return v


def _size(value, what):
    """A byte count: an int, or a size such as "512MiB" (the CLI's SIZE); None: the default (-1)."""
    if value is None:
        return -1
    if isinstance(value, str):
        out = ctypes.c_int64()
        err = vc_error()
        if _capi.lib().vc_parse_size(_args.text(what, value), ctypes.byref(out), ctypes.byref(err)):
            _raise(err, what)
        return out.value
    return _args.count(what, value, lo=0)


def _check_kwargs(func, kw, taken, exporter):
    """Refuses what is left in kw: a CLI option func does not take (saying what does), an
    exporter option for a model that is not an nn.Module, or a keyword no option has
    (UnknownOptionError, a TypeError, with the closest name)."""
    for k in kw:
        if k in _options.EXPORT and not exporter:
            raise VramcalcError("%s: an option of the nn.Module exporter; the model is not an nn.Module" % k,
                                option=k)
        why = _options.not_taken(func, k)
        if why:
            raise VramcalcError(why, option=k)
        cands = list(taken) + [py for py, _ in _options.CLI.values()] + (list(_options.EXPORT) if exporter else [])
        raise UnknownOptionError(func, k, cands)


def kinds():
    """[(kind, summary)] of every layer kind the library knows (vramcalc --list-layers)."""
    L = _capi.lib()
    out = [(_s(L.vc_kind_name(i)), _s(L.vc_kind_summary(i))) for i in range(L.vc_kind_count())]
    # the loader's scope kind, which the layer registry does not hold (as src/cli/main.c lists it)
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

class _Model:
    """An owned vc_model*."""

    def __init__(self, ptr, origin):
        self.ptr, self.origin = ptr, origin

    def __del__(self):
        if getattr(self, "ptr", None):
            _capi.lib().vc_model_free(self.ptr)
            self.ptr = None

    @property
    def name(self):
        return _s(_capi.lib().vc_model_name(self.ptr))


def _load_text(text, name):
    L = _capi.lib()
    ptr = ctypes.c_void_p()
    err = vc_error()
    data = text.encode("utf-8")  # a length is passed: a NUL inside is the loader's to refuse
    if L.vc_model_load_string(data, len(data), _args.text("name", name), ctypes.byref(ptr), ctypes.byref(err)):
        _raise(err)
    return _Model(ptr, None)


def _load_path(path):
    L = _capi.lib()
    ptr = ctypes.c_void_p()
    err = vc_error()
    p = _args.path("model", path)
    if L.vc_model_load_file(p, ctypes.byref(ptr), ctypes.byref(err)):
        _raise(err)
    return _Model(ptr, os.fsdecode(p))


def _shape_list(input_size):
    """input_size for a file or dict model: (3, 224, 224) or "3,224,224" (the CLI's --input)."""
    if isinstance(input_size, str):
        _args.text("input_size", input_size)
        parts = [p.strip() for p in input_size.replace("x", ",").split(",") if p.strip()]
        if not all(p.isdigit() and p.isascii() for p in parts):
            raise VramcalcError("input_size: bad shape %r (want e.g. 3,224,224)" % input_size, option="input_size")
        parts = [int(p) for p in parts]
    elif isinstance(input_size, (tuple, list)):
        parts = list(input_size)
    else:
        raise VramcalcError("input_size: expected a shape such as (3, 224, 224) or \"3,224,224\", got %r"
                            % (input_size,), option="input_size")
    return [_args.count("input_size", d) for d in parts]


def _set_input(model, input_size):
    dims = _shape_list(input_size)
    if not dims or len(dims) > _capi.VC_MAX_DIMS:
        raise VramcalcError("input_size: %d dimensions (1 to %d)" % (len(dims), _capi.VC_MAX_DIMS),
                            option="input_size")
    arr = (ctypes.c_int64 * len(dims))(*dims)
    err = vc_error()
    if _capi.lib().vc_model_set_input_shape(model.ptr, arr, len(dims), ctypes.byref(err)):
        _raise(err, "input_size")


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
        raise VramcalcError("input_size: give the per-sample shape, e.g. (3, 224, 224), not %r" % (spec,),
                            option="input_size")
    _args.text("input_size", spec)
    try:
        nm, shape, dt = t2v.parse_input(spec)
    except ValueError as e:
        raise VramcalcError("input_size: %s" % e, option="input_size") from None
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


def export(module, input_size, **kw):
    """The model document (a dict) for an nn.Module, as tools/torch2vramcalc.py writes it.
    kw: the exporter's options (name, source, description, concrete_args, flat, allow_unknown)."""
    _check_kwargs("export", {k: v for k, v in kw.items() if k not in _options.EXPORT}, ("module", "input_size"),
                  True)
    if not _is_module(module):
        raise VramcalcError("module: an nn.Module, not %s.%s" % (type(module).__module__, type(module).__name__),
                            option="module")
    return _export(module, input_size, kw)[0]


def _is_module(model):
    return any(c.__module__.startswith("torch.nn") and c.__name__ == "Module" for c in type(model).__mro__)


def _model_of(model, input_size, export_options):
    """(vc model, whether input_size was used, {instance path: module name} or None).
    export_options: the exporter's (refused for a model that is not an nn.Module)."""
    if _is_module(model):
        if input_size is None:
            raise VramcalcError("input_size: needed to export an nn.Module, e.g. input_size=(3, 224, 224)",
                                option="input_size")
        opts = dict(export_options)
        opts["name"] = opts.get("name") or type(model).__name__
        doc, info = _export(model, input_size, opts)
        t2v = _torch_exporter()
        m = _load_text(t2v.dumps(doc), opts["name"])
        m.description = doc.get("description", "")
        return m, True, info.get("module_names")
    for k in export_options:
        raise VramcalcError("%s: an option of the nn.Module exporter; the model is not an nn.Module" % k, option=k)
    if isinstance(model, (str, bytes, os.PathLike)):
        return _load_path(model), False, None
    if isinstance(model, dict):
        # a model document, or a Hugging Face config.json as a dict: the library
        # recognises the latter (model_type, no layers) and builds the model
        try:
            text = json.dumps(model, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise VramcalcError("model: the dict is not JSON: %s" % e, option="model") from None
        return _load_text(text, "<dict>"), False, None
    raise VramcalcError("model: an nn.Module, a model file path or a model document, not %s.%s"
                        % (type(model).__module__, type(model).__name__), option="model")


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

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

    def to_dict(self):
        return dict(self._d)

    def __repr__(self):
        return "Fields(%s)" % ", ".join("%s=%r" % kv for kv in self._d.items())


_MEMORY = ("weights", "gradients", "optimizer_states", "activations", "workspace", "peak_allocated",
           "reserved", "cuda_context", "total")
_PEAK = ("weights", "gradients", "optimizer_states", "activations", "temporaries", "workspace")


def _json_str(s):
    """report.c's json_str: quote and backslash escaped, control bytes as \\u00XX, the rest raw."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_bytes(n):
    """report.c's format_bytes: "1.5 GiB", "512 B"."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    v, u = float(n), 0
    while (v >= 1024.0 or v <= -1024.0) and u < 6:
        v /= 1024.0
        u += 1
    return "%d B" % n if u == 0 else "%.1f %s" % (v, units[u])


# report.c's layout at the CLI's width on a pipe (src/cli/text.c, VC_TEXT_WIDTH)
_WIDTH = 80
_MAX_BATCH_LIMIT = 1 << 40  # vramcalc.h VC_MAX_BATCH_LIMIT


class _Line:
    """text.c's text_line: items that wrap between them, further lines indented."""

    def __init__(self, indent, first, width=_WIDTH):
        self.width, self.indent, self.out, self.col = width, indent, [first], len(first)

    def item(self, sep, item):
        need = len(sep) + len(item)
        if self.col + need > self.width and self.col > self.indent:
            self.out.append(sep.rstrip(" ") + "\n" + " " * self.indent + item)
            self.col = self.indent + len(item)
        else:
            self.out.append(sep + item)
            self.col += need

    def text(self):
        return "".join(self.out)


# report.c VC_REPORT_LEGEND
_LEGEND = ("peak allocated is what torch.cuda.max_memory_allocated() reports; reserved, max_memory_reserved() "
           "(the caching allocator's segments); total adds the CUDA context: what nvidia-smi shows")


def _wrap_words(first, text, indent):
    line = _Line(indent, first)
    for i, w in enumerate(text.split()):
        line.item("" if i == 0 and not first else " ", w)
    return line.text()


def _fit(s, w, right=False, middle=False, pad=True):
    """text.c's text_fit on a pipe (an ASCII ellipsis)."""
    if len(s) <= w:
        return s.rjust(w) if right else s.ljust(w) if pad else s
    if w <= 3:
        return s[:w]
    keep = w - 3
    if middle:
        head = keep // 3
        return s[:head] + "..." + s[len(s) - (keep - head):]
    return s[:keep] + "..."


def _layer_widths(rows, indent):
    """report.c's layer_widths: natural widths; then name gives way to 24, output and kind to 12, name to 16."""
    c = [5, 4, 6, 10, 5]
    for r in rows:
        for k in range(5):
            c[k] = max(c[k], len(r[k]))
    over = indent + sum(c) + 4 - _WIDTH
    for k, least in ((0, 24), (2, 12), (1, 12), (0, 16)):
        if over <= 0:
            break
        d = min(max(c[k] - least, 0), over)
        c[k] -= d
        over -= d
    return c


class Result:
    """One estimate: the fields of `vramcalc -f json` as attributes (model, mode, batch,
    precision, optimizer, optimizer_impl, accumulate, attention, torch_version, attention_kernel, parameters,
    trainable_parameters, memory, peak, gpu, layers)."""

    def __init__(self, model, opts, res, gpu, per_layer, file, max_batch=None):
        L = _capi.lib()
        self._model, self._opts, self._gpu_spec = model, opts, gpu
        self.file = file
        self.model = model.name if model is not None else ""
        self.mode = _s(L.vc_mode_name(opts.mode))
        self.batch = opts.batch
        self.precision = _s(L.vc_precision_name(opts.precision))
        self.optimizer = _s(L.vc_optim_name(opts.optim))
        self.optimizer_impl = _s(L.vc_optim_impl_name(opts.optim_impl))
        self.accumulate = opts.accumulate
        self.attention = _s(L.vc_attention_name(opts.attention))
        buf = ctypes.create_string_buffer(16)
        self.torch_version = _s(L.vc_torch_name(opts.torch_version, buf, 16))
        self.attention_kernel = _s(res.attention)
        self.parallel = None
        if opts.parallel:
            self.parallel = Fields([("layout", _s(L.vc_parallel_name(opts.parallel))), ("gpus", opts.gpus)])
        self.tensor_parallel = None
        if opts.tp > 1:
            self.tensor_parallel = Fields([("tp", opts.tp), ("sp", bool(opts.sp))])
        self.generate = None
        if opts.mode == L.vc_mode_from_name(b"generate"):
            g = res.generate
            self.generate = Fields([("prompt", opts.prompt), ("new_tokens", opts.new_tokens),
                                    ("cache", _s(L.vc_cache_name(opts.cache)))] +
                                   [(k, getattr(g, k)) for k in ("prefill_peak", "decode_peak", "decode_step",
                                                                 "kv_cache", "kv_tokens")])
        self.pipeline = None
        self.ranks = None
        if opts.pp > 1:  # --pp: one entry per kind of rank (report.c's json_ranks)
            self.pipeline = Fields([("stages", opts.pp), ("micro_batches", opts.micro_batches or opts.pp),
                                    ("schedule", "interleaved" if opts.pp_virtual > 1 else "1f1b")] +
                                   ([("virtual_stages", opts.pp_virtual)] if opts.pp_virtual > 1 else []))
            self.ranks = []
            for i in range(res.nranks):
                k = res.ranks[i]
                self.ranks.append({"kind": _s(k.kind), "stages": [k.stage_first, k.stage_last],
                                   "ranks": [k.rank_first, k.rank_last], "stage": k.stage, "layers": k.layers,
                                   "in_flight": k.in_flight, "parameters": k.parameters,
                                   "memory": Fields((n, getattr(k.memory, n)) for n in _MEMORY +
                                                    ("optimizer_states_paged",)
                                                    if n in _MEMORY or getattr(k.memory, n)),
                                   "peak": Fields([("phase", _s(L.vc_phase_name(k.peak.phase))),
                                                   ("layer", _s(k.peak.layer)), ("kind", _s(k.peak.kind))] +
                                                  [(n, getattr(k.peak, n)) for n in _PEAK])})
        self.parameters = res.parameters
        self.trainable_parameters = res.trainable_parameters
        # "optimizer_states_paged" only when there is any (bitsandbytes' paged optimizers), as the CLI prints it
        self.memory = Fields((k, getattr(res.memory, k)) for k in _MEMORY + ("optimizer_states_paged",)
                             if k in _MEMORY or getattr(res.memory, k))
        pk = res.peak
        self.peak = Fields([("phase", _s(L.vc_phase_name(pk.phase))), ("layer", _s(pk.layer)),
                            ("kind", _s(pk.kind))] + [(k, getattr(pk, k)) for k in _PEAK])
        self.gpu = None
        if gpu is not None:
            self.gpu = Fields([("name", _s(gpu.name)), ("capacity", gpu.capacity),
                               ("free", gpu.capacity - res.memory.total),
                               ("fits", res.memory.total <= gpu.capacity)])
        self._max_batch = max_batch
        self._max_seq = None  # (tokens, limited) when estimate(max_seq=True)
        self.layers = None
        if per_layer:
            self.layers = []
            for i in range(res.nlayers):
                li = res.layers[i]
                self.layers.append({"name": _s(li.name), "kind": _s(li.kind),
                                    "output_shape": [li.output_shape[d] for d in range(li.ndim)],
                                    "parameters": li.parameters, "activations": li.activations})

    module_names = {}
    description = ""

    def module_of(self, path):
        """The qualified module name (layer4.2.relu) of a layer path (layers[7].layers[2].layers[9])
        for a model passed as an nn.Module; the path itself otherwise."""
        return self.module_names.get(path) or path

    @property
    def peak_module(self):
        """The layer at the peak by its module's qualified name (see module_of)."""
        return self.module_of(self.peak.layer) if self.peak.layer else ""

    @property
    def fits(self):
        """Whether the estimate fits the GPU given (True without one)."""
        return self.gpu is None or self.gpu.fits

    def max_batch(self, gpu=None):
        """The largest batch whose total fits `gpu` (default: the estimate's gpu); 0 when
        batch 1 does not fit.  The library's search (vramcalc --max-batch)."""
        spec = self._gpu_spec if gpu is None else _gpu(gpu)
        if spec is None:
            raise VramcalcError("max_batch: no GPU (estimate(..., gpu=...) or max_batch(gpu=...))")
        if gpu is None and self._max_batch is not None:
            return self._max_batch
        if self._model is None:
            raise VramcalcError("max_batch: this result has no model")
        L = _capi.lib()
        opts = vc_options.from_buffer_copy(self._opts)
        if gpu is not None:
            _use_gpu(opts, spec)
        e = ctypes.c_void_p()
        err = vc_error()
        if L.vc_estimator_new(self._model.ptr, ctypes.byref(opts), _capi.VC_EST_NO_LAYERS, ctypes.byref(e),
                              ctypes.byref(err)):
            _raise(err, model=self._model)
        try:
            mb = ctypes.c_int64()
            if L.vc_estimator_max_batch(e, spec.capacity, ctypes.byref(mb), None, ctypes.byref(err)):
                _raise(err, model=self._model)
        finally:
            L.vc_estimator_free(e)
        if gpu is None:
            self._max_batch = mb.value
        return mb.value

    def max_seq(self, gpu=None):
        """A model read from a Hugging Face config.json: the longest sequence (tokens per
        sample, at this result's batch) whose total fits `gpu` (default: the estimate's gpu);
        0 when one token does not fit.  The library's search (vramcalc --max-seq)."""
        spec = self._gpu_spec if gpu is None else _gpu(gpu)
        if spec is None:
            raise VramcalcError("max_seq: no GPU (estimate(..., gpu=...) or max_seq(gpu=...))")
        if gpu is None and self._max_seq is not None:
            return self._max_seq[0]
        if self._model is None:
            raise VramcalcError("max_seq: this result has no model")
        return _max_seq(self._model, self._opts, spec, gpu is not None)[0]

    def to_dict(self):
        """The JSON output as a dict (keys in the CLI's order)."""
        d = {"schema_version": 1, "model": self.model, "mode": self.mode, "batch": self.batch,
             "precision": self.precision, "optimizer": self.optimizer, "optimizer_impl": self.optimizer_impl,
             "accumulate": self.accumulate, "attention": self.attention, "torch_version": self.torch_version,
             "attention_kernel": self.attention_kernel}
        if self.parallel is not None:
            d["parallel"] = self.parallel.to_dict()
        if self.tensor_parallel is not None:
            d["tensor_parallel"] = self.tensor_parallel.to_dict()
        d.update({"parameters": self.parameters, "trainable_parameters": self.trainable_parameters,
                  "memory": self.memory.to_dict(), "peak": self.peak.to_dict()})
        if self.pipeline is not None:
            d["pipeline"] = self.pipeline.to_dict()
            d["ranks"] = [dict(r, memory=r["memory"].to_dict(), peak=r["peak"].to_dict()) for r in self.ranks]
        if self.generate is not None:
            d["generate"] = self.generate.to_dict()
        if self.gpu is not None:
            d["gpu"] = self.gpu.to_dict()
        if self._max_batch is not None and self._report_max_batch:
            d["max_batch"] = self._max_batch
        if self._max_seq is not None:
            d["max_seq"], d["max_seq_limited"] = self._max_seq
        if self.layers is not None:
            d["layers"] = [dict(l) for l in self.layers]
        return d

    _report_max_batch = False

    def to_json(self):
        """What `vramcalc MODEL -f json` prints for the same options (report.c's json_body)."""
        ind = "  "
        m, p = self.memory, self.peak
        out = ["{\n"]
        out.append('%s"schema_version": 1,\n%s"model": %s, "mode": "%s", "batch": %d, "precision": "%s",\n'
                   % (ind, ind, _json_str(self.model), self.mode, self.batch, self.precision))
        out.append('%s"optimizer": "%s", "optimizer_impl": "%s", "accumulate": %d, "attention": "%s",\n'
                   % (ind, self.optimizer, self.optimizer_impl, self.accumulate, self.attention))
        out.append('%s"torch_version": "%s", "attention_kernel": %s,\n'
                   % (ind, self.torch_version, _json_str(self.attention_kernel)))
        if self.parallel is not None:
            out.append('%s"parallel": {"layout": "%s", "gpus": %d},\n' % (ind, self.parallel.layout, self.parallel.gpus))
        if self.tensor_parallel is not None:
            out.append('%s"tensor_parallel": {"tp": %d, "sp": %s},\n' % (
                ind, self.tensor_parallel.tp, "true" if self.tensor_parallel.sp else "false"))
        out.append('%s"parameters": %d, "trainable_parameters": %d,\n'
                   % (ind, self.parameters, self.trainable_parameters))
        out.append('%s"memory": {%s},\n' % (ind, ", ".join('"%s": %d' % (k, v) for k, v in m.to_dict().items())))
        out.append('%s"peak": {"phase": "%s", "layer": %s, "kind": %s, %s}'
                   % (ind, p.phase, _json_str(p.layer), _json_str(p.kind),
                      ", ".join('"%s": %d' % (k, p[k]) for k in _PEAK)))
        if self.pipeline is not None:
            q = self.pipeline
            sched = '"%s"' % q.schedule + (', "virtual_stages": %d' % q.virtual_stages if q.schedule != "1f1b" else "")
            out.append(',\n%s"pipeline": {"stages": %d, "micro_batches": %d, "schedule": %s},\n%s"ranks": ['
                       % (ind, q.stages, q.micro_batches, sched, ind))
            for i, r in enumerate(self.ranks):
                rp = r["peak"]
                out.append('%s\n%s  {"kind": "%s", "stages": [%d, %d], "ranks": [%d, %d], "stage": %d, "layers": %d, '
                           '"in_flight": %d, "parameters": %d,\n%s   "memory": {%s},\n%s   "peak": {"phase": "%s", '
                           '"layer": %s, "kind": %s, %s}}'
                           % ("," if i else "", ind, r["kind"], r["stages"][0], r["stages"][1], r["ranks"][0],
                              r["ranks"][1], r["stage"], r["layers"], r["in_flight"], r["parameters"], ind,
                              ", ".join('"%s": %d' % (k, v) for k, v in r["memory"].to_dict().items()), ind,
                              rp.phase, _json_str(rp.layer), _json_str(rp.kind),
                              ", ".join('"%s": %d' % (k, rp[k]) for k in _PEAK)))
            out.append("\n%s]" % ind)
        if self.generate is not None:
            g = self.generate
            out.append(',\n%s"generate": {"prompt": %d, "new_tokens": %d, "cache": "%s", %s}'
                       % (ind, g.prompt, g.new_tokens, g.cache,
                          ", ".join('"%s": %d' % (k, g[k]) for k in ("prefill_peak", "decode_peak", "decode_step",
                                                                     "kv_cache", "kv_tokens"))))
        if self.gpu is not None:
            g = self.gpu
            out.append(',\n%s"gpu": {"name": %s, "capacity": %d, "free": %d, "fits": %s}'
                       % (ind, _json_str(g.name), g.capacity, g.free, "true" if g.fits else "false"))
        if self._max_batch is not None and self._report_max_batch:
            out.append(',\n%s"max_batch": %d' % (ind, self._max_batch))
        if self._max_seq is not None:
            out.append(',\n%s"max_seq": %d, "max_seq_limited": %s'
                       % (ind, self._max_seq[0], "true" if self._max_seq[1] else "false"))
        if self.layers is not None:
            out.append(',\n%s"layers": [' % ind)
            for i, l in enumerate(self.layers):
                out.append('%s\n%s  {"name": %s, "kind": %s, "output_shape": [%s], "parameters": %d, '
                           '"activations": %d}' % ("," if i else "", ind, _json_str(l["name"]),
                                                   _json_str(l["kind"]),
                                                   ", ".join(str(d) for d in l["output_shape"]),
                                                   l["parameters"], l["activations"]))
            out.append("\n%s]" % ind)
        out.append("\n}\n")
        return "".join(out)

    def table(self):
        """The CLI's table (report.c's report_table) on a pipe (80 columns) up to the memory bar, which
        is left out; the max batch line, which the CLI prints after the bar, follows the attention kernel."""
        m, p = self.memory, self.peak
        o = self._opts
        lines = []
        if self.file:
            lines.append(_wrap_words("", "%s (%s)" % (self.model, self.file) if self.model else self.file, 2))
        else:
            lines.append(_wrap_words("", self.model, 2))
        h = _Line(2, self.mode)
        h.item(", ", "batch %d" % self.batch)
        h.item(", ", self.precision)
        if self.parallel is not None:
            h.item(", ", "%s on %d GPU%s (per GPU)" % (self.parallel.layout, self.parallel.gpus,
                                                      "" if self.parallel.gpus == 1 else "s"))
        if self.tensor_parallel is not None:
            h.item(", ", "tp %d%s%s" % (self.tensor_parallel.tp, " + sp" if self.tensor_parallel.sp else "",
                                       "" if self.parallel is not None or self.pipeline is not None else " (per GPU)"))
        if self.pipeline is not None:
            sched = "1F1B" if self.pipeline.schedule == "1f1b" else \
                "interleaved 1F1B, %d chunks per rank" % self.pipeline.virtual_stages
            h.item(", ", "pipeline %d stages x %d micro-batches (%s; per GPU)" % (self.pipeline.stages,
                                                                                self.pipeline.micro_batches, sched))
        if self.mode == "train":
            h.item(", ", "%s (%s)" % (self.optimizer, self.optimizer_impl) if self.optimizer != "none"
                   else self.optimizer)
            if self.accumulate > 1:
                h.item(", ", "accumulate %d" % self.accumulate)
        h.item(", ", "attention %s" % self.attention)
        lines.append(h.text())
        lines.append("parameters %d (trainable %d)" % (self.parameters, self.trainable_parameters))
        lines.append("")
        lines.append("  %-18s %12s  %18s" % ("component", "size", "bytes"))

        def row(label, v, note=None):
            head = "  %-18s %12s  %18d" % (label, format_bytes(v), v)
            if note and 53 + 2 + len(note) <= _WIDTH:
                lines.append(head + "  " + note)
            elif note:
                lines.append(head + "\n    " + _fit(note, _WIDTH - 4, middle=True, pad=False))
            else:
                lines.append(head)
        row("weights", m.weights)
        row("gradients", m.gradients)
        row("optimizer states", m.optimizer_states)
        row("activations", m.activations, "(held at end of forward)" if self.mode == "train" else "(largest live set)")
        row("workspace", m.workspace, "(cuBLAS)")
        if p.layer:
            note = "(%s, %s %s)" % (p.phase, self.module_of(p.layer), p.kind)
        else:
            note = "(%s%s%s)" % (p.phase, ", " if p.kind else "", p.kind)
        row("peak allocated", m.peak_allocated, note)
        if self.generate is not None and self.generate.kv_tokens:
            g = self.generate
            row("  prefill peak", g.prefill_peak, "(the prompt's forward, logits of its last token)")
            if g.decode_step:
                requant = g.cache == "quantized" and g.decode_step % max(o.kv_residual, 2) == 0
                row("  decode peak", g.decode_peak, "(step %d of %d: %s)" % (
                    g.decode_step, g.new_tokens - 1, "the cache is requantized" if requant else "the cache is longest"))
            row("  KV cache", g.kv_cache, "(%d tokens per sequence, all layers%s)"
                % (g.kv_tokens, ", in host memory" if g.cache == "offloaded" else ""))
        row("reserved", m.reserved, "(caching allocator model)")
        row("cuda context", m.cuda_context, "(--context)" if o.context >= 0 else "(estimate, not measured)")
        row("total", m.total, "(reserved + context)")
        if "optimizer_states_paged" in m.to_dict():
            row("paged states", m.optimizer_states_paged, "(cudaMallocManaged: nvidia-smi only, not in total)")
        if self.ranks:  # report.c's ranks_table
            lines.append("")
            lines.append("  per rank      stages  ranks          layers  in flight  peak allocated       total")
            marked = False
            for r in self.ranks:
                rm = r["memory"]
                busiest = not marked and rm.total == m.total and rm.peak_allocated == m.peak_allocated
                marked = marked or busiest
                rng = ["%d" % a if a == b else "%d-%d" % (a, b) for a, b in (r["stages"], r["ranks"])]
                lines.append("  %-12s %7s  %-13s %7d  %9d  %14s  %10s%s" % (
                    r["kind"], rng[0], rng[1], r["layers"], r["in_flight"], format_bytes(rm.peak_allocated),
                    format_bytes(rm.total), "  (busiest)" if busiest else ""))
        parts = [("weights", p.weights), ("gradients", p.gradients), ("states", p.optimizer_states),
                 ("activations", p.activations), ("temporaries", p.temporaries), ("workspace", p.workspace)]
        lines.append("")
        peak = _Line(15, "  at the peak:")
        for n, v in parts:
            if v:
                peak.item(" ", "%s %s;" % (n, format_bytes(v)))
        lines.append(peak.text())
        if self.attention_kernel:
            lines.append(_wrap_words("  attention kernel:", self.attention_kernel, 4))
        lines.append(_wrap_words("  legend:", _LEGEND, 4))
        if self._max_batch is not None:
            lines.append("")
            mb = _Line(4, "  max batch on %s: %d" % (self.gpu.name, self._max_batch))
            if self._max_batch == 0:
                mb.item(" ", "(batch 1 does not fit)")
            elif self._max_batch >= _MAX_BATCH_LIMIT:
                mb.item(" ", "(the search's limit, 2^40: larger batches were not tried)")
            elif self.batch == self._max_batch:
                spec = self._gpu_spec
                if self.gpu.free < self.gpu.capacity // 20:
                    mb.item(" ", "(leaves %s of the card free: keep headroom with --gpu %s:90%%)" % (
                        format_bytes(self.gpu.free), _s(spec.preset.contents.name)[:60] if spec.preset else "SIZE"))
                else:
                    mb.item(" ", "(leaves %s of the card free)" % format_bytes(self.gpu.free))
            lines.append(mb.text())
        if self._max_seq is not None:
            n, limited = self._max_seq
            lines.append("")
            lines.append("  max seq on %s, batch %d: %d tokens%s" % (
                self.gpu.name, self.batch, n, " (1 token does not fit)" if n == 0 else
                " (the longest the model takes: one more is refused, not for memory)" if limited else ""))
        if self.layers:
            lines.append("")
            rows = [(self.module_of(l["name"]), l["kind"], "[" + ", ".join(str(d) for d in l["output_shape"]) + "]",
                     "%d" % l["parameters"], format_bytes(l["activations"])) for l in self.layers]
            c = _layer_widths(rows, 2)
            for r in [("layer", "kind", "output", "parameters", "saved")] + rows:
                lines.append("  " + " ".join((_fit(r[0], c[0], middle=True), _fit(r[1], c[1]), _fit(r[2], c[2]),
                                              _fit(r[3], c[3], right=True), _fit(r[4], c[4], right=True))))
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.table()

    def __repr__(self):
        return "<vramcalc.Result %s: total %s, peak %s%s>" % (
            self.model or "?", format_bytes(self.memory.total), format_bytes(self.memory.peak_allocated),
            (", fits %s" % self.gpu.name) if self.gpu is not None and self.gpu.fits else
            (", does not fit %s" % self.gpu.name) if self.gpu is not None else "")


def _gpu(spec):
    out = vc_gpu_spec()
    err = vc_error()
    if _capi.lib().vc_gpu_parse(_args.text("gpu", spec), ctypes.byref(out), ctypes.byref(err)):
        raise VramcalcError("gpu: %s" % _s(err.msg), err.code, "gpu")
    return out


def _use_gpu(opts, spec):
    """What the CLI's --gpu sets in the options: the Hopper workspace, the device (src/scratch.c)."""
    if spec.preset:
        opts.device = spec.preset
        if spec.preset.contents.hopper:
            opts.hopper = 1


def _max_seq(model, opts, spec, hopper):
    """(tokens, limited): vc_model_max_seq for model (a config.json) on spec."""
    L = _capi.lib()
    opts = vc_options.from_buffer_copy(opts)
    if hopper:
        _use_gpu(opts, spec)
    n, limited, err = ctypes.c_int64(), ctypes.c_int(), vc_error()
    if L.vc_model_max_seq(model.ptr, ctypes.byref(opts), spec.capacity, ctypes.byref(n), ctypes.byref(limited),
                          None, ctypes.byref(err)):
        _raise(err, model=model)
    return n.value, bool(limited.value)


def _set_seq(model, seq):
    err = vc_error()
    if _capi.lib().vc_model_set_seq(model.ptr, seq, ctypes.byref(err)):
        _raise(err, model=model)


def _set_loss(model, loss):
    L = _capi.lib()
    v = L.vc_loss_impl_from_name(_args.text("loss", loss))
    if v < 0:
        raise VramcalcError("loss: unknown value %r (choose hf, liger, cce)" % (loss,), option="loss")
    err = vc_error()
    if L.vc_model_set_loss(model.ptr, v, ctypes.byref(err)):
        _raise(err, model=model)


def _torch_release(L, torch):
    v = L.vc_torch_from_name(_args.text("torch", torch))
    if v < 0:
        raise VramcalcError("torch: unsupported PyTorch release %r (a release from 2.0 to 2.15, e.g. \"2.5\")"
                            % (torch,), option="torch")
    return v


def _alias(kw, old, value):
    """value, or the earlier keyword old's from kw (kv_group for kv_group_size); both: refused."""
    if old not in kw:
        return value
    new = _options.ALIASES[old]
    if value is not None:
        raise VramcalcError("%s: given twice (also as %s)" % (new, old), option=new)
    return kw.pop(old)


def estimate(model, input_size=None, batch=None, optim="adam", precision="fp32", gpu=None, mode="train",
             optim_impl=None, accumulate=1, attention="auto", workspace=None, context=None,
             torch=None, parallel=None, gpus=1, per_layer=False, max_batch=False, seq=None, max_seq=False,
             prompt=None, new_tokens=None, cache=None, loss=None, tp=1, sp=False, pp=1, micro_batches=None,
             pp_virtual=None, *, kv_bits=None, kv_group_size=None, kv_residual_length=None, ep=1, offload=None,
             offload_device=None, nvme_gds=False, fsdp_param_dtype=None, fsdp_reduce_dtype=None,
             fsdp_use_orig_params=False, fsdp_reshard_after_forward=None, fsdp_replicate=None,
             gradient_as_bucket_view=False, parameters_as_bucket_view=False, ds_overlap_comm=None, **export_options):
    """Estimates one training step (mode="infer": a forward pass) as `vramcalc` does.

    model: an nn.Module (exported on the fly; input_size is then required: (3, 224, 224),
    "ids=128:int64", or a list of those for several forward arguments), a model file path,
    or a model document (dict).  For a file or dict, input_size replaces the single
    input's shape (the CLI's --input).  Other arguments are the CLI's options, by the
    option's name with - as _ (--micro-batches: micro_batches):
    optim (sgd, momentum, adam, adamw, none, lion, adam8bit, adamw8bit, adafactor), optim_impl
    (default: the class's own, foreach; forloop for adafactor), precision (fp32, fp16, bf16,
    amp-fp16, amp-bf16, mixed-fp16, mixed-bf16), mode, attention, accumulate, workspace
    and context (bytes or "512MiB"), torch (the PyTorch release followed, "2.5"), parallel
    ("ddp") and gpus (the ranks; the estimate is per GPU), tp and sp (Megatron tensor and sequence parallelism), pp (pipeline stages, Megatron's 1F1B; batch is
    then the micro-batch size) and micro_batches (per step, default pp; r.ranks: one entry per kind of rank), pp_virtual
    (model chunks per rank: Megatron's interleaved schedule, --pp-virtual), prompt, new_tokens and cache ("dynamic",
    "static", "offloaded", "quantized": QuantizedCache with kv_bits, kv_group_size, kv_residual_length) for mode="generate" (r.generate: the prefill and decode peaks, the KV cache), gpu (a preset such as "rtx4090", or "24GiB", with
    an optional ":90%"), per_layer (r.layers), max_batch (with gpu: estimate at the
    largest batch that fits unless batch is given (default batch: 1), as --max-batch does).
    For a Hugging Face config.json (a path or a dict): seq (tokens per sample, --seq) and
    max_seq (with gpu: estimate at the longest sequence that fits at `batch`, as --max-seq does),
    loss (a causal LM's: "hf", "liger" or "cce", as --loss; docs/llm.md), tp (one of tp Megatron
    tensor-parallel ranks, --tp; gpus counts them all) and sp (sequence parallelism, --sp).
    offload ("optimizer", "params"; --offload), fsdp_param_dtype and fsdp_reduce_dtype ("bf16", ...:
    FSDP2's MixedPrecisionPolicy with parallel="fsdp2") as the CLI's options, fsdp_reshard_after_forward (True, False
    or an int: fully_shard's reshard_after_forward) and fsdp_replicate (HSDP's replicas); gradient_as_bucket_view
    and parameters_as_bucket_view (True: DDP's and ZeroRedundancyOptimizer's, with parallel="ddp" or
    "zero1-torch"); fsdp_use_orig_params (True: FSDP1's use_orig_params=True); ep (Megatron-Core expert
    parallelism for SparseMoE layers, --ep; gpus a multiple of it; docs/parallel.md section 6); ds_overlap_comm
    (True or False: DeepSpeed ZeRO's overlap_comm with parallel="zero1"/"zero2"/"zero3", --ds-overlap-comm);
    offload_device ("cpu" or "nvme": DeepSpeed's offload device, ZeRO-Infinity; --offload-device) and nvme_gds
    (True: the aio section's use_gds, --nvme-gds; docs/parallel.md 1.9).
    export_options go to the exporter (name, source, description, concrete_args, flat, allow_unknown) and
    need an nn.Module.  Every value is checked before it reaches the library: a keyword argument no
    option has raises UnknownOptionError (a TypeError) naming the closest option, a CLI option Python
    does not take (lora, qlora, weights, grad_ckpt, ...) and every bad value raise VramcalcError naming
    the keyword argument."""
    kv_group_size = _alias(export_options, "kv_group", kv_group_size)
    kv_residual_length = _alias(export_options, "kv_residual", kv_residual_length)
    _check_kwargs("estimate", {k: v for k, v in export_options.items() if k not in _options.EXPORT or
                               not _is_module(model)}, _ESTIMATE_KWARGS, _is_module(model))
    L = _capi.lib()
    opts = vc_options()
    L.vc_options_init(ctypes.byref(opts))
    batch_given = batch is not None
    opts.batch = 1 if batch is None else _args.count("batch", batch)
    opts.accumulate = _args.count("accumulate", accumulate)
    opts.optim = _enum("optim", optim)
    opts.precision = _enum("precision", precision)
    opts.mode = _enum("mode", mode)
    opts.attention = _enum("attention", attention)
    opts.workspace = _size(workspace, "workspace")
    opts.context = _size(context, "context")
    if torch is not None:
        opts.torch_version = _torch_release(L, torch)
    # None: what the class runs when not told at that release (foreach; forloop for adafactor), as --optim-impl
    opts.optim_impl = (L.vc_optim_default_impl_at(opts.optim, opts.torch_version) if optim_impl is None
                       else _enum("optim_impl", optim_impl))
    if parallel is not None:
        opts.parallel = _enum("parallel", parallel)
    opts.gpus = _args.count("gpus", gpus)
    opts.tp = tp = _args.count("tp", tp)
    opts.sp = 1 if _args.flag("sp", sp) else 0
    opts.pp = _args.count("pp", pp)
    if micro_batches is not None:
        opts.micro_batches = _args.count("micro_batches", micro_batches)
    if pp_virtual is not None:
        opts.pp_virtual = _args.count("pp_virtual", pp_virtual)
    if prompt is not None:
        opts.prompt = _args.count("prompt", prompt)
    if new_tokens is not None:
        opts.new_tokens = _args.count("new_tokens", new_tokens)
    if cache is not None:
        opts.cache = _enum("cache", cache)
    if kv_bits is not None:  # 2 or 4: the library's check, on the CLI's clamp (src/cli/main.c OPT_KV_BITS)
        opts.kv_bits = min(_args.count("kv_bits", kv_bits), 1000)
    if kv_group_size is not None:
        opts.kv_group = _args.count("kv_group_size", kv_group_size)
    if kv_residual_length is not None:
        opts.kv_residual = _args.count("kv_residual_length", kv_residual_length, lo=0)
    # the parallel layout's CPU offload and FSDP2's MixedPrecisionPolicy (--offload, --fsdp-param-dtype,
    # --fsdp-reduce-dtype), by their CLI names
    if offload is not None:
        opts.offload = _enum("offload", offload)
    if fsdp_param_dtype is not None:
        opts.fsdp_param_dtype = _enum("fsdp_dtype", fsdp_param_dtype, "fsdp_param_dtype")
    if fsdp_reduce_dtype is not None:
        opts.fsdp_reduce_dtype = _enum("fsdp_dtype", fsdp_reduce_dtype, "fsdp_reduce_dtype")
    opts.ep = ep = _args.count("ep", ep)  # --ep
    raf = fsdp_reshard_after_forward  # --fsdp-reshard-after-forward: True, False or N
    if raf is not None:
        opts.fsdp_reshard = -1 if raf is True else -2 if raf is False else \
            _args.count("fsdp_reshard_after_forward", raf)
    if fsdp_replicate is not None:  # --fsdp-replicate: HSDP's replicas
        opts.fsdp_replicate = _args.count("fsdp_replicate", fsdp_replicate)
    # --gradient-as-bucket-view, --parameters-as-bucket-view: DDP's and ZeroRedundancyOptimizer's bucket views
    opts.gradient_as_bucket_view = 1 if _args.flag("gradient_as_bucket_view", gradient_as_bucket_view) else 0
    opts.parameters_as_bucket_view = 1 if _args.flag("parameters_as_bucket_view", parameters_as_bucket_view) else 0
    if _args.flag("fsdp_use_orig_params", fsdp_use_orig_params):  # --fsdp-use-orig-params
        opts.fsdp_use_orig_params = 1
    if offload_device is not None:  # --offload-device: "cpu" or "nvme"
        if offload_device not in ("cpu", "nvme"):
            raise VramcalcError("offload_device: %r is not 'cpu' or 'nvme'" % (offload_device,),
                                option="offload_device")
        opts.offload_device = 1 if offload_device == "nvme" else 0
    if _args.flag("nvme_gds", nvme_gds):  # --nvme-gds: DeepSpeed's aio use_gds
        opts.nvme_gds = 1
    if ds_overlap_comm is not None:  # --ds-overlap-comm: True or False (None: DeepSpeed's default)
        opts.ds_overlap_comm = 1 if _args.flag("ds_overlap_comm", ds_overlap_comm) else -1
    _args.flag("per_layer", per_layer)
    _args.flag("max_batch", max_batch)
    _args.flag("max_seq", max_seq)
    spec = None
    if gpu is not None:
        spec = _gpu(gpu)
        _use_gpu(opts, spec)
    if max_batch and spec is None:
        raise VramcalcError("max_batch needs gpu (a preset such as h100-80gb, or a size such as 24GiB)",
                            option="max_batch")
    if max_seq:
        other = ("max_batch" if max_batch else "seq" if seq is not None else
                 "input_size" if input_size is not None else None)
        if other:
            raise VramcalcError("max_seq searches the sequence length of a config.json at one batch: "
                                "it does not go with %s" % other, option="max_seq")
        if spec is None:
            raise VramcalcError("max_seq needs gpu (a preset such as h100-80gb, or a size such as 24GiB)",
                                option="max_seq")
    if seq is not None:
        seq = _args.count("seq", seq)
    m, used, names = _model_of(model, input_size, export_options)
    if input_size is not None and not used:
        _set_input(m, input_size)
    if loss is not None:
        _set_loss(m, loss)
    if seq is not None:
        _set_seq(m, seq)
    if tp > 1 or sp:
        err = vc_error()
        if L.vc_model_set_tp(m.ptr, tp, 1 if sp else 0, ctypes.byref(err)):
            _raise(err, model=m)
    if ep > 1:
        err = vc_error()
        if L.vc_model_set_ep(m.ptr, ep, ctypes.byref(err)):
            _raise(err, model=m)
    ms = None
    if max_seq:
        ms = _max_seq(m, opts, spec, False)
        _set_seq(m, ms[0] if ms[0] > 0 else 1)
    mb = None
    if max_batch:
        probe = Result.__new__(Result)
        probe._model, probe._opts, probe._gpu_spec, probe._max_batch = m, opts, spec, None
        mb = Result.max_batch(probe)
        if not batch_given:
            opts.batch = mb if mb > 0 else 1
    res = vc_result()
    err = vc_error()
    if L.vc_estimate(m.ptr, ctypes.byref(opts), ctypes.byref(res), ctypes.byref(err)):
        _raise(err, model=m)
    try:
        r = Result(m, opts, res, spec, per_layer, m.origin, mb)
    finally:
        L.vc_result_free(ctypes.byref(res))
    r._report_max_batch = bool(max_batch)
    r._max_seq = ms
    r.module_names = names or {}
    r.description = getattr(m, "description", "")
    return r


_ESTIMATE_KWARGS = [p for p in inspect.signature(estimate).parameters if p not in ("model", "export_options")]


def _gen_options(precision, prompt, new_tokens, attention="auto", torch=None):
    L = _capi.lib()
    opts = vc_options()
    L.vc_options_init(ctypes.byref(opts))
    opts.precision = _enum("precision", precision)
    opts.attention = _enum("attention", attention)
    opts.mode = L.vc_mode_from_name(b"generate")
    if prompt is not None:
        opts.prompt = _args.count("prompt", prompt)
    if new_tokens is not None:
        opts.new_tokens = _args.count("new_tokens", new_tokens)
    if torch is not None:
        opts.torch_version = _torch_release(L, torch)
    return opts


def max_context(model, gpu, new_tokens=None, batch=1, precision="fp32", cache=None, *, attention="auto", torch=None,
                **export_options):
    """The longest prompt whose generation (new_tokens, batch) fits gpu, as
    `vramcalc MODEL --mode generate --max-context --gpu GPU` finds it (N fits, N + 1
    does not; 0 when a one-token prompt does not fit).  export_options: the exporter's, for
    an nn.Module (then input_size= too)."""
    input_size = export_options.pop("input_size", None) if _is_module(model) else None
    _check_kwargs("max_context", {k: v for k, v in export_options.items() if k not in _options.EXPORT or
                                  not _is_module(model)},
                  [p for p in inspect.signature(max_context).parameters if p not in ("model", "export_options")],
                  _is_module(model))
    L = _capi.lib()
    opts = _gen_options(precision, None, new_tokens, attention, torch)
    opts.batch = _args.count("batch", batch)
    if cache is not None:
        opts.cache = _enum("cache", cache)
    spec = _gpu(gpu)
    _use_gpu(opts, spec)
    m, _, _ = _model_of(model, input_size, export_options)
    n, err = ctypes.c_int64(), vc_error()
    if L.vc_max_prompt(m.ptr, ctypes.byref(opts), spec.capacity, ctypes.byref(n), None, ctypes.byref(err)):
        _raise(err, model=m)
    return n.value


def serve(model, gpu, precision=None, prompt=None, new_tokens=None, gpu_memory_utilization=0.9,
          max_num_batched_tokens=None, max_num_seqs=None, block_size=16, kv_cache_dtype="auto", *, attention="auto",
          torch=None, **export_options):
    """vLLM's KV cache on gpu (`vramcalc MODEL --serve --gpu GPU`): a Fields of
    max_num_batched_tokens, max_num_seqs, weights, profile_peak, requested, kv_cache,
    page_bytes, blocks, tokens, request_tokens (prompt + new_tokens) and concurrency. precision
    None is vLLM's --dtype auto (the config's torch_dtype; vc_serve_auto_precision), as the CLI."""
    input_size = export_options.pop("input_size", None) if _is_module(model) else None
    _check_kwargs("serve", {k: v for k, v in export_options.items() if k not in _options.EXPORT or
                            not _is_module(model)},
                  [p for p in inspect.signature(serve).parameters if p not in ("model", "export_options")],
                  _is_module(model))
    L = _capi.lib()
    opts = _gen_options(precision or "bf16", prompt, new_tokens, attention, torch)
    so = vc_serve_options()
    L.vc_serve_options_init(ctypes.byref(so))
    # the CLI's bounds (src/cli/main.c: parse_real 1e-6..1, parse_count >= 1)
    so.gpu_memory_utilization = _args.real("gpu_memory_utilization", gpu_memory_utilization, 1e-6, 1.0)
    so.max_num_batched_tokens = 0 if max_num_batched_tokens is None else \
        _args.count("max_num_batched_tokens", max_num_batched_tokens)
    so.max_num_seqs = 0 if max_num_seqs is None else _args.count("max_num_seqs", max_num_seqs)
    so.block_size = _args.count("block_size", block_size)
    so.kv_cache_dtype = _enum("kv_dtype", kv_cache_dtype, "kv_cache_dtype")
    spec = _gpu(gpu)
    _use_gpu(opts, spec)
    m, _, _ = _model_of(model, input_size, export_options)
    if precision is None:
        opts.precision = L.vc_serve_auto_precision(m.ptr, ctypes.byref(spec))
    r, err = vc_serve_result(), vc_error()
    if L.vc_serve(m.ptr, ctypes.byref(opts), ctypes.byref(so), ctypes.byref(spec), ctypes.byref(r), ctypes.byref(err)):
        _raise(err, model=m)
    return Fields((k, getattr(r, k)) for k, _ in vc_serve_result._fields_)
