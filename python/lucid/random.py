"""lucid.random: the default generator's state (torch.random's API). Random numbers come from a
counter-based Philox4x32-10 stream whose state is (seed, offset); see core/generator.h."""
import contextlib

from lucid import _C

manual_seed = _C.manual_seed
seed = _C.seed
initial_seed = _C.initial_seed
get_rng_state = _C.get_rng_state
set_rng_state = _C.set_rng_state
default_generator = _C.default_generator


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True):
    """Restores the default generator's state on exit (torch.random.fork_rng)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "default_generator", "fork_rng"]
