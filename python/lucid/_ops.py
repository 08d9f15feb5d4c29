"""Top-level functional ops (lucid.add, lucid.zeros, ...). Families add their names here."""
from lucid._C import add, mul, neg, empty, full, cast  # noqa: F401

__all__ = ["add", "mul", "neg", "empty", "full", "cast"]
