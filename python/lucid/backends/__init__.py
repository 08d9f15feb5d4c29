"""lucid.backends: torch.backends' switches for the libraries lucid's backends use (cudnn)."""
from lucid.backends import cudnn

__all__ = ["cudnn"]
