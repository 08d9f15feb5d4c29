"""lucid.optim: optimizers and learning-rate schedulers with torch.optim's API and update rules."""
from lucid.optim.optimizer import Optimizer
from lucid.optim.sgd import SGD
from lucid.optim.adam import Adam, AdamW
from lucid.optim.rmsprop import RMSprop
from lucid.optim.adagrad import Adagrad
from lucid.optim.adadelta import Adadelta
from lucid.optim.adamax import Adamax
from lucid.optim.nadam import NAdam
from lucid.optim.radam import RAdam
from lucid.optim.lbfgs import LBFGS
from lucid.optim import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
           "lr_scheduler"]


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("optim", "lucid.optim")  # a PyTorch name lucid lacks says so
