"""lucid.utils.dlpack: torch.utils.dlpack's from_dlpack and to_dlpack (zero-copy, CPU and CUDA)."""
from lucid._creation import from_dlpack
from lucid._ops_query import to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
