"""Python names of the creation ops (owned by the creation family). The factories are C++
functions (python/src/creation_bind.cpp); this module only exports them."""
from lucid import _C
from lucid import random as random  # noqa: F401  (makes lucid.random available)

zeros = _C.zeros
ones = _C.ones
empty = _C._empty_factory
full = _C._full_factory
arange = _C.arange
linspace = _C.linspace
eye = _C.eye
zeros_like = _C.zeros_like
ones_like = _C.ones_like
empty_like = _C.empty_like
full_like = _C.full_like
rand = _C.rand
randn = _C.randn
randint = _C.randint
rand_like = _C.rand_like
randn_like = _C.randn_like
randint_like = _C.randint_like
randperm = _C.randperm
normal = _C.normal
bernoulli = _C.bernoulli
multinomial = _C.multinomial
Generator = _C.Generator
default_generator = _C.default_generator
manual_seed = _C.manual_seed
seed = _C.seed
initial_seed = _C.initial_seed
get_rng_state = _C.get_rng_state
set_rng_state = _C.set_rng_state

__all__ = ["zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like", "ones_like", "empty_like",
           "full_like", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli", "multinomial",
           "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]
