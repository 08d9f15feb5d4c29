"""lucid.nn.utils: gradient clipping, parameter/vector conversion and (rnn) padded/packed sequences."""
from lucid.nn.utils.clip_grad import clip_grad_norm_, clip_grad_norm, clip_grad_value_, get_total_norm, clip_grads_with_norm_
from lucid.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from lucid.nn.utils import rnn

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_", "parameters_to_vector",
           "vector_to_parameters"]


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("nn.utils", "lucid.nn.utils")  # a PyTorch name lucid lacks says so
