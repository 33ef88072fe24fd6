"""The CLI's options (src/cli/options.c, cli_options[]) as the Python API takes them.

Every long option of `vramcalc --help` has a row here (python/tests/test_strict.py checks
that against the CLI): its keyword argument and where it goes, or why Python takes no
such keyword.  A keyword argument that is no option fails with a TypeError naming the
closest option; one that names a CLI option Python does not take fails saying so, never
silently dropped.
"""

# where: "estimate", "serve", "max_context" -- the functions that take it as a keyword argument;
# "model" -- an option of the model or its estimate that Python does not take; otherwise a sentence naming what Python offers instead
CLI = {
    "batch": ("batch", ("estimate", "max_context")),
    "input": ("input_size", ("estimate",)),
    "seq": ("seq", ("estimate",)),
    "moe-imbalance": ("moe_imbalance", "model"),
    "emit-model": ("emit_model", "the CLI's --emit-model prints the model a config.json builds: run the CLI"),
    "optim": ("optim", ("estimate",)),
    "optim-impl": ("optim_impl", ("estimate",)),
    "accumulate": ("accumulate", ("estimate",)),
    "precision": ("precision", ("estimate", "serve", "max_context")),
    "mode": ("mode", ("estimate",)),
    "lora": ("lora", "model"),
    "lora-targets": ("lora_targets", "model"),
    "lora-alpha": ("lora_alpha", "model"),
    "lora-dropout": ("lora_dropout", "model"),
    "grad-ckpt": ("grad_ckpt", "model"),
    "loss": ("loss", ("estimate",)),
    "weights": ("weights", "model"),
    "qlora": ("qlora", "model"),
    "gpus": ("gpus", ("estimate",)),
    "tp": ("tp", ("estimate",)),
    "sp": ("sp", ("estimate",)),
    "ep": ("ep", ("estimate",)),
    "pp": ("pp", ("estimate",)),
    "micro-batches": ("micro_batches", ("estimate",)),
    "pp-virtual": ("pp_virtual", ("estimate",)),
    "parallel": ("parallel", ("estimate",)),
    "offload": ("offload", ("estimate",)),
    "offload-device": ("offload_device", ("estimate",)),
    "nvme-gds": ("nvme_gds", ("estimate",)),
    "fsdp-param-dtype": ("fsdp_param_dtype", ("estimate",)),
    "fsdp-reduce-dtype": ("fsdp_reduce_dtype", ("estimate",)),
    "fsdp-use-orig-params": ("fsdp_use_orig_params", ("estimate",)),
    "fsdp-reshard-after-forward": ("fsdp_reshard_after_forward", ("estimate",)),
    "fsdp-replicate": ("fsdp_replicate", ("estimate",)),
    "gradient-as-bucket-view": ("gradient_as_bucket_view", ("estimate",)),
    "parameters-as-bucket-view": ("parameters_as_bucket_view", ("estimate",)),
    "ds-overlap-comm": ("ds_overlap_comm", ("estimate",)),
    "attention": ("attention", ("estimate", "serve", "max_context")),
    "torch": ("torch", ("estimate", "serve", "max_context")),
    "workspace": ("workspace", ("estimate",)),
    "context": ("context", ("estimate",)),
    "gpu": ("gpu", ("estimate", "serve", "max_context")),
    "max-batch": ("max_batch", ("estimate",)),
    "max-seq": ("max_seq", ("estimate",)),
    "prompt": ("prompt", ("estimate", "serve")),
    "new-tokens": ("new_tokens", ("estimate", "serve", "max_context")),
    "cache": ("cache", ("estimate", "max_context")),
    "kv-bits": ("kv_bits", ("estimate",)),
    "kv-group-size": ("kv_group_size", ("estimate",)),
    "kv-residual-length": ("kv_residual_length", ("estimate",)),
    "max-context": ("max_context", "the CLI's --max-context is vramcalc.max_context(model, gpu, ...)"),
    "serve": ("serve", "the CLI's --serve is vramcalc.serve(model, gpu, ...)"),
    "gpu-memory-utilization": ("gpu_memory_utilization", ("serve",)),
    "max-num-batched-tokens": ("max_num_batched_tokens", ("serve",)),
    "max-num-seqs": ("max_num_seqs", ("serve",)),
    "block-size": ("block_size", ("serve",)),
    "kv-cache-dtype": ("kv_cache_dtype", ("serve",)),
    "sweep": ("sweep", "the CLI's --sweep is a loop over estimate(..., batch=b) in Python"),
    "plot": ("plot", "the CLI's --plot draws a --sweep: run the CLI"),
    "format": ("format", "the CLI's --format: the result is r.to_json(), r.to_dict() or str(r)"),
    "columns": ("columns", "the CLI's --columns selects CSV columns: the result is r.to_dict()"),
    "per-layer": ("per_layer", ("estimate",)),
    "no-color": ("no_color", "the CLI's --no-color: str(r) has no colours"),
    "params": ("params", "model"),
    "activations": ("activations", "model"),
    "list-gpus": ("list_gpus", "the CLI's --list-gpus is vramcalc.gpus()"),
    "list-layers": ("list_layers", "the CLI's --list-layers is vramcalc.kinds()"),
    "trace": ("trace", "model"),
    "help": ("help", "the CLI's --help is help(vramcalc.estimate)"),
    "version": ("version", "the CLI's --version is vramcalc.__version__"),
}

# Earlier keyword names, still taken: alias -> the option's keyword
ALIASES = {"kv_group": "kv_group_size", "kv_residual": "kv_residual_length"}

# tools/torch2vramcalc.py export()'s options that a caller may give for an nn.Module
# (python/tests/test_api.py --torch checks them against its signature)
EXPORT = ("name", "source", "description", "concrete_args", "flat", "allow_unknown")

BY_PYTHON = {py: (cli, where) for cli, (py, where) in CLI.items()}


def not_taken(func, name):
    """The message for a keyword that names a CLI option func does not take; None when it
    names none."""
    name = ALIASES.get(name, name)
    if name not in BY_PYTHON:
        return None
    cli, where = BY_PYTHON[name]
    if where == "model":
        return "%s: the CLI's --%s is not available from Python: use the CLI" % (name, cli)
    if isinstance(where, str):
        return "%s: %s" % (name, where)
    fns = ["%s()" % w for w in where]
    return "%s: %s() does not take it (%s)" % (name, func, fns[0] + " does" if len(fns) == 1 else
                                                ", ".join(fns[:-1]) + " and " + fns[-1] + " do")
