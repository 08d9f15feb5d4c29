"""Python wrappers of the elementwise ops (owned by the elementwise family)."""
__all__ = []
