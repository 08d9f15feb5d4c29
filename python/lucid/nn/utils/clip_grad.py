"""clip_grad_norm_ / clip_grad_value_ with torch's formulas; the total norm stays a tensor (no host
read unless error_if_nonfinite), so a compiled step can trace it."""
import lucid

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, lucid.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(t, norm_type):
    if norm_type == float("inf"):
        return t.abs().max().to(lucid.float32) if not t.is_floating_point() else t.abs().max()
    if norm_type == float("-inf"):
        return t.abs().min()
    if norm_type == 2.0:
        return (t * t).sum().sqrt()
    if norm_type == 1.0:
        return t.abs().sum()
    if norm_type == 0:
        return (t != 0).sum().to(t.dtype)
    return t.abs().pow(norm_type).sum().pow(1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    if isinstance(tensors, lucid.Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return lucid.full((), 0.0)
    first = tensors[0].device  # grads on several devices: their norms meet on the first one, as torch's
    norms = [_vector_norm(g.detach(), norm_type).to(first) for g in tensors]
    total_norm = _vector_norm(lucid.stack(norms), norm_type)
    if error_if_nonfinite:
        v = float(total_norm.item())
        if v != v or v in (float("inf"), float("-inf")):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    grads = _grads(parameters)
    if not grads:
        return
    clip_coef = float(max_norm) / (total_norm + 1e-6)
    clip_coef_clamped = clip_coef.clamp(max=1.0)
    with lucid.no_grad():
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.device, g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients so their joint norm is at most max_norm; returns the (unclipped) total norm."""
    if isinstance(parameters, lucid.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient elementwise to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with lucid.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated name of clip_grad_norm_ (torch warns with a FutureWarning, and so does lucid)."""
    import warnings
    warnings.warn("`lucid.nn.utils.clip_grad_norm` is now deprecated in favor of `lucid.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
