"""Python wrappers of the linalg ops (owned by the linalg family)."""
__all__ = []
