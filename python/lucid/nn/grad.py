"""lucid.nn.grad: gradients of a convolution with respect to its input or its weight (torch.nn.grad).

A convolution is linear in each of its two operands, so the gradient with respect to one of them
is the vector-Jacobian product of the convolution taken at any value of that operand (zeros here),
computed by the convolution's own VJP (the kernels autograd uses). The result is differentiable
in the other operand and grad_output, as torch's is.
"""
import lucid
from lucid.nn import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _vjp(conv, input, weight, grad_output, wrt, stride, padding, dilation, groups):
    args = [input, weight]
    args[wrt] = lucid.zeros(*args[wrt], dtype=grad_output.dtype, device=grad_output.device).requires_grad_(True)
    others = [t for i, t in enumerate(args) if i != wrt] + [grad_output]
    create_graph = any(t.requires_grad for t in others)
    with lucid.enable_grad():
        out = conv(args[0], args[1], None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise ValueError(f"{conv.__name__} gradient: argument 'grad_output' expected shape {list(out.shape)} (the "
                             f"convolution's output), got {list(grad_output.shape)}")
        return lucid.autograd.grad(out, args[wrt], grad_output, create_graph=create_graph)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv1d, tuple(input_size), weight, grad_output, 0, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv1d, input, tuple(weight_size), grad_output, 1, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv2d, tuple(input_size), weight, grad_output, 0, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv2d, input, tuple(weight_size), grad_output, 1, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv3d, tuple(input_size), weight, grad_output, 0, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _vjp(F.conv3d, input, tuple(weight_size), grad_output, 1, stride, padding, dilation, groups)
