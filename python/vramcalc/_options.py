"""What Python adds to the library's option table (vramcalc.options(), vc_option_at): the
exporter's options for an nn.Module, and what it offers for the front end's own options
(applies FRONT_END: the CLI's, never part of a request)."""

# tools/torch2vramcalc.py export()'s options that a caller may give for an nn.Module
# (python/tests/test_api.py --torch checks them against its signature)
EXPORT = ("name", "source", "description", "concrete_args", "flat", "allow_unknown")

# a front end's option (by table name) -> what Python offers instead
FRONT_END = {
    "help": "help(vramcalc.estimate) lists the options; vramcalc.options() is the table",
    "version": "vramcalc.__version__",
    "no_color": "str(r) and r.table() have no colours",
    "no_colour": "str(r) and r.table() have no colours",
    "list_layers": "vramcalc.kinds()",
}


def not_taken(name):
    """The message for a keyword that is a front end's option; None for any other."""
    if name not in FRONT_END:
        return None
    return "%s=: the CLI's own option, not a request's: %s" % (name, FRONT_END[name])
