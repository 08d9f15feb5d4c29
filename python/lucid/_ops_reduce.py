"""Python wrappers of the reduce ops (owned by the reduce family)."""
__all__ = []
