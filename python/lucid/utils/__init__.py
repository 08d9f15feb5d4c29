"""lucid.utils: data loading helpers (lucid.utils.data)."""
from lucid.utils import data  # noqa: F401
