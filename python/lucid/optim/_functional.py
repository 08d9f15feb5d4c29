"""Small in-place building blocks shared by the optimizers. They call the elementwise family's
native in-place ops (add_(alpha=), addcmul_, addcdiv_, lerp_, copy_), which evaluate torch's
formulas (addcmul: self + value*t1*t2, addcdiv: self + value*t1/t2, lerp's two-branch form);
`value`/`alpha` may be a 0-d tensor so step-dependent factors stay on the device; while a compiled
step is being traced, addcmul_/addcdiv_ with such a factor run as the same products in the same
order as the fused kernels, so the factor is never read on the host. Also the test of whether a
step takes the fused multi-tensor path (fused_enabled, fusable)."""
import lucid


def zeros_like(p):
    return lucid.zeros_like(p)


def copy_(dst, src):
    return dst.copy_(src)


def add_(x, y, alpha=1.0):
    """x += alpha * y."""
    if not isinstance(alpha, lucid.Tensor) and alpha == 1:
        return x.add_(y)
    return x.add_(y, alpha=alpha)


def addcmul_(x, t1, t2, value=1.0):
    if isinstance(value, lucid.Tensor) and lucid._C._trace_active():
        # While compiling, a tensor factor stays tensor math (never read on the host), in the order
        # of torch's kernel; eagerly, the fused kernel is cheaper (one pass instead of three).
        return x.add_(value * t1 * t2)
    return x.addcmul_(t1, t2, value=value)


def addcdiv_(x, t1, t2, value=1.0):
    if isinstance(value, lucid.Tensor) and lucid._C._trace_active():
        return x.add_(value * t1 / t2)
    return x.addcdiv_(t1, t2, value=value)


def lerp_(x, end, weight):
    return x.lerp_(end, weight)


def as_scalar_tensor(step_t):
    """The float64 view of a 0-d step counter, for bias-correction math done on the device."""
    return step_t.to(lucid.float64)


def fused_enabled(group, params):
    """Whether a step of this group takes the fused multi-tensor path (one kernel call per device
    and dtype, lucid._C._fused_adam_ / _fused_sgd_): when `fused` or `foreach` asks for it, and by
    default for CUDA parameters (as torch's foreach default on CUDA); never while a compiled step
    is being traced (the tracer records the op-by-op path, whose in-place writes it sees), for
    differentiable=True, or with a tensor learning rate."""
    if lucid._C._trace_active() or group.get("differentiable", False):
        return False
    scalars = [group.get(k, 0) for k in ("lr", "eps", "weight_decay", "momentum", "dampening")]
    if any(isinstance(v, lucid.Tensor) for v in scalars + list(group.get("betas", ()))):
        return False
    flag = group.get("fused")
    if flag is None:
        flag = group.get("foreach")
    if flag is not None:
        return bool(flag)
    return any(p.device.type == "cuda" for p in params)


def fusable(tensors):
    """Whether a parameter's tensors (param first: grad, states) can join a fused step: one
    floating dtype, shape and device, all contiguous."""
    p = tensors[0]
    if not p.is_floating_point():
        return False
    return all(t.dtype == p.dtype and t.shape == p.shape and t.device == p.device and t.is_contiguous()
               for t in tensors)
