"""lucid.backends: torch.backends' switches for the libraries lucid's backends use (cuda: cuBLASLt's TF32; cudnn)."""
from lucid.backends import cuda, cudnn

__all__ = ["cuda", "cudnn"]
