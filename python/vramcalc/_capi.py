"""ctypes mirror of include/vramcalc/vramcalc.h: the structs the Python API reads (and the
public structs, for the ABI check) and the prototypes of the functions it calls.  python/tests/test_api.py checks every size and
offset here against the C compiler's (python/tests/abi_layout.c), so a header change
that is not made here too fails a test instead of reading garbage."""

import ctypes
import ctypes.util
import os

c_int64 = ctypes.c_int64
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t
c_double = ctypes.c_double

VC_MAX_DIMS = 8


class vc_error(ctypes.Structure):
    _fields_ = [("code", c_int), ("file", ctypes.c_char * 256), ("line", c_int), ("col", c_int),
                ("path", ctypes.c_char * 256), ("msg", ctypes.c_char * 512)]


class vc_gpu(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("label", c_char_p), ("vendor", c_char_p), ("capacity", c_int64),
                ("hopper", c_int), ("source", c_char_p), ("sm", c_int), ("sms", c_int), ("sm_threads", c_int)]


class vc_options(ctypes.Structure):
    _fields_ = [("batch", c_int64), ("optim", c_int), ("optim_impl", c_int), ("accumulate", c_int64),
                ("precision", c_int), ("mode", c_int), ("attention", c_int), ("workspace", c_int64),
                ("context", c_int64), ("hopper", c_int), ("torch_version", c_int), ("parallel", c_int),
                ("gpus", c_int64), ("prompt", c_int64), ("new_tokens", c_int64), ("cache", c_int),
                ("tp", c_int64), ("pp", c_int64), ("micro_batches", c_int64), ("sp", c_int),
                ("offload", c_int), ("kv_bits", c_int), ("kv_group", c_int64), ("kv_residual", c_int64), ("fsdp_param_dtype", c_int), ("fsdp_reduce_dtype", c_int),
                ("ep", c_int64),
                ("device", ctypes.POINTER(vc_gpu)),
                ("fsdp_reshard", c_int64), ("fsdp_replicate", c_int64),
                ("pp_virtual", c_int64),
                ("gradient_as_bucket_view", c_int), ("parameters_as_bucket_view", c_int),
                ("fsdp_use_orig_params", c_int),
                ("ds_overlap_comm", c_int),
                ("offload_device", c_int), ("nvme_gds", c_int)]


class vc_memory(ctypes.Structure):
    _fields_ = [(n, c_int64) for n in ("weights", "gradients", "optimizer_states", "activations", "workspace",
                                       "peak_allocated", "reserved", "cuda_context", "total",
                                       "optimizer_states_paged")]


class vc_peak(ctypes.Structure):
    _fields_ = [("phase", c_int), ("layer", ctypes.c_char * 128), ("kind", ctypes.c_char * 32)] + \
        [(n, c_int64) for n in ("weights", "gradients", "optimizer_states", "activations", "temporaries",
                                "workspace")]


class vc_layer_info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 128), ("kind", ctypes.c_char * 32), ("ndim", c_int),
                ("output_shape", c_int64 * VC_MAX_DIMS), ("parameters", c_int64), ("activations", c_int64)]


class vc_generate(ctypes.Structure):
    _fields_ = [(n, c_int64) for n in ("prefill_peak", "decode_peak", "decode_step", "kv_cache", "kv_tokens")]


class vc_rank_info(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_char * 16)] + \
               [(n, c_int64) for n in ("stage_first", "stage_last", "rank_first", "rank_last", "stage", "layers",
                                       "in_flight", "parameters")] + \
               [("memory", vc_memory), ("peak", vc_peak)]


class vc_result(ctypes.Structure):
    _fields_ = [("parameters", c_int64), ("trainable_parameters", c_int64), ("memory", vc_memory),
                ("peak", vc_peak), ("attention", ctypes.c_char * 192), ("generate", vc_generate),
                ("nlayers", c_size_t),
                ("layers", ctypes.POINTER(vc_layer_info)),
                ("nranks", c_size_t),
                ("ranks", ctypes.POINTER(vc_rank_info))]


class vc_gpu_spec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 80), ("preset", ctypes.POINTER(vc_gpu)), ("total", c_int64),
                ("capacity", c_int64), ("percent", c_double)]


# name -> ctypes struct, for the layout check
STRUCTS = {"vc_error": vc_error, "vc_options": vc_options, "vc_memory": vc_memory, "vc_peak": vc_peak,
           "vc_layer_info": vc_layer_info, "vc_rank_info": vc_rank_info, "vc_result": vc_result, "vc_gpu": vc_gpu,
           "vc_gpu_spec": vc_gpu_spec}

P = ctypes.POINTER
_vp = ctypes.c_void_p

# function name -> (restype, argtypes): what the package calls besides the request API
# (_request.PROTOS); every other struct here is mirrored for the ABI check only
_PROTOS = {
    "vc_kind_count": (c_size_t, []),
    "vc_kind_name": (c_char_p, [c_size_t]),
    "vc_kind_summary": (c_char_p, [c_size_t]),
    "vc_gpu_count": (c_size_t, []),
    "vc_gpu_get": (P(vc_gpu), [c_size_t]),
}

def _candidates():
    env = os.environ.get("VRAMCALC_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libvramcalc.so")           # installed by pip (setup.py copies it)
    root = os.path.dirname(os.path.dirname(here))          # a source checkout: python/vramcalc -> repo
    yield os.path.join(root, "build", "libvramcalc.so")
    found = ctypes.util.find_library("vramcalc")
    if found:
        yield found


_lib = None


def lib():
    """The loaded shared library (VRAMCALC_LIB, the package's copy, or build/ of a checkout)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            L = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _PROTOS.items():
            fn = getattr(L, name)
            fn.restype = res
            fn.argtypes = args
        _lib = L
        return L
    raise ImportError("vramcalc: libvramcalc.so not found (tried %s); build it with "
                      "`cmake --build build --target vramcalc_shared` or set VRAMCALC_LIB"
                      % ", ".join(tried) if tried else "nothing")
