"""lucid.cuda: torch.cuda's availability queries for programs ported from PyTorch.

No CUDA backend is built yet, so `is_available()` is False and `device_count()` is 0; this lets
`lucid.device("cuda" if lucid.cuda.is_available() else "cpu")` pick the CPU. The seeding calls are
no-ops, as torch's are on a machine without CUDA, so `lucid.cuda.manual_seed_all(0)` in a ported
script does not fail. Anything that needs a GPU raises (see lucid._device)."""

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all"]


def is_available():
    """False: this build of lucid has no CUDA backend."""
    return False


def device_count():
    """0: this build of lucid has no CUDA backend."""
    return 0


def manual_seed(seed):
    """No-op without CUDA (as torch.cuda.manual_seed on a CPU-only machine)."""
    int(seed)


def manual_seed_all(seed):
    """No-op without CUDA (as torch.cuda.manual_seed_all on a CPU-only machine)."""
    int(seed)
