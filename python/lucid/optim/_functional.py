"""Small in-place building blocks shared by the optimizers. They call the elementwise family's
native in-place ops (add_(alpha=), addcmul_, addcdiv_, lerp_, copy_), which evaluate torch's
formulas (addcmul: self + value*t1*t2, addcdiv: self + value*t1/t2, lerp's two-branch form);
`value`/`alpha` may be a 0-d tensor so step-dependent factors stay on the device; while a compiled
step is being traced, addcmul_/addcdiv_ with such a factor run as the same products in the same
order as the fused kernels, so the factor is never read on the host."""
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
