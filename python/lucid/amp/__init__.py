"""lucid.amp: automatic mixed precision (torch.amp). autocast is built (autocast_mode.py);
GradScaler (loss scaling for float16 training) is not built yet (issue 16)."""
from lucid.amp.autocast_mode import autocast, custom_fwd, custom_bwd, is_autocast_available  # noqa: F401
