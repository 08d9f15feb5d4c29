"""lucid.utils: data loading helpers (lucid.utils.data) and DLPack exchange (lucid.utils.dlpack)."""
from lucid.utils import data  # noqa: F401
from lucid.utils import dlpack  # noqa: F401


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("utils", "lucid.utils")  # a PyTorch name lucid lacks says so
