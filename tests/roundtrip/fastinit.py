"""fastinit -- build torch modules without their random initialization.

The round-trip checks (check_zoo.py, roundtrip.py, test_exporter.py) compare parameter
counts, layer kinds and output shapes, none of which depends on a weight's value, yet
drawing the values took much of their time (uniform_, normal_ and trunc_normal_'s erfinv_
under cProfile: 14.5 of check_zoo.py's 21.8 s, 14 of roundtrip.py's 43 s: the zoo,
torchvision's models and vctorch's rebuilds). Inside skip_random_init() the random initializers of torch.nn.init
return the tensor as torch.empty left it: a large one is fresh, untouched pages, so even a
memset (zero_) would cost more than it saves, as measured (15 s of page faults over the
round trip's 16 models); the constant ones (zeros_, ones_, constant_, eye_, dirac_) still
run. The same idea as transformers' no_init_weights (src/transformers/modeling_utils.py,
TORCH_INIT_FUNCTIONS), which patches these functions of torch.nn.init during a model's
construction. Modules look them up on torch.nn.init at call time (`init.kaiming_uniform_`,
`nn.init.trunc_normal_`), so replacing the attributes reaches every constructor.
"""

import contextlib

RANDOM_INITS = ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                "xavier_uniform_", "xavier_normal_", "orthogonal_", "sparse_")


def _untouched(tensor, *args, **kwargs):
    return tensor


@contextlib.contextmanager
def skip_random_init():
    import torch.nn.init as init
    saved = {name: getattr(init, name) for name in RANDOM_INITS if hasattr(init, name)}
    try:
        for name in saved:
            setattr(init, name, _untouched)
        yield
    finally:
        for name, fn in saved.items():
            setattr(init, name, fn)


def meta_copy(module):
    """module on the meta device without copying its weights (deepcopy with a memo of empty
    meta tensors; coverage.py's meta_copy), for a shape-only forward pass."""
    import copy
    import torch
    memo = {}
    for t in list(module.parameters()) + list(module.buffers()):
        e = torch.empty_like(t, device="meta")
        memo[id(t)] = torch.nn.Parameter(e, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else e
    return copy.deepcopy(module, memo)


def output_shape(module, xs):
    """The shape of module(*xs)'s output (eval, no grad): computed on the meta device, where
    no arithmetic runs; on the CPU as before when a module cannot run there (an op without
    a meta kernel in torch 1.13, a tensor made on the CPU inside forward)."""
    import torch
    module.eval()
    with torch.no_grad():
        try:
            return tuple(meta_copy(module)(*[x.to("meta") for x in xs]).shape)
        except (RuntimeError, NotImplementedError):
            return tuple(module(*xs).shape)
