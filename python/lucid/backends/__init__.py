"""lucid.backends: torch.backends' switches for the libraries lucid's backends use (cuda)."""
from lucid.backends import cuda

__all__ = ["cuda"]
