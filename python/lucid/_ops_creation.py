"""Python wrappers of the creation ops (owned by the creation family)."""
__all__ = []
