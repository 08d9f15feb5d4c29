"""lucid.amp.GradScaler: torch.amp.GradScaler's dynamic loss scaling for float16 training, in eager mode.

`scale(loss)` multiplies the loss by the scale (2**16 at first) so small float16 gradients do not
flush to zero; `unscale_(optimizer)` divides the optimizer's gradients by it and records whether
any of them is inf/NaN; `step(optimizer)` unscales if that was not done, and skips
`optimizer.step()` when a gradient was not finite; `update()` backs the scale off after a skipped
step and grows it after `growth_interval` clean steps in a row. The API, the per-optimizer state
machine (OptState READY -> UNSCALED -> STEPPED, reset by `update`), the errors and the
state_dict keys are torch's.

The scale (float32) and the growth tracker (int32) are 0-d tensors on the loss's device, created
by the first `scale()`, as torch's. The two pieces of math, `_unscale_grads_` (torch's
`_amp_foreach_non_finite_check_and_unscale_`) and `_update_scale_` (torch's `_amp_update_scale_`),
are written as lucid ops on those device tensors with no host branch, so a compiled training step
can trace them (issue 16's `fused_step(..., grad_scaler=)`, not built yet). In eager mode the one
host read is in `step`, of found_inf, deciding whether to call `optimizer.step()`, as torch does.
"""
import warnings
from collections import abc, defaultdict
from enum import Enum

import lucid

__all__ = ["OptState", "GradScaler"]

_LOW_PRECISION = (lucid.float16, lucid.bfloat16)


def _mul_scalar_tensor(x, factor):
    """x * factor (a float32 0-d tensor) rounded once to x's dtype: a 16-bit x is multiplied in
    float32, as torch's kernels do in their opmath type (lucid's bfloat16 multiply by a 0-d
    float32 tensor rounds the factor to bfloat16 first: 7 * 0.3 gives 2.1094, torch 2.0938)."""
    if x.dtype in _LOW_PRECISION:
        return (x.float() * factor).to(x.dtype)
    return x * factor


def _unscale_grads_(grads, inv_scale, found_inf):
    """torch._amp_foreach_non_finite_check_and_unscale_: sets found_inf (a float32 0-d tensor) to
    1.0 when any element of `grads` is inf or NaN (it is left as it was otherwise), and multiplies
    every gradient by inv_scale in place. All tensors on one device; no host synchronisation."""
    if not grads:
        return
    all_finite = lucid.stack([lucid.isfinite(g).all() for g in grads]).all()
    found_inf.copy_(lucid.where(all_finite, found_inf, lucid.ones_like(found_inf)))
    for g in grads:
        if g.dtype in _LOW_PRECISION:
            g.copy_(_mul_scalar_tensor(g, inv_scale))
        else:
            g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """torch._amp_update_scale_, as selects instead of branches: after a non-finite step the scale
    is multiplied by backoff_factor and the tracker reset to 0; otherwise the tracker counts the
    step and, on reaching growth_interval, the scale is multiplied by growth_factor (unless that
    overflows float32) and the tracker reset. The products are taken in float64 and rounded to
    float32, as torch's float * double. Updates scale and growth_tracker in place."""
    found = found_inf != 0
    successful = growth_tracker + 1
    grow = lucid.logical_and(lucid.logical_not(found), successful == growth_interval)
    grown = (scale.double() * growth_factor).float()
    backed_off = (scale.double() * backoff_factor).float()
    kept_or_grown = lucid.where(lucid.logical_and(grow, lucid.isfinite(grown)), grown, scale)
    new_tracker = lucid.where(lucid.logical_or(found, grow), lucid.zeros_like(growth_tracker), successful)
    scale.copy_(lucid.where(found, backed_off, kept_or_grown))
    growth_tracker.copy_(new_tracker)


class _MultiDeviceReplicator:
    """Serves copies of a tensor to the devices asking for it, one copy per device (torch's)."""

    def __init__(self, master_tensor):
        self.master = master_tensor
        self._per_device_tensors = {}

    def get(self, device):
        retval = self._per_device_tensors.get(device)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    # A module-level factory (not a lambda) so a GradScaler pickles, as torch's.
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """torch.amp.GradScaler: scale(loss).backward(); step(optimizer); update() (see the module header)."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not lucid.cuda.is_available():
            warnings.warn("lucid.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # created by the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = lucid.full((), self._init_scale, dtype=lucid.float32, device=dev)
        self._growth_tracker = lucid.full((), self._init_growth_tracker, dtype=lucid.int32, device=dev)

    def scale(self, outputs):
        """Multiplies a tensor, or the tensors of nested lists/tuples (other iterables: a lazy map), by
        the scale; returns them unchanged when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, lucid.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return _mul_scalar_tensor(outputs, self._scale.to(device=outputs.device, non_blocking=True))

        stash = []  # the replicator of the scale, made at the first tensor met

        def apply_scale(val):
            if isinstance(val, lucid.Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return _mul_scalar_tensor(val, stash[0].get(val.device))
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscales the optimizer's gradients grouped by device; returns found_inf per device."""
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        per_device_grads = defaultdict(list)
        with lucid.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, lucid.Tensor):
                        raise AssertionError(f"expected param to be lucid.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == lucid.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device_grads[param.grad.device].append(param.grad)
            for device, grads in per_device_grads.items():
                _unscale_grads_(grads, per_device_inv_scale.get(device), per_device_found_inf.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale in place and records whether any is inf/NaN;
        at most once per optimizer between update()s, and not after step()."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in float64, as torch (float32 division can round differently).
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = lucid.full((), 0.0, dtype=lucid.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """unscale_(optimizer) unless done this iteration, then optimizer.step(*args, **kwargs) unless
        a gradient was inf/NaN; returns optimizer.step's result, or None when the step was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Backs the scale off if any optimizer's step was skipped this iteration, else counts toward
        growth; or sets it to new_scale (a float or a 1-element tensor). Starts the next iteration."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element lucid.Tensor of float32 "
                          "with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for found_inf in found_infs[1:]:
                found_inf_combined = found_inf_combined + found_inf
            _update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (a host read); 1.0 when disabled."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """torch's five entries (scale, growth_factor, backoff_factor, growth_interval, _growth_tracker)
        as Python numbers; {} when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # The unpickled scaler makes its tensors again at its first scale(), from these numbers.
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
