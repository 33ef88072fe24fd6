"""ctypes mirror of include/vramcalc/vramcalc.h: the structs the Python API reads and the
prototypes of the functions it calls (the option table's and the request's are in
_request.py), and the library's loading.  python/tests/test_api.py checks every size and
offset against the C compiler's (python/tests/abi_layout.c), so a header change that is
not made here too fails a test instead of reading garbage."""

import ctypes
import ctypes.util
import os

c_int64 = ctypes.c_int64
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t


class vc_error(ctypes.Structure):
    _fields_ = [("code", c_int), ("file", ctypes.c_char * 256), ("line", c_int), ("col", c_int),
                ("path", ctypes.c_char * 256), ("msg", ctypes.c_char * 2048)]


class vc_gpu(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("label", c_char_p), ("vendor", c_char_p), ("capacity", c_int64),
                ("hopper", c_int), ("source", c_char_p), ("sm", c_int), ("sms", c_int), ("sm_threads", c_int)]


# name -> ctypes struct, for the layout check
STRUCTS = {"vc_error": vc_error, "vc_gpu": vc_gpu}

P = ctypes.POINTER
_vp = ctypes.c_void_p

# function name -> (restype, argtypes): what the package calls besides the request API
# (_request.PROTOS)
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
