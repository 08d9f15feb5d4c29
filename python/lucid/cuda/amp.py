"""lucid.cuda.amp: torch.cuda.amp's deprecated GradScaler, for programs written against it.

`lucid.cuda.amp.GradScaler(...)` is `lucid.amp.GradScaler("cuda", ...)` with torch's FutureWarning
saying so (and, on a machine without CUDA, the "Disabling." warning and a disabled scaler, as
torch). OptState is re-exported as torch keeps it here for old code."""
import warnings

from lucid.amp import grad_scaler as _grad_scaler
from lucid.amp.grad_scaler import OptState  # noqa: F401

__all__ = ["GradScaler"]


class GradScaler(_grad_scaler.GradScaler):
    """See lucid.amp.GradScaler. ``lucid.cuda.amp.GradScaler(args...)`` is deprecated: use
    ``lucid.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`lucid.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `lucid.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
