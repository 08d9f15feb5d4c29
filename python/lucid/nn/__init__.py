"""lucid.nn: modules, parameters, functional ops, initialisers and utilities (torch.nn's API)."""
from lucid.nn.parameter import Parameter, Buffer
from lucid.nn import functional, init
from lucid.nn.modules import *  # noqa: F401,F403
from lucid.nn.modules import Module
from lucid.nn import utils, grad, parallel
