"""lucid.autograd: backward, grad and grad-mode switches (the engine is C++)."""
from lucid.autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, is_grad_enabled
from lucid import _C


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _C._backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    return tuple(_C._grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused))


from lucid.autograd import _tensor_hooks, function  # noqa: E402
from lucid.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: E402
from lucid.autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: E402
from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("autograd", "lucid.autograd")  # a PyTorch name lucid lacks says so
