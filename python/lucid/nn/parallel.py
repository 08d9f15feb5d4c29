"""lucid.nn.parallel for one device: DataParallel (a wrapper that calls its module) and
data_parallel (calls the module on the inputs). lucid runs in one process on one device, so
there is no batch to scatter and no outputs to gather; the names keep torch programs running."""
from lucid.nn.modules.data_parallel import DataParallel

__all__ = ["DataParallel", "data_parallel"]


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
