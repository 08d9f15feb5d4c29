"""Python wrappers of the nn ops (owned by the nn family)."""
__all__ = []
