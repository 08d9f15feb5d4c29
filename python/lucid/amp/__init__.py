"""lucid.amp: automatic mixed precision (torch.amp). autocast is built (autocast_mode.py), and so is
GradScaler in eager mode (grad_scaler.py); fused_step(..., grad_scaler=) is not built yet (issue 16)."""
from lucid.amp.autocast_mode import autocast, custom_fwd, custom_bwd, is_autocast_available  # noqa: F401
from lucid.amp.grad_scaler import GradScaler  # noqa: F401
