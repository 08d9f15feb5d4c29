"""lucid.compile's warning and error types."""

__all__ = ["CompileWarning", "CompileError"]


class CompileWarning(UserWarning):
    """A signature runs eagerly instead of compiled; the message gives the reason (once per reason)."""


class CompileError(RuntimeError):
    """Raised instead of falling back to eager when compiling with strict=True."""
