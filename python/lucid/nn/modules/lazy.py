"""Lazy modules (LazyLinear, LazyConv*/LazyConvTranspose* 1-3d, LazyBatchNorm*, LazyInstanceNorm*):
the input size (in_features, in_channels, num_features) is read from the first input.

Until then the module holds UninitializedParameter / UninitializedBuffer placeholders (empty
tensors of the requested dtype). The first forward (or a load_state_dict, from the checkpoint's
shapes) replaces them in the module by real tensors of the inferred shapes, initialised as the
eager module would be, and the module becomes its eager class (LazyLinear -> Linear), as in torch.
The lazy norms default to affine=True and track_running_stats=True, InstanceNorm's too, as in torch.
lucid tensors cannot change shape in place, so the placeholders are replaced rather than
materialised in place: take the parameters (for an optimizer) after that first call, as torch
requires too.
"""
import lucid
from lucid.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from lucid.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from lucid.nn.modules.linear import Linear
from lucid.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from lucid.nn.parameter import Parameter
from lucid._C import Tensor

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (an empty placeholder)."""

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(lucid.empty((0,), dtype=dtype, device=device), requires_grad)

    def __repr__(self):
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), UninitializedParameter(self.requires_grad, self.device, self.dtype))

    def __reduce_ex__(self, proto):
        return (UninitializedParameter, (self.requires_grad, str(self.device), self.dtype))


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet (an empty placeholder)."""

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        Tensor.__init__(self, lucid.empty((0,), dtype=dtype, device=device))
        self.persistent = persistent

    def __repr__(self):
        return "<UninitializedBuffer>"

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), UninitializedBuffer(device=self.device, dtype=self.dtype,
                                                             persistent=self.persistent))

    def __reduce_ex__(self, proto):
        return (UninitializedBuffer, (False, str(self.device), self.dtype, self.persistent))


def is_lazy(param):
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))


class LazyModuleMixin:
    cls_to_become = None

    def has_uninitialized_params(self):
        return any(is_lazy(v) for v in list(self._parameters.values()) + list(self._buffers.values()))

    def _materialize(self, name, shape):
        """Replace the placeholder `name` by an empty tensor of `shape` (same dtype, device, requires_grad)."""
        if name in self._parameters:
            old = self._parameters[name]
            if is_lazy(old):
                self._parameters[name] = Parameter(lucid.empty(tuple(shape), dtype=old.dtype, device=old.device),
                                                   old.requires_grad)
        elif is_lazy(self._buffers.get(name)):
            old = self._buffers[name]
            self._buffers[name] = lucid.empty(tuple(shape), dtype=old.dtype, device=old.device)

    def _keeping_placeholders(self, target, run):
        """run(), then put placeholders back where this module had them (in `target`, with the
        dtypes and devices run() gave): Module's copies and conversions would make plain empty tensors."""
        lazy_params = {k: p.requires_grad for k, p in self._parameters.items() if is_lazy(p)}
        lazy_buffers = [k for k, b in self._buffers.items() if is_lazy(b)]
        out = run()
        target = out if target is None else target
        for k, requires_grad in lazy_params.items():
            p = target._parameters[k]
            target._parameters[k] = UninitializedParameter(requires_grad, p.device, p.dtype)
        for k in lazy_buffers:
            b = target._buffers[k]
            target._buffers[k] = UninitializedBuffer(device=b.device, dtype=b.dtype)
        return out

    def _apply(self, fn):
        return self._keeping_placeholders(self, lambda: super(LazyModuleMixin, self)._apply(fn))

    def __deepcopy__(self, memo):
        return self._keeping_placeholders(None, lambda: super(LazyModuleMixin, self).__deepcopy__(memo))

    def _become(self):
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def forward(self, *args, **kwargs):
        if self.has_uninitialized_params():
            with lucid.no_grad():
                self.initialize_parameters(*args, **kwargs)
        self._become()
        return self.forward(*args, **kwargs)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for name in list(self._parameters) + list(self._buffers):
            key = prefix + name
            if key in state_dict and is_lazy(getattr(self, name)):
                self._materialize(name, state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if not self.has_uninitialized_params():
            self._sizes_from_params()  # torch leaves in_features / num_features at 0 here; the shapes are known


class LazyLinear(LazyModuleMixin, Linear):
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, dtype=dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def _sizes_from_params(self):
        self.in_features = self.weight.shape[1]

    def initialize_parameters(self, input):
        self.in_features = input.shape[-1]
        self._materialize("weight", (self.out_features, self.in_features))
        if self.bias is not None:
            self._materialize("bias", (self.out_features,))
        self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _lazy_init(self, out_channels, bias, dtype):
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def _sizes_from_params(self):
        self.in_channels = self.weight.shape[0] if self._transposed else self.weight.shape[1] * self.groups

    def initialize_parameters(self, input, *args, **kwargs):
        n = self._n
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"{type(self).__name__}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) "
                             f"input, got {input.dim()}-D {list(input.shape)}")
        self.in_channels = input.shape[0] if input.dim() == n + 1 else input.shape[1]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self._materialize("weight", shape)
        if self.bias is not None:
            self._materialize("bias", (self.out_channels,))
        self.reset_parameters()


def _lazy_conv(base, n):
    class LazyConv(_LazyConvXdMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                          dtype=dtype)
            self._lazy_init(out_channels, bias, dtype)

    LazyConv.__name__ = LazyConv.__qualname__ = f"LazyConv{n}d"
    return LazyConv


def _lazy_conv_transpose(base, n):
    class LazyConvTranspose(_LazyConvXdMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                          padding_mode, dtype=dtype)
            self._lazy_init(out_channels, bias, dtype)

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = f"LazyConvTranspose{n}d"
    return LazyConvTranspose


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(b, i + 1) for i, b in enumerate((Conv1d, Conv2d, Conv3d)))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_conv_transpose(b, i + 1) for i, b in enumerate((ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)))


class _LazyNormMixin(LazyModuleMixin):
    def _lazy_init(self, affine, track_running_stats, dtype):
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = lucid.full((), 0, dtype=lucid.int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _sizes_from_params(self):
        for t in (self.weight, self.running_mean):
            if t is not None:
                self.num_features = t.shape[0]
                return

    def initialize_parameters(self, input):
        self.num_features = input.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            self._materialize(name, (self.num_features,))
        self.reset_parameters()


def _lazy_norm(base, name):
    class LazyNorm(_LazyNormMixin, base):
        cls_to_become = base

        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
            base.__init__(self, 0, eps, momentum, False, False, dtype=dtype)
            self.affine = affine
            self.track_running_stats = track_running_stats
            self._lazy_init(affine, track_running_stats, dtype)

    LazyNorm.__name__ = LazyNorm.__qualname__ = name
    return LazyNorm


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy_norm(b, f"LazyBatchNorm{i + 1}d") for i, b in enumerate((BatchNorm1d, BatchNorm2d, BatchNorm3d)))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_norm(b, f"LazyInstanceNorm{i + 1}d") for i, b in enumerate((InstanceNorm1d, InstanceNorm2d, InstanceNorm3d)))
