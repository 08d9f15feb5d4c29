"""lucid.nn: modules, parameters, functional ops, initialisers and utilities (torch.nn's API)."""
from lucid.nn.parameter import Parameter, Buffer
from lucid.nn import functional, init
from lucid.nn.modules import *  # noqa: F401,F403
from lucid.nn.modules import Module
from lucid.nn import utils, grad, parallel


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("nn", "lucid.nn")  # a PyTorch name lucid lacks says so
