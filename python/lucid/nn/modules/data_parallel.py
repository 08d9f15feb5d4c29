"""DataParallel for one device: lucid runs a model on one device in one process, so DataParallel
holds the module as `module` (torch's state_dict prefix, "module.") and calls it; there is no
scatter of the batch or gather of outputs to do. device_ids, output_device and dim are kept for
torch's signature."""
from lucid.nn.modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
