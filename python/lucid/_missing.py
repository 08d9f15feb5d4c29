"""What a lookup of a name lucid lacks raises. For a name PyTorch has (python/lucid/_torch_api.json,
generated from the installed torch by scripts/api_coverage.py: the same list the coverage report
counts) it is NotImplementedYetError, "lucid.log10 is a PyTorch function that lucid does not
implement yet", instead of Python's "did you mean 'log1p'?". Any other name gets the usual
AttributeError. Both are AttributeErrors, so hasattr() and getattr(obj, name, default) work.

Only failed lookups get here (a module's __getattr__, Tensor.__getattr__), so a name bound later,
by an op family or by a newer build, is found as usual."""
import json
import os
import sys

__all__ = ["NotImplementedYetError", "missing", "module_getattr"]


class NotImplementedYetError(AttributeError, NotImplementedError):
    """A PyTorch name lucid does not implement yet (an AttributeError and a NotImplementedError)."""


_KIND_WORDS = {"function": "function", "class": "class", "module": "module", "method": "Tensor method",
               "attribute": "Tensor attribute"}
_names = None


def _torch_names():
    global _names
    if _names is None:
        with open(os.path.join(os.path.dirname(__file__), "_torch_api.json")) as f:
            _names = json.load(f)["names"]
    return _names


def missing(ns, where, name, obj=None):
    """The exception for `name` not found in `where` (the lucid path: "lucid.nn", "Tensor"), whose
    torch counterpart is namespace `ns` of _torch_api.json ("nn", "Tensor")."""
    kind = None if name.startswith("__") else _torch_names().get(ns, {}).get(name)
    if kind is not None:
        return NotImplementedYetError(f"{where}.{name} is a PyTorch {_KIND_WORDS[kind]} that lucid does not "
                                      "implement yet")
    if ns == "Tensor":
        return AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'", name=name, obj=obj)
    return AttributeError(f"module '{where}' has no attribute '{name}'", name=name, obj=obj)


def module_getattr(ns, module_name):
    """A module-level __getattr__ for lucid module `module_name`, the counterpart of torch's `ns`."""
    def __getattr__(name):
        raise missing(ns, module_name, name, sys.modules.get(module_name))
    return __getattr__
