"""Python wrappers of the movement ops (owned by the movement family)."""
__all__ = []
