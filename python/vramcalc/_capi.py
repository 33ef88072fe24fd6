"""ctypes mirror of include/vramcalc/vramcalc.h: the structs the Python API reads and the
prototypes of the functions it calls.  python/tests/test_api.py checks every size and
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
                ("offload_device", c_int), ("nvme_gds", c_int), ("keep_grads", c_int),
                ("hold_output", c_int)]


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


class vc_serve_options(ctypes.Structure):
    _fields_ = [("gpu_memory_utilization", ctypes.c_double), ("max_num_batched_tokens", c_int64),
                ("max_num_seqs", c_int64), ("block_size", c_int64), ("kv_cache_dtype", c_int)]


class vc_serve_result(ctypes.Structure):
    _fields_ = [(n, c_int64) for n in ("max_num_batched_tokens", "max_num_seqs", "weights", "profile_peak",
                                       "requested", "kv_cache", "page_bytes", "blocks", "tokens",
                                       "request_tokens", "concurrency")]


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

# function name -> (restype, argtypes)
_PROTOS = {
    "vc_strerror": (c_char_p, [c_int]),
    "vc_error_format": (None, [P(vc_error), ctypes.c_char_p, c_size_t]),
    "vc_model_load_file": (c_int, [c_char_p, P(_vp), P(vc_error)]),
    "vc_model_load_string": (c_int, [c_char_p, c_size_t, c_char_p, P(_vp), P(vc_error)]),
    "vc_model_free": (None, [_vp]),
    "vc_model_set_input_shape": (c_int, [_vp, P(c_int64), c_int, P(vc_error)]),
    "vc_model_name": (c_char_p, [_vp]),
    "vc_model_parameters": (c_int64, [_vp]),
    "vc_options_init": (None, [P(vc_options)]),
    "vc_optim_from_name": (c_int, [c_char_p]),
    "vc_optim_impl_from_name": (c_int, [c_char_p]),
    "vc_precision_from_name": (c_int, [c_char_p]),
    "vc_mode_from_name": (c_int, [c_char_p]),
    "vc_attention_from_name": (c_int, [c_char_p]),
    "vc_optim_name": (c_char_p, [c_int]),
    "vc_optim_default_impl": (c_int, [c_int]),
    "vc_optim_default_impl_at": (c_int, [c_int, c_int]),
    "vc_optim_impl_name": (c_char_p, [c_int]),
    "vc_precision_name": (c_char_p, [c_int]),
    "vc_mode_name": (c_char_p, [c_int]),
    "vc_attention_name": (c_char_p, [c_int]),
    "vc_torch_from_name": (c_int, [c_char_p]),
    "vc_parallel_from_name": (c_int, [c_char_p]),
    "vc_cache_from_name": (c_int, [c_char_p]),
    "vc_offload_from_name": (c_int, [c_char_p]),
    "vc_fsdp_dtype_from_name": (c_int, [c_char_p]),
    "vc_cache_name": (c_char_p, [c_int]),
    "vc_parallel_name": (c_char_p, [c_int]),
    "vc_torch_name": (c_char_p, [c_int, c_char_p, c_size_t]),
    "vc_phase_name": (c_char_p, [c_int]),
    "vc_estimate": (c_int, [_vp, P(vc_options), P(vc_result), P(vc_error)]),
    "vc_estimate_counts": (c_int, [c_int64, c_int64, P(vc_options), P(vc_result), P(vc_error)]),
    "vc_result_free": (None, [P(vc_result)]),
    "vc_kind_count": (c_size_t, []),
    "vc_kind_name": (c_char_p, [c_size_t]),
    "vc_kind_summary": (c_char_p, [c_size_t]),
    "vc_gpu_count": (c_size_t, []),
    "vc_gpu_get": (P(vc_gpu), [c_size_t]),
    "vc_gpu_parse": (c_int, [c_char_p, P(vc_gpu_spec), P(vc_error)]),
    "vc_parse_size": (c_int, [c_char_p, P(c_int64), P(vc_error)]),
    "vc_estimator_new": (c_int, [_vp, P(vc_options), ctypes.c_uint, P(_vp), P(vc_error)]),
    "vc_estimator_new_counts": (c_int, [c_int64, c_int64, P(vc_options), P(_vp), P(vc_error)]),
    "vc_estimator_max_batch": (c_int, [_vp, c_int64, P(c_int64), P(c_int), P(vc_error)]),
    "vc_estimator_free": (None, [_vp]),
    "vc_model_set_seq": (c_int, [_vp, c_int64, P(vc_error)]),
    "vc_model_set_loss": (c_int, [_vp, c_int, P(vc_error)]),
    "vc_loss_impl_from_name": (c_int, [c_char_p]),
    "vc_model_set_tp": (c_int, [_vp, c_int64, c_int, P(vc_error)]),
    "vc_model_set_ep": (c_int, [_vp, c_int64, P(vc_error)]),
    "vc_model_max_seq": (c_int, [_vp, P(vc_options), c_int64, P(c_int64), P(c_int), P(c_int), P(vc_error)]),
    "vc_max_prompt": (c_int, [_vp, P(vc_options), c_int64, P(c_int64), P(c_int), P(vc_error)]),
    "vc_serve_options_init": (None, [P(vc_serve_options)]),
    "vc_serve": (c_int, [_vp, P(vc_options), P(vc_serve_options), P(vc_gpu_spec), P(vc_serve_result), P(vc_error)]),
    "vc_serve_auto_precision": (c_int, [_vp, P(vc_gpu_spec)]),
    "vc_kv_dtype_from_name": (c_int, [c_char_p]),
}

VC_EST_NO_LAYERS = 1


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
