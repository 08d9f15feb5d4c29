"""BatchNorm1d/2d/3d, SyncBatchNorm, LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and
CrossMapLRN2d; torch's buffers (running_mean, running_var, num_batches_tracked) and momentum rules
(momentum=None gives a cumulative moving average with factor 1/num_batches_tracked).

SyncBatchNorm: lucid runs in one process, so there is no process group to synchronise with and
SyncBatchNorm is BatchNorm over any (N, C, *) input (what torch's computes with a world size of 1)."""
import numbers

import numpy as np

import lucid
from lucid.nn import functional as F
from lucid.nn import init
from lucid.nn.modules.module import Module
from lucid.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm",
           "LocalResponseNorm", "CrossMapLRN2d"]


def _full(shape, value, dtype):
    return lucid.full(tuple(shape), value, dtype=dtype)


def _init_affine(module, shape, affine, bias, dtype):
    """weight = ones(shape) and bias = zeros(shape) as Parameters (or registered None), as every
    normalisation layer creates them."""
    module.register_parameter("weight", Parameter(_full(shape, 1.0, dtype)) if affine else None)
    module.register_parameter("bias", Parameter(_full(shape, 0.0, dtype)) if affine and bias else None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _BatchNorm(Module):
    _version = 2
    _expected_dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _init_affine(self, (num_features,), affine, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _full((num_features,), 0.0, dtype))
            self.register_buffer("running_var", _full((num_features,), 1.0, dtype))
            self.register_buffer("num_batches_tracked", lucid.full((), 0, dtype=lucid.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        if input.dim() not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                             f"(got {input.dim()}D input)")

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}").format(
                    **self.__dict__, use_bias=self.bias is not None)

    def forward(self, input):
        self._check_input_dim(input)
        exponential_average_factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with lucid.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                if lucid._C._trace_active():
                    return self._cumulative_average_traced(input)
                exponential_average_factor = 1.0 / float(self.num_batches_tracked.item())
            else:
                exponential_average_factor = self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training,
                            exponential_average_factor, self.eps)

    def _cumulative_average_traced(self, input):
        """momentum=None in train mode while lucid.compile traces: the cumulative-average factor
        1/num_batches_tracked stays tensor math (eagerly it is read on the host), so the step
        compiles; the running statistics get the same update as the batch_norm kernel's."""
        dims = [0] + list(range(2, input.dim()))
        n = input.numel() // input.shape[1]
        out = F.batch_norm(input, None, None, self.weight, self.bias, True, 0.0, self.eps)
        with lucid.no_grad():
            x = input.detach()
            mean = x.mean(dim=dims)
            var = x.var(dim=dims, unbiased=False) * (n / max(n - 1, 1))
            f = (1.0 / self.num_batches_tracked.double()).to(self.running_mean.dtype)
            self.running_mean.mul_(1 - f).add_(mean.to(self.running_mean.dtype) * f)
            self.running_var.mul_(1 - f).add_(var.to(self.running_var.dtype) * f)
        return out

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict and self.num_batches_tracked is not None:
            # old checkpoints (torch < 0.4.1) have no num_batches_tracked: keep 0 like torch
            state_dict[key] = lucid.full((), 0, dtype=lucid.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class BatchNorm1d(_BatchNorm):
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    _expected_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replaces every BatchNorm*d in `module` by a SyncBatchNorm holding the same parameters and
        buffers (torch's helper)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _init_affine(self, self.normalized_shape, elementwise_affine, bias, dtype)

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _init_affine(self, (num_channels,), affine, bias, dtype)

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_full(self.normalized_shape, 1.0, dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(Module):
    """torch's legacy cross-channel LRN of 4-D input. Its channel window is torch's exactly: the
    running sum that torch updates channel by channel, which never drops channel 0 (so it is not
    local_response_norm's centred window), written here as differences of a prefix sum."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        c = input.shape[1]
        pre_pad = int((self.size - 1) / 2 + 1)
        ch = np.arange(c)
        hi = np.minimum(ch + pre_pad - 1, c - 1)
        lo = np.where(ch > pre_pad, ch - pre_pad, 0)
        prefix = (input * input).cumsum(1)
        first = prefix[:, :1]
        scale = (prefix.index_select(1, lucid.tensor(hi.astype(np.int64), device=input.device))
                 - prefix.index_select(1, lucid.tensor(lo.astype(np.int64), device=input.device)) + first)
        return input * (scale * (self.alpha / self.size) + self.k) ** (-self.beta)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
